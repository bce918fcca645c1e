"""Schedules ("bedtime" windows) and one-shot pauses per device or owner (issue 17); see component.py."""
from .component import Schedules as COMPONENT  # noqa: F401
