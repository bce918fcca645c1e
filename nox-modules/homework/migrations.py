"""Numbered migrations of the controller's state database (state.db).

The data partition outlives the system partitions (image/upgrade.sh keeps it), so a
new release must read an old state.db and an old release must never half-read a new
one. `PRAGMA user_version` says which of STEPS a database has had; `migrate` applies
the missing ones in order, each in its own transaction with the version bump, and
refuses a database from a newer release with a clear message.

Every table of every component is created here, so the schema has one history; the
component that owns a table says so in its manifest (manifest.py), with the steps that
make or change it and what a backup does with it.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from collections.abc import Callable


class StateVersionError(RuntimeError):
    """state.db was written by a newer release than this controller."""


@dataclass(frozen=True)
class Step:
    number: int
    what: str
    sql: str = ""
    run: Callable[[sqlite3.Connection], None] | None = None


def _lease_relay_column(db: sqlite3.Connection) -> None:
    # Databases from before the numbering: the first ones had no relay column.
    columns = {row[1] for row in db.execute("PRAGMA table_info(leases)")}
    if "relay" not in columns:
        db.execute("ALTER TABLE leases ADD COLUMN relay TEXT NOT NULL DEFAULT ''")


STEPS: tuple[Step, ...] = (
    Step(1, "the tables of the first releases (before numbered steps)", sql="""
