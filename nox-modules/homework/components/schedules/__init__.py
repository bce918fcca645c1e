"""Schedules ("bedtime" windows) and one-shot pauses per device or owner; see component.py."""
from .component import Schedules as COMPONENT  # noqa: F401
