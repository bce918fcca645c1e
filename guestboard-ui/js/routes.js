/* Every ws.v1 route the Guest Board calls, in one place: its method, its path (with
   {parameters}), the query parameters it may carry and the shape of its answer (a schema of
   the OpenAPI document, read through HW.model). api.js builds each URL from here; nothing
   else writes an API path. tests/unit/test_ui_contract.py checks every entry against
   openapi.json: the operation exists, with that method, those parameters and that answer. */
window.HW = window.HW || {};
HW.routes = (function () {
  "use strict";
  /* answer: "Shape", ["Shape"] (a list of them), or null when the board reads nothing of it */
  var ROUTES = {
    session: { method: "GET", path: "session", answer: "SessionAnswer" },
    login: { method: "POST", path: "login", answer: "LoginAnswer" },
    logout: { method: "POST", path: "logout", answer: "LoggedOut" },
    setupSession: { method: "POST", path: "setup/session", answer: "LoginAnswer" },
    panelSession: { method: "POST", path: "panels/session", answer: "LoginAnswer" },
    pairPanel: { method: "POST", path: "panels/pair", answer: "PanelCode" },
    panels: { method: "GET", path: "panels", answer: ["Panel"] },
    revokePanel: { method: "POST", path: "panels/{panel_id}/revoke", answer: null },
    panelDisplay: { method: "GET", path: "panels/display", answer: "PanelDisplay" },
    setPanelNight: { method: "POST", path: "panels/night", answer: "PanelDisplay" },

    devices: { method: "GET", path: "devices", answer: ["BoardDevice"] },
    device: { method: "GET", path: "devices/{mac}", answer: "DevicePanel" },
    permit: { method: "POST", path: "permit/{mac}", answer: "Device" },
    deny: { method: "POST", path: "deny/{mac}", answer: "Device" },
    blacklist: { method: "POST", path: "blacklist/{mac}", answer: "Device" },
    whitelist: { method: "POST", path: "whitelist/{mac}", answer: "Device" },
    forget: { method: "POST", path: "forget/{mac}", answer: null },
    meta: { method: "POST", path: "meta/{mac}", answer: "Device" },
    correctIdentity: { method: "POST", path: "identity/{mac}", answer: null },
    clearIdentity: { method: "POST", path: "identity/{mac}/clear", answer: null },
    joinIdentity: { method: "POST", path: "identity/{mac}/join", answer: null },
    story: { method: "GET", path: "identity/{mac}/story", query: ["format"], answer: "Story" },
    permitDns: { method: "POST", path: "permit-dns/{mac}/{domain}", answer: null },
    denyDns: { method: "POST", path: "deny-dns/{mac}/{domain}", answer: null },
    removeDnsRule: { method: "POST", path: "remove-dns-rule/{mac}/{domain}", answer: null },
    permitSatellite: { method: "POST", path: "satellites/{dpid}/permit", answer: null },
    denySatellite: { method: "POST", path: "satellites/{dpid}/deny", answer: null },

    pause: { method: "POST", path: "pause/{mac}", answer: "PauseFacts" },
    resume: { method: "POST", path: "resume/{mac}", answer: "PauseFacts" },
    schedules: { method: "GET", path: "schedules", query: ["mac"], answer: ["Schedule"] },
    addSchedule: { method: "POST", path: "schedules", answer: "Schedule" },
    removeSchedule: { method: "POST", path: "schedules/{id}/remove", answer: null },

    usage: { method: "GET", path: "usage", query: ["period", "by"], answer: "UsageReport" },
    usageCap: { method: "GET", path: "usage/cap", answer: "CapStatus" },
    setUsageCap: { method: "POST", path: "usage/cap", answer: "CapStatus" },
    usageDevice: { method: "GET", path: "usage/devices/{mac}", query: ["range"], answer: "DeviceSeries" },
    usageCsv: { method: "GET", path: "usage.csv", query: ["month"], answer: null },
    setUsageLimit: { method: "POST", path: "usage/limits", answer: "UsageLimit" },
    removeUsageLimit: { method: "POST", path: "usage/limits/remove", answer: null },
    setUsageBurst: { method: "POST", path: "usage/bursts", answer: "UsageBurst" },
    removeUsageBurst: { method: "POST", path: "usage/bursts/remove", answer: null },

    qos: { method: "GET", path: "qos", answer: "QosView" },
    qosStats: { method: "GET", path: "qos/stats", answer: "QosStats" },
    qosLink: { method: "POST", path: "qos/link", answer: "QosView" },
    qosDevice: { method: "POST", path: "qos/devices/{mac}", answer: "QosView" },
    qosApp: { method: "POST", path: "qos/apps", answer: "QosView" },
    deleteQosApp: { method: "DELETE", path: "qos/apps/{name}", answer: "QosView" },
    qosEdge: { method: "GET", path: "qos/edge", answer: "EdgeStatus" },
    addQosAgent: { method: "POST", path: "qos/agents/{mac}", answer: "AgentSecret" },
    qosHostApps: { method: "GET", path: "qos/devices/{mac}/apps", answer: "HostApps" },
    setQosHostApp: { method: "POST", path: "qos/devices/{mac}/apps", answer: "HostApps" },

    notifications: { method: "GET", path: "notifications", query: ["limit"], answer: "NotificationList" },
    markRead: { method: "POST", path: "notifications/read", answer: null },
    testNotification: { method: "POST", path: "notifications/test", answer: "Notification" },
    webhooks: { method: "GET", path: "webhooks", answer: ["Webhook"] },
    addWebhook: { method: "POST", path: "webhooks", answer: "NewWebhook" },
    removeWebhook: { method: "POST", path: "webhooks/{hook_id}/remove", answer: null },
    deliveries: { method: "GET", path: "webhooks/deliveries", query: ["limit"], answer: ["Delivery"] },
    notifyStatus: { method: "GET", path: "notify/status", answer: "NotifyStatus" },

    blocklists: { method: "GET", path: "blocklists", answer: "Blocklists" },
    addBlocklist: { method: "POST", path: "blocklists", answer: "Blocklist" },
    refreshBlocklist: { method: "POST", path: "blocklists/{list_id}/refresh", answer: "Blocklist" },
    removeBlocklist: { method: "POST", path: "blocklists/{list_id}/remove", answer: null },
    setSafeSearch: { method: "POST", path: "dns/safe-search", answer: "SafeSearch" },
    queries: { method: "GET", path: "dns/queries", query: ["mac", "search", "verdict", "limit"], answer: "QueryList" },
    querySummary: { method: "GET", path: "dns/queries/summary", answer: "QuerySummary" },
    dnsUpstream: { method: "GET", path: "dns/upstream", answer: "Upstream" },
    setDnsUpstream: { method: "POST", path: "dns/upstream", answer: "Upstream" },
    dnssec: { method: "GET", path: "dns/dnssec", answer: "Dnssec" },
    setDnssec: { method: "POST", path: "dns/dnssec", answer: "Dnssec" },
    addDnssecInsecure: { method: "POST", path: "dns/dnssec/insecure", answer: "Dnssec" },
    removeDnssecInsecure: { method: "POST", path: "dns/dnssec/insecure/{domain}/remove", answer: "Dnssec" },

    system: { method: "GET", path: "system", answer: "SystemInfo" },
    setTimezone: { method: "POST", path: "system/timezone", answer: "Restarting" },
    password: { method: "POST", path: "password", answer: null },
    factoryReset: { method: "POST", path: "factory-reset", answer: "ResetDone" },
    wifi: { method: "GET", path: "wifi", answer: "WifiInfo" },
    setWifi: { method: "POST", path: "wifi", answer: "WifiInfo" },
    backup: { method: "POST", path: "backup", answer: "raw" },
    restore: { method: "POST", path: "restore", answer: "Restored" },
    restoreStatus: { method: "GET", path: "restore/status", answer: "RestoreStatus" },
    update: { method: "GET", path: "system/update", answer: "UpdateStatus" },
    upload: { method: "POST", path: "system/update", answer: "UpdateStarted" },
    reboot: { method: "POST", path: "system/reboot", answer: null },

    forwards: { method: "GET", path: "forwards", query: ["mac"], answer: ["Forward"] },
    addForward: { method: "POST", path: "forwards", answer: "Forward" },
    removeForward: { method: "POST", path: "forwards/{forward_id}/remove", answer: null },
    openPorts: { method: "GET", path: "open-ports", query: ["mac"], answer: ["DevicePorts"] },
    setMayOpenPorts: { method: "POST", path: "open-ports/{mac}", answer: "MayOpen" },
    upnpStatus: { method: "GET", path: "upnp", answer: "UpnpStatus" },
    closeMapping: { method: "POST", path: "upnp/close", answer: null },

    remote: { method: "GET", path: "remote", answer: "RemoteStatus" },
    addRemote: { method: "POST", path: "remote", answer: "RemoteConfig" },
    remoteConfig: { method: "GET", path: "remote/{mac}/config", answer: null },
    remoteQr: { method: "GET", path: "remote/{mac}/qr.svg", answer: null },

    events: { method: "GET", path: "events", answer: null }
  };

  var BASE = "/ws.v1/";

  /* The URL of route `name`: {parameters} from `params` (URL-encoded), and the route's
     query parameters that `params` gives and are not empty. `fresh` adds "_=<now>", as
     jQuery's cache: false does, for an <img> that must not show a copy it loaded before
     (the API reads no query parameter it does not declare). */
  function url(name, params, fresh) {
    var route = ROUTES[name];
    if (!route) throw new Error("no such route in HW.routes: " + name);
    params = params || {};
    var path = route.path.replace(/\{(\w+)\}/g, function (_, key) {
      if (params[key] === undefined || params[key] === null) throw new Error(name + ": {" + key + "} missing");
      return encodeURIComponent(params[key]);
    });
    var query = (route.query || []).filter(function (key) {
      return params[key] !== undefined && params[key] !== null && params[key] !== "";
    }).map(function (key) { return encodeURIComponent(key) + "=" + encodeURIComponent(params[key]); });
    if (fresh) query.push("_=" + Date.now());
    return BASE + path + (query.length ? "?" + query.join("&") : "");
  }

  return { ROUTES: ROUTES, url: url, get: function (name) { return ROUTES[name]; } };
})();
