"""WAN watch: notices when the router's uplink goes down and comes back and
publishes `alert` events of kind `wan-down` / `wan-up` (the notify component turns them
into notifications; hwdb and the board's stream see them like every alert)."""
from .component import WanWatch

COMPONENT = WanWatch
