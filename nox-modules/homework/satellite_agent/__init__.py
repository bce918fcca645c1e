"""The agent a satellite runs beside its Open vSwitch: agent.py."""
