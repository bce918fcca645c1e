"""Backup and restore of the router's settings; see component.py."""
from .component import Backup as COMPONENT  # noqa: F401
