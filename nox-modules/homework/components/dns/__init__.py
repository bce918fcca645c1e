"""DNS interception with per-device domain rules (seed §4.4.2)."""
from .component import DnsComponent

COMPONENT = DnsComponent
