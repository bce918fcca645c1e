"""Prometheus metrics: `GET /ws.v1/metrics` in the text exposition format 0.0.4.

See collect.py for what is exported and the bound on per-device series."""
from .component import Metrics

COMPONENT = Metrics
