"""Priorities and shaping per device and per application (issue 13); see component.py."""
from .component import Qos as COMPONENT  # noqa: F401
