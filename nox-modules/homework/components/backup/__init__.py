"""Backup and restore of the router's settings (issue 18); see component.py."""
from .component import Backup as COMPONENT  # noqa: F401
