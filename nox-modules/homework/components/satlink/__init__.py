from .component import SatelliteAgents as COMPONENT  # noqa: F401
