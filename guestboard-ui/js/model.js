/* The fields the Guest Board reads from the API, in one place. Every answer (api.js) and
   every event of the live stream goes through HW.model.read, which keeps of it only the
   fields declared here, by the schema of the OpenAPI document they come from: a field the
   board uses must be listed, and tests/unit/test_ui_contract.py checks each one against
   openapi.json (the schema has it; a nested shape is the schema the document refers to).
   So a field renamed on the server fails that test, and a field the board reads but never
   declared is simply not there. Names are the API's own. */
window.HW = window.HW || {};
HW.model = (function () {
  "use strict";
  /* shape -> {field: true | "Shape" | ["Shape"] | {"*": "Shape"}}; "_extends": a shape whose
     fields come too. shape -> "raw": an answer passed on as it is (a backup file, saved
     unread). An answer whose shape is not here is one the board reads nothing of (routes.js,
     generated, names every route's answer). */
  var SHAPES = {
    BackupFile: "raw",
    SessionAnswer: { kind: true, role: true, csrf: true, panel: true, set_up: true, storage: "Storage" },
    Storage: { full: true, writable: true, error: true, queued_writes: true },
    LoginAnswer: { csrf: true, role: true, panel: true },
    PanelCode: { code: true, url: true, qr_svg: true, expires_in: true, name: true },
    Panel: { id: true, kind: true, name: true, device: true, last_used: true },
    PanelDisplay: { dim: true, brightness: true, enabled: true, from: true, to: true, night_brightness: true },
    LoggedOut: { logged_out: true },

    Lease: { ip: true, active: true },
    BoardLease: { ip: true, active: true },
    Attached: { "switch": true, satellite: true, port: true },
    Metrics: { rssi: true, retrans: true, bps: true, today_bytes: true, seen_at: true, leave_after: true },
    DeviceFacts: {
      flow_limited: true, attached: "Attached", ipv6_prefix: true, usage_blocked: true, usage_slowed: true,
      usage_slow_kbps: true, usage_limit: "UsageLimit", usage_burst: "UsageBurst",
      dns_name: true, paused: true, paused_by: true, paused_until: true, in_schedule: true, priority: true,
      wired: true, radio: true, band: true, leave_after: true, may_open_ports: true, open_ports: "OpenPorts",
      away: "Away", identity: "IdentityView"
    },
    LooksLike: { mac: true, name: true, text: true },
    Story: { first_seen: true, approved: "StoryApproved", places: true, names_today: ["StoryName"], names_note: true,
             usage: "StoryUsage", alerts: ["StoryAlert"], events: ["StoryEvent"] },
    StoryApproved: { at: true, by: true },
    StoryName: { name: true, count: true },
    StoryUsage: { today: "StoryUsageSpan", week: "StoryUsageSpan" },
    StoryUsageSpan: { words: true },
    StoryAlert: { title: true },
    StoryEvent: { at: true, kind: true, words: true },
    IdentityView: { type: true, label: true, level: true, why: true, corrected: true, looks_like: "LooksLike" },
    Device: { _extends: "DeviceFacts", mac: true, state: true, name: true, owner: true, type: true,
              hostname: true, first_seen: true, last_seen: true, lease: "Lease" },
    BoardDevice: {
      _extends: "DeviceFacts", mac: true, state: true, zone: true, label: true, label_source: true, vendor: true,
      "private": true, hostname: true, name: true, owner: true, type: true, first_seen: true, last_seen: true,
      lease: "BoardLease", metrics: "Metrics", count: true, kind: true, dpid: true, code: true
    },
    Alert: { at: true, kind: true, detail: true },
    DnsRule: { domain: true, action: true, owner: true, schedule: true, active: true },
    DnsRules: { rules: ["DnsRule"], mode: true },
    DevicePanel: { _extends: "BoardDevice", alerts: ["Alert"], dns_rules: "DnsRules" },

    UsageBurst: { mac: true, bytes: true, minutes: true, text: true },
    UsageLimit: { target: true, period: true, allowance: true, action: true, rate: true, text: true },
    PresenceAlert: { mac: true, on: true, text: true },
    PauseFacts: { mac: true, paused: true, paused_by: true, paused_until: true, in_schedule: true },
    Schedule: { id: true, mac: true, owner: true, action: true, window: true },

    UsageRow: { period: true, who: true, up: true, down: true, total: true },
    UsageReport: { rows: ["UsageRow"], series: ["UsageRow"], steps: true, total: true, label: true },
    CapStatus: { cap: true, billing_day: true, start: true, end: true, used: true, percent: true, projected: true,
                 projected_percent: true },
    DeviceSeries: { labels: true, starts: true, up: true, down: true, total: true, step: true, range: true },

    Window: { days: true, start: true, end: true },
    DeviceClass: { "class": true, window: "Window" },
    App: { name: true, "class": true, ports: true, domains: true, window: "Window" },
    QosView: { enabled: true, down_kbit: true, up_kbit: true, high_share: true, devices: { "*": "DeviceClass" },
               apps: ["App"], active: true, leaf: true, agents: true },
    EdgeStatus: { configured: true, reachable: true, error: true, wanted: true, placed: true, honoured: true,
                  refused: true, queues: true, placed_at: true },
    AgentSecret: { token: true },
    HostApp: { name: true, "class": true, connections: true },
    HostApps: { reporting: true, apps: ["HostApp"] },
    ClassStats: { direction: true, "class": true, rate_bps: true, drops: true },
    DeviceStats: { mac: true, direction: true, rate_bps: true },
    AppStats: { name: true, direction: true, rate_bps: true },
    QosStats: { at: true, classes: ["ClassStats"], devices: ["DeviceStats"], apps: ["AppStats"] },

    Notification: { id: true, at: true, kind: true, title: true, detail: true, read: true },
    NotificationList: { unread: true, notifications: ["Notification"] },
    Webhook: { id: true, url: true, created: true, allow_local: true },
    NewWebhook: { id: true, url: true, secret: true },
    Delivery: { notification: true, webhook: true, at: true, attempt: true, status: true, ok: true },
    MqttStatus: { loaded: true, host: true, port: true, username: true, password_set: true, topic_prefix: true,
                  discovery_prefix: true, accept_commands: true, connected: true },
    WanStatus: { "interface": true, state: true, since: true, reason: true },
    NotifyStatus: { mqtt: "MqttStatus", wan: "WanStatus" },

    Blocklist: { id: true, url: true, owner: true, rules: true, blocked_queries: true, fetched: true, error: true },
    Blocklists: { blocklists: ["Blocklist"], safe_search: true },
    SafeSearch: { enabled: true },
    Query: { at: true, mac: true, device: true, name: true, type: true, verdict: true, count: true },
    QueryList: { queries: ["Query"] },
    DeviceQueries: { mac: true, device: true, total: true, blocked: true },
    BlockedName: { name: true, count: true },
    QuerySummary: { devices: ["DeviceQueries"], top_blocked: ["BlockedName"] },
    ServerStatus: { server: true, reachable: true, rtt_ms: true, why: true },
    Upstream: { provider: true, servers: true, fallback: true, state: true, message: true,
                servers_status: ["ServerStatus"] },
    Dnssec: { enabled: true, validating: true, message: true, insecure: true },

    WanLease: { up: true, "interface": true, address: true, gateway: true, dns: true, up_for: true },
    SystemInfo: { version: true, uptime: true, timezone: true, timezone_source: true, schema: true, update_slot: true,
                  wan: "WanLease", hardware: true },
    Restarting: { timezone: true, restarting: true, note: true },
    ResetDone: { restarting: true, note: true, setup_code: true, back_in: true },
    LastApply: { at: true, ok: true, error: true },
    WifiInfo: { ssid: true, interfaces: true, passphrase_set: true, last_apply: "LastApply", applying: true,
                note: true },
    Restored: { restored: true, created: true, restarting: true, note: true, problems: true, at: true, back_in: true },
    LastRestore: { applied: true, at: true, problems: true },
    RestoreStatus: { restore: "LastRestore" },
    Running: { version: true, sequence: true, slot: true },
    OtherSlot: { slot: true, state: true, version: true },
    UpdateStatus: { state: true, percent: true, phase: true, version: true, error: true, enabled: true,
                    running: "Running", other: "OtherSlot" },
    UpdateStarted: { state: true, version: true, slot: true },

    Forward: { id: true, protocol: true, ports: true, first: true, to_port: true, description: true, open: true,
               why_closed: true },
    Mapping: { key: true, family: true, protocol: true, port: true, to_port: true, description: true, expires: true },
    OpenPorts: { forwards: ["Forward"], mappings: ["Mapping"] },
    DevicePorts: { _extends: "OpenPorts", mac: true, device: true, may_open_ports: true },
    MayOpen: { may_open_ports: true, open_ports: "OpenPorts" },
    UpnpStatus: { running: true, note: true },
    Away: { connected: true, endpoint: true, last_handshake: true },
    RemoteDevice: { mac: true, name: true, file_name: true },
    RemoteStatus: { devices: ["RemoteDevice"] },
    RemoteConfig: { _extends: "RemoteDevice" },

    /* the live stream's events (GET /ws.v1/events, x-events in the document) */
    LabelFacts: { label: true, label_source: true, vendor: true, "private": true },
    SnapshotEvent: { devices: ["BoardDevice"] },
    DeviceEvent: { mac: true, state: true, reason: true, view: "BoardDevice" },
    LeaseEvent: { mac: true, view: "BoardDevice" },
    LinkEvent: { mac: true, metrics: "Metrics", label: "LabelFacts" },
    BandwidthEvent: { mac: true, metrics: "Metrics" },
    AlertEvent: { mac: true, kind: true, detail: true, at: true },
    RestartEvent: { why: true, back_in: true, at: true }
  };

  function fields(name) {
    var shape = SHAPES[name];
    if (!shape) throw new Error("HW.model: no shape " + name);
    if (!shape._extends) return shape;
    var all = {}, base = fields(shape._extends), k;
    for (k in base) if (Object.prototype.hasOwnProperty.call(base, k)) all[k] = base[k];
    for (k in shape) if (k !== "_extends" && Object.prototype.hasOwnProperty.call(shape, k)) all[k] = shape[k];
    return all;
  }

  function own(object, key) { return Object.prototype.hasOwnProperty.call(object, key); }

  /* `value` as the board may read it: only the declared fields, nested shapes alike. */
  function read(shape, value) {
    // a route whose answer the board does not read: not JSON, or a shape not declared here
    if (shape === null || shape === undefined || (typeof shape === "string" && !own(SHAPES, shape))) return undefined;
    if (value === null || value === undefined || SHAPES[shape] === "raw" || shape === true) return value;
    if (Array.isArray(shape)) return Array.isArray(value) ? value.map(function (v) { return read(shape[0], v); }) : value;
    if (typeof shape === "object") {
      var map = {};
      Object.keys(value).forEach(function (k) { map[k] = read(shape["*"], value[k]); });
      return map;
    }
    var out = {}, decl = fields(shape);
    Object.keys(decl).forEach(function (k) {
      if (Object.prototype.hasOwnProperty.call(value, k)) out[k] = read(decl[k], value[k]);
    });
    return out;
  }

  return { SHAPES: SHAPES, read: read };
})();
