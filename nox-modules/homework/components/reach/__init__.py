"""Reaching in from the internet on the household's terms: port forwards with IPv6 pinholes,
and UPnP IGD / NAT-PMP / PCP (miniupnpd) for the devices allowed to open ports; see component.py."""
from .component import Reach as COMPONENT  # noqa: F401
