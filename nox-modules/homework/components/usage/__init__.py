"""Durable usage per device, owner and device type (issue 14); see component.py."""
from .component import Usage as COMPONENT  # noqa: F401
