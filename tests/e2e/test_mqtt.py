"""End to end: Debian's mosquitto in the router namespace with a password file
and an ACL; the real controller publishes Home Assistant discovery and each device's
presence and state (checked with mosquitto_sub) and passes on the household's
notifications in words; a permit sent over MQTT works only with the admin role's
credentials."""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from homelab import Home
from homelab.routing import wait_until

PORT = 18830
USERS = {"homework": "controller-pw", "admin": "admin-pw", "viewer": "viewer-pw"}
ACL = """
user homework
topic readwrite homework/#
topic readwrite homeassistant/#
user admin
topic readwrite homework/#
topic read homeassistant/#
user viewer
topic read homework/#
topic read homeassistant/#
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    d = tmp_path_factory.mktemp("mqtt")
    pw = d / "passwd"
    for i, (user, password) in enumerate(USERS.items()):
        subprocess.run(["mosquitto_passwd", "-b"] + (["-c"] if i == 0 else []) + [str(pw), user, password],
                       check=True, capture_output=True)
    (d / "acl").write_text(ACL)
    (d / "controller-pw").write_text(USERS["homework"] + "\n")
    (d / "mosquitto.conf").write_text(
        f"user root\nlistener {PORT} 127.0.0.1\nallow_anonymous false\npassword_file {pw}\n"
        f"acl_file {d / 'acl'}\npersistence false\nlog_dest file {d / 'mosquitto.log'}\n")
    config = {"controller": {"components": ["dhcp", "routing", "notify", "mqtt"]},
              "mqtt": {"host": "127.0.0.1", "port": PORT, "username": "homework",
                       "password_file": str(d / "controller-pw"), "accept_commands": True}}
    with Home(config=config) as h:
        # started after the controller: its MQTT link keeps retrying until the broker is up
        h.router_popen(["mosquitto", "-c", str(d / "mosquitto.conf")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: h.router(["ss", "-Hltn", f"sport = :{PORT}"]).stdout.strip(), 10, "mosquitto listening")
        h.mqtt_dir = d
        yield h


def subscribe(home, name):
    out = home.mqtt_dir / f"{name}.txt"
    home.router_popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(PORT), "-u", "viewer", "-P", USERS["viewer"],
                       "-v", "-t", "homework/#", "-t", "homeassistant/#"],
                      stdout=open(out, "ab"), stderr=subprocess.STDOUT)
    return out


def messages(path) -> dict[str, str]:
    """The last payload per topic."""
    last = {}
    for line in path.read_text(errors="replace").splitlines():
        topic, _, payload = line.partition(" ")
        last[topic] = payload
    return last


def publish(home, user, topic, payload):
    args = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(PORT), "-q", "1", "-t", topic, "-m", payload]
    if user:
        args += ["-u", user, "-P", USERS[user]]
    return home.router(args, check=False)


def state(home, mac):
    return json.loads(home.homework("--json", "status", mac).stdout)["state"]


def test_discovery_presence_state_and_admin_only_commands(home):
    sub = subscribe(home, "all")
    dev = home.add_device()
    dev.start_dhcp("udhcpc")
    dev.wait_for_ipv4(20)
    ident = dev.mac.replace(":", "")
    disc_topic = f"homeassistant/device_tracker/homework_{ident}/config"
    attrs_topic = f"homework/device/{ident}/attributes"
    wait_until(lambda: disc_topic in messages(sub) and attrs_topic in messages(sub), 20, "discovery and state")
    got = messages(sub)
    disc = json.loads(got[disc_topic])
    assert disc["state_topic"] == f"homework/device/{ident}/presence"
    assert disc["device"]["connections"] == [["mac", dev.mac]]
    assert f"homeassistant/sensor/homework_{ident}_rx/config" in got
    assert got[f"homework/device/{ident}/presence"] == "home"
    assert json.loads(got[attrs_topic])["state"] == "pending"
    assert got["homework/status"] == "online"
    # the notification of a device asking, as the household reads it: whole sentences with
    # the device's name and no MAC; the machine fields beside the words
    wait_until(lambda: "homework/notification" in messages(sub), 20, "the device-joining notification")
    note = json.loads(messages(sub)["homework/notification"])
    assert note["kind"] == "device-joining" and note["mac"] == dev.mac, note
    assert note["title"] == f"{dev.name[0].upper()}{dev.name[1:]} asks to join the home network.", note
    assert note["detail"] == "Let it in or turn it away on the Guest Board." and dev.mac not in note["title"], note

    set_topic = f"homework/device/{ident}/set"
    assert publish(home, None, set_topic, "permit").returncode != 0       # no credentials: refused
    assert publish(home, "viewer", set_topic, "permit").returncode == 0   # accepted by the broker, dropped by the ACL
    time.sleep(2)
    assert state(home, dev.mac) == "pending"
    assert publish(home, "admin", set_topic, "permit").returncode == 0
    wait_until(lambda: state(home, dev.mac) == "permitted", 10, "permit over MQTT")
    wait_until(lambda: json.loads(messages(sub).get(attrs_topic) or "{}").get("state") == "permitted", 10,
               "the new state published")
