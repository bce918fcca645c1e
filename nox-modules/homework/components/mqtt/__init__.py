"""MQTT and Home Assistant discovery: each device's presence, state, name/owner
and traffic on the household's broker, discovery messages so Home Assistant shows every
device without configuration, and permit/deny commands from the broker."""
from .component import Mqtt

COMPONENT = Mqtt
