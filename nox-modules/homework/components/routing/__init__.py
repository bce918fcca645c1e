from .gateway import Routing as COMPONENT  # noqa: F401
