"""Priorities and shaping per device and per application; see component.py."""
from .component import Qos as COMPONENT  # noqa: F401
