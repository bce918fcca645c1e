"""Routing and access control: which device may send what, where it goes, and per-flow
accounting (see component.py)."""
from .component import Routing as COMPONENT  # noqa: F401
