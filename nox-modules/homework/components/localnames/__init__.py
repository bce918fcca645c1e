"""Local names: every permitted device answers as <label>.home.arpa (and under
the other [dns] local_domains) and by PTR for its address, through dnsmasq's hostsdir."""
from .component import LocalNamesComponent

COMPONENT = LocalNamesComponent
