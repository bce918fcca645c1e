"""Shared by every test directory: under CI a skip fails (see require_all.py)."""
from require_all import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401  (pytest hooks)
