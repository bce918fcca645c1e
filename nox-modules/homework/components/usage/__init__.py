"""Durable usage per device, owner and device type; see component.py."""
from .component import Usage as COMPONENT  # noqa: F401