CREATE TABLE IF NOT EXISTS devices (
    mac TEXT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('pending','permitted','denied','blacklisted')),
    hostname TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL DEFAULT '',
    type TEXT NOT NULL DEFAULT '',
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    mac TEXT PRIMARY KEY,
    block INTEGER NOT NULL UNIQUE,      -- index of the /30 inside the pool
    expires REAL NOT NULL,              -- epoch seconds; 0 = offered only / released
    port INTEGER NOT NULL DEFAULT 0,    -- OpenFlow port the lease is bound to
    hostname TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS api_admin (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    password_hash TEXT NOT NULL,
    changed REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS api_sessions (
    id_hash TEXT PRIMARY KEY,          -- sha256 of the cookie value
    csrf TEXT NOT NULL,                -- sent back in X-CSRF-Token by the Guest Board
    role TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL NOT NULL,
    last_used REAL NOT NULL,
    client TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS api_tokens (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'read-only')),
    token_hash TEXT NOT NULL,
    created REAL NOT NULL,
    last_used REAL NOT NULL DEFAULT 0,
    revoked REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS dns_rules (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,                 -- a device MAC, or '*' for the whole household
    domain TEXT NOT NULL,                -- normalized; covers its subdomains
    action TEXT NOT NULL CHECK (action IN ('allow','deny')),
    schedule TEXT NOT NULL DEFAULT '',   -- reserved for time windows; '' = always
    created REAL NOT NULL,
    UNIQUE (owner, domain)
);
CREATE TABLE IF NOT EXISTS dns_modes (
    mac TEXT PRIMARY KEY,
    mode TEXT NOT NULL CHECK (mode IN ('denylist','allowlist'))
);
CREATE TABLE IF NOT EXISTS dns_learned (
    name TEXT NOT NULL,
    addr TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (name, addr)
);
"""),
    Step(2, "leases behind a DHCP relay: leases.relay (giaddr; '' = on our own port)",
         run=_lease_relay_column),
    Step(3, "the DECLINE quarantine survives restarts; a probe row for write health", sql="""
CREATE TABLE IF NOT EXISTS quarantine (
    block INTEGER PRIMARY KEY,          -- a /30 a client DECLINEd (address in use on the LAN)
    until REAL NOT NULL                 -- epoch seconds; not handed out before then
);
CREATE TABLE IF NOT EXISTS storage_probe (id INTEGER PRIMARY KEY CHECK (id = 1), at REAL NOT NULL);
"""),
    Step(4, "durable usage (bytes per device per local hour), the household cap, usage limits", sql="""
CREATE TABLE IF NOT EXISTS usage_hours (
    mac TEXT NOT NULL,
    hour INTEGER NOT NULL,              -- epoch seconds at which the local hour began
    up INTEGER NOT NULL DEFAULT 0,      -- bytes the device sent
    down INTEGER NOT NULL DEFAULT 0,    -- bytes it received
    PRIMARY KEY (mac, hour)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_hours_by_hour ON usage_hours (hour);
CREATE TABLE IF NOT EXISTS usage_cap (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    cap INTEGER NOT NULL,               -- the plan's bytes per billing period; 0 = no cap
    billing_day INTEGER NOT NULL,       -- 1..31; past a month's end = its last day
    alerted_period INTEGER NOT NULL DEFAULT 0,  -- start of the period the alerts below were for
    alerted INTEGER NOT NULL DEFAULT 0  -- highest alert sent in it: 0, 80 or 100 (percent)
);
CREATE TABLE IF NOT EXISTS usage_limits (
    target TEXT PRIMARY KEY,            -- a device's MAC, or "owner:NAME"
    period TEXT NOT NULL CHECK (period IN ('day', 'month')),
    allowance INTEGER NOT NULL,         -- bytes per period
    action TEXT NOT NULL CHECK (action IN ('notify', 'block')),
    reached INTEGER NOT NULL DEFAULT 0, -- start of the period in which it was last reached
    lifted INTEGER NOT NULL DEFAULT 0   -- start of the period in which a household member lifted it
);
"""),
    Step(5, "notifications (read/unread), webhooks and their delivery log", sql="""
CREATE TABLE IF NOT EXISTS notifications (
    id INTEGER PRIMARY KEY,             -- assigned by the notify component, increasing
    at REAL NOT NULL,
    kind TEXT NOT NULL,                 -- device-joining, device-blacklisted, alert-KIND, test
    mac TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    read INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS webhooks (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,               -- HMAC key: needed to sign, so kept; never shown after creation
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id INTEGER PRIMARY KEY,
    webhook TEXT NOT NULL,
    notification INTEGER NOT NULL,
    at REAL NOT NULL,
    attempt INTEGER NOT NULL,           -- 1 = first try
    status TEXT NOT NULL,               -- the HTTP status, or "error: ..."
    ok INTEGER NOT NULL
);
"""),
    Step(6, "usage limits may slow a device down (action slow, usage_limits.rate in kbit/s)", sql="""
CREATE TABLE usage_limits_6 (
    target TEXT PRIMARY KEY,            -- a device's MAC, or "owner:NAME"
    period TEXT NOT NULL CHECK (period IN ('day', 'month')),
    allowance INTEGER NOT NULL,         -- bytes per period
    action TEXT NOT NULL CHECK (action IN ('notify', 'slow', 'block')),
    reached INTEGER NOT NULL DEFAULT 0, -- start of the period in which it was last reached
    lifted INTEGER NOT NULL DEFAULT 0,  -- start of the period in which a household member lifted it
    rate INTEGER NOT NULL DEFAULT 0     -- slow: kbit/s left to the device once the allowance is used up
);
INSERT INTO usage_limits_6 (target, period, allowance, action, reached, lifted)
    SELECT target, period, allowance, action, reached, lifted FROM usage_limits;
DROP TABLE usage_limits;
ALTER TABLE usage_limits_6 RENAME TO usage_limits;
"""),
    Step(7, "blocklist subscriptions (names in files under the state dir) and DNS options", sql="""
CREATE TABLE blocklists (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '*',    -- '*' = the household, otherwise a devices.owner name
    enabled INTEGER NOT NULL DEFAULT 1,
    added REAL NOT NULL,
    fetched REAL,                       -- last successful fetch (the names in force are from then)
    checked REAL,                       -- last attempt, successful or not
    rules INTEGER NOT NULL DEFAULT 0,   -- blocked names
    exceptions INTEGER NOT NULL DEFAULT 0,  -- @@||name^ exceptions kept
    skipped INTEGER NOT NULL DEFAULT 0, -- lines a resolver cannot enforce (cosmetic, URL rules)
    error TEXT NOT NULL DEFAULT '',     -- why the last attempt failed; '' = it worked
    UNIQUE (url, owner)
);
CREATE TABLE dns_options (
    key TEXT PRIMARY KEY,               -- e.g. safe_search; overrides the config file's value
    value TEXT NOT NULL
);
"""),
    Step(8, "schedules (bedtime windows per device or owner) and one-shot pauses", sql="""
CREATE TABLE IF NOT EXISTS schedules (
    id INTEGER PRIMARY KEY AUTOINCREMENT,   -- never reused: a stale id removes nothing
    target TEXT NOT NULL,               -- a device's MAC, or "owner:NAME"
    days TEXT NOT NULL,                 -- weekdays it starts on, Monday = 0: "0,1,2,3,4"
    start_min INTEGER NOT NULL,         -- local minute of the day it opens
    end_min INTEGER NOT NULL,           -- local minute it closes; <= start_min: the next day
    action TEXT NOT NULL CHECK (action IN ('pause', 'dns-strict')),
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS pauses (
    mac TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('pause', 'resume')),   -- cut now, or open through its windows
    since REAL NOT NULL,                -- epoch seconds: it holds while since <= now < until
    until REAL NOT NULL
);
"""),
    Step(9, "router settings changed from the Guest Board (e.g. the time zone)", sql="""
CREATE TABLE IF NOT EXISTS settings (
    key TEXT PRIMARY KEY,               -- e.g. timezone; overrides the config file's value
    value TEXT NOT NULL
);
"""),
    Step(10, "priorities per device and per application (the link rates are in settings)", sql="""
CREATE TABLE IF NOT EXISTS qos_devices (
    mac TEXT PRIMARY KEY,
    class TEXT NOT NULL CHECK (class IN ('high', 'medium')),   -- default: no row
    window TEXT NOT NULL DEFAULT ''     -- "mon-fri 09:00-17:00": only then; '' = always
);
CREATE TABLE IF NOT EXISTS qos_apps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,   -- the connections' ct mark: never reused
    name TEXT NOT NULL UNIQUE,
    class TEXT NOT NULL CHECK (class IN ('high', 'medium', 'default')),
    ports TEXT NOT NULL DEFAULT '',     -- "udp/3478-3481,tcp/443"
    domains TEXT NOT NULL DEFAULT '',   -- "zoom.us,zoom.com"
    window TEXT NOT NULL DEFAULT ''
);
"""),
    Step(11, "satellite switches asking to pair, and the household's decisions", sql="""
CREATE TABLE IF NOT EXISTS satellites (
    dpid TEXT PRIMARY KEY,              -- 16 hex digits
    state TEXT NOT NULL CHECK (state IN ('pending', 'permitted', 'denied')),
    code TEXT NOT NULL,                 -- the first digits of its key's fingerprint, shown on both ends
    csr TEXT NOT NULL,                  -- its certificate request (PEM); its key never leaves it
    ticket_hash TEXT NOT NULL,          -- SHA-256 of the secret it fetches its certificate with
    serial TEXT NOT NULL DEFAULT '',    -- hex serial of the one certificate that admits it now
    certificate TEXT NOT NULL DEFAULT '',
    requested REAL NOT NULL,
    decided REAL NOT NULL DEFAULT 0
);
"""),
    Step(12, "satellites found on a LAN port (no [satellites] switches line): where each asked "
             "from, and the cable it has once permitted", sql="""
ALTER TABLE satellites ADD COLUMN router_port TEXT NOT NULL DEFAULT '';  -- '': a listed satellite
ALTER TABLE satellites ADD COLUMN uplink TEXT NOT NULL DEFAULT '';       -- the port it names as its uplink
ALTER TABLE satellites ADD COLUMN origin_mac TEXT NOT NULL DEFAULT '';   -- its own stack's MAC, as a device
ALTER TABLE satellites ADD COLUMN cable INTEGER NOT NULL DEFAULT 0;      -- its index while the port is its cable
"""),
    Step(13, "the first hour: whether the household chose the admin password (the router's own first one "
             "keeps the set-up offer open)", sql="""
ALTER TABLE api_admin ADD COLUMN chosen INTEGER NOT NULL DEFAULT 1;  -- 0: the router's initial password
"""),
    Step(14, "who asked to pair a satellite (homework/callers.py's key: its device, its own cable, an "
             "address), so nobody else can replace a waiting request", sql="""
ALTER TABLE satellites ADD COLUMN requester TEXT NOT NULL DEFAULT '';   -- '': root on the router, or before step 14
"""),
    Step(15, "webhook deliveries waiting for their next attempt survive a restart; webhooks and blocklist "
             "subscriptions may be allowed local addresses (netguard.py)", sql="""
CREATE TABLE IF NOT EXISTS webhook_queue (
    id INTEGER PRIMARY KEY,
    webhook TEXT NOT NULL,
    notification INTEGER NOT NULL,
    kind TEXT NOT NULL,
    body BLOB NOT NULL,                 -- the signed JSON, exactly as first sent
    attempt INTEGER NOT NULL,           -- the next attempt's number (1: not tried yet)
    due REAL NOT NULL                   -- epoch seconds
);
ALTER TABLE webhooks ADD COLUMN allow_local INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blocklists ADD COLUMN allow_local INTEGER NOT NULL DEFAULT 0;
"""),
    Step(16, "reaching in: port forwards of a device, and the devices that may open ports themselves "
             "(UPnP IGD, NAT-PMP, PCP)", sql="""
CREATE TABLE IF NOT EXISTS port_forwards (
    id INTEGER PRIMARY KEY AUTOINCREMENT,   -- never reused: a stale id removes nothing
    mac TEXT NOT NULL,                  -- the device it belongs to (by identity, not address)
    protocol TEXT NOT NULL CHECK (protocol IN ('tcp', 'udp', 'both')),
    first INTEGER NOT NULL CHECK (first BETWEEN 1 AND 65535),   -- external ports first..last
    last INTEGER NOT NULL CHECK (last BETWEEN first AND 65535),
    to_port INTEGER NOT NULL CHECK (to_port BETWEEN 1 AND 65535),  -- the device's port for `first`
    description TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS open_ports_allowed (
    mac TEXT PRIMARY KEY,               -- the household ticked "may open ports" on its panel
    since REAL NOT NULL
);
"""),
    Step(17, "remote access over WireGuard: the devices away from home and the router's own key", sql="""
CREATE TABLE IF NOT EXISTS remote_peers (
    mac TEXT PRIMARY KEY,               -- the device it is (a locally administered MAC the router made)
    idx INTEGER NOT NULL UNIQUE,        -- its place in the away namespace (interface rmt<idx>)
    name TEXT NOT NULL,
    private_key TEXT NOT NULL,          -- the client's, so its configuration can be shown again
    public_key TEXT NOT NULL,
    preshared_key TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS remote_router (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    private_key TEXT NOT NULL           -- the router's WireGuard key (its public one is in every client's file)
);
"""),
    Step(18, "burst alerts: tell the household when a device moves more than an amount within some minutes",
         sql="""
CREATE TABLE IF NOT EXISTS usage_bursts (
    mac TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL,             -- more than this many bytes ...
    minutes INTEGER NOT NULL CHECK (minutes BETWEEN 1 AND 60)   -- ... within this many minutes
);
"""),
    Step(19, "a pre-approval (a MAC permitted before it was ever seen) is bound to the port it is first seen "
             "on", sql="""
CREATE TABLE IF NOT EXISTS preapprovals (
    mac TEXT PRIMARY KEY,
    port TEXT NOT NULL DEFAULT ''       -- the port it was first seen on; '': not seen yet
);
"""),
    Step(20, "panels: a session of the panel role (the router's own screen, a wall tablet) says which "
             "it is, its name and the device it was paired from", sql="""
ALTER TABLE api_sessions ADD COLUMN kind TEXT NOT NULL DEFAULT '';    -- '' (a login), 'screen' or 'tablet'
ALTER TABLE api_sessions ADD COLUMN label TEXT NOT NULL DEFAULT '';   -- the panel's name on the settings page
ALTER TABLE api_sessions ADD COLUMN mac TEXT NOT NULL DEFAULT '';     -- the tablet's device ('' for the screen)
"""),
    Step(21, "what each device says about itself (its DHCP fingerprint, announcements) and the household's "
             "corrections of what the router made of it", sql="""
CREATE TABLE IF NOT EXISTS device_evidence (
    mac TEXT PRIMARY KEY,
    evidence TEXT NOT NULL,             -- JSON: evidence field -> text (components/identify)
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS device_identity (
    mac TEXT PRIMARY KEY,
    type TEXT NOT NULL DEFAULT '',      -- phone, laptop, ... ('' : keep the guess's)
    os TEXT NOT NULL DEFAULT '',
    label TEXT NOT NULL DEFAULT '',     -- what it is, in the household's words
    corrected REAL NOT NULL             -- when the household said so
);
"""),
    Step(22, "a device that came back with a new private address, let in as the device it was: one device, "
             "both addresses' history", sql="""
CREATE TABLE IF NOT EXISTS device_joins (
    mac TEXT NOT NULL,                  -- the device's address now
    was TEXT NOT NULL,                  -- an address it had before
    joined REAL NOT NULL,
    PRIMARY KEY (mac, was)
);
"""),
    Step(23, "the end-host agent: a computer that says which application owns each of its connections, and "
             "priorities per application on that computer", sql="""
CREATE TABLE IF NOT EXISTS qos_agents (
    mac TEXT PRIMARY KEY,               -- the computer the agent speaks for (and only it)
    token_hash TEXT NOT NULL,           -- SHA-256 of its secret, shown once when made
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS qos_host_apps (
    mac TEXT NOT NULL,                  -- the computer
    name TEXT NOT NULL,                 -- the application as its agent names it ("zoom")
    class TEXT NOT NULL,                -- high | medium
    PRIMARY KEY (mac, name)
);
"""),
    Step(24, "each device's story: who decided about it and when, and the ports and radios it was on", sql="""
CREATE TABLE IF NOT EXISTS device_decisions (
    mac TEXT NOT NULL,
    at REAL NOT NULL,
    state TEXT NOT NULL,                -- the state the decision set
    was TEXT NOT NULL DEFAULT '',       -- the state before it
    by TEXT NOT NULL DEFAULT ''         -- who, in words ("the Guest Board on Tom's laptop"); '': not said
);
CREATE INDEX IF NOT EXISTS device_decisions_by_mac ON device_decisions (mac, at);
CREATE TABLE IF NOT EXISTS device_places (
    mac TEXT NOT NULL,
    at REAL NOT NULL,                   -- when it was first seen there (this time)
    place TEXT NOT NULL                 -- a router port, a satellite's port or a radio (its port name)
);
CREATE INDEX IF NOT EXISTS device_places_by_mac ON device_places (mac, at);
"""),
)
LATEST = STEPS[-1].number
assert [s.number for s in STEPS] == list(range(1, LATEST + 1))


def version(db: sqlite3.Connection) -> int:
    return db.execute("PRAGMA user_version").fetchone()[0]


def migrate(db: sqlite3.Connection, path: str = "state.db") -> list[int]:
    """Bring the database to LATEST; returns the step numbers applied."""
    current = version(db)
    if current > LATEST:
        raise StateVersionError(
            f"{path} is at schema version {current}, newer than this controller understands ({LATEST}): "
            "it was written by a newer release. Refusing to use it rather than lose what it holds; "
            "run the newer release, or restore a backup made by this one.")
    applied = []
    for step in STEPS[current:]:
        db.execute("BEGIN IMMEDIATE")
        try:
            if step.sql:
                for statement in _statements(step.sql):
                    db.execute(statement)
            if step.run:
                step.run(db)
            db.execute(f"PRAGMA user_version = {step.number}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        applied.append(step.number)
    return applied


def _statements(script: str) -> list[str]:
    """Split a script of CREATE statements (no semicolons inside them) into statements."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
