"""The radio monitor's manifest (homework/manifest.py): nothing stored; the link,
roaming and nearby events it publishes, and its counters."""
from __future__ import annotations

from ... import events
from ...interfaces import RadioStations
from ...manifest import Manifest

MANIFEST = Manifest(
    component="radio",
    routes=("nearby",),
    offers=(RadioStations,),
    publishes=(events.Link, events.StationAt, events.Nearby),
    hears=(events.RadioReport,),
    counters={
        "radio.stations_seen": "stations read from station dumps",
        "radio.dump_errors": "station dumps that could not be read",
        "radio.info_errors": "radio descriptions (iw info) that could not be read",
        "radio.malformed_lines": "lines of station dumps that could not be read",
        "radio.roams": "stations heard on another radio than before",
        "radio.station_connected_events": "hostapd said a station joined: its radio was read at once",
        "radio.station_disconnected_events": "hostapd said a station left: its radio was read at once",
        "radio.probe_requests": "probe requests heard from devices nearby",
        "radio.nearby_over_cap": "nearby devices not kept because the list was full",
        "radio.nearby_errors": "failures of the nearby listener",
        "radio.nearby_malformed": "lines from hostapd's monitor that could not be read",
    },
)
