from .server import DhcpServer as COMPONENT  # noqa: F401
