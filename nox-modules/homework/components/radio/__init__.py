from .monitor import RadioMonitor as COMPONENT  # noqa: F401
