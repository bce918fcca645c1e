"""The agent a satellite runs beside its Open vSwitch (issue 15): agent.py."""
