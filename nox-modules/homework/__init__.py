"""Homework router controller: NOX-style components on os-ken (OpenFlow 1.3).

Protocol logic lives in plain modules that never import os-ken; `homework.adapter`
is the only place that talks to the framework.
"""
__version__ = "0.1.0"
