"""EAPOL (802.1X) forwarding and blacklisting (seed §4.4.2-4.4.3)."""
from .component import Eapol

COMPONENT = Eapol
