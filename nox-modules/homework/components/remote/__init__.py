"""Remote access over WireGuard: a household device away from home, a device like any other
(its own /30 and /64, pending until let in, the same rules); see component.py."""
from .component import Remote as COMPONENT  # noqa: F401
