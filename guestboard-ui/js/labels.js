/* How network facts map to a label's look (seed §4.3.3). Pure functions, no DOM. */
window.HW = window.HW || {};
HW.labels = (function () {
  "use strict";

  function clamp(x, lo, hi) { return Math.max(lo, Math.min(hi, x)); }

  /* Signal strength -> transparency, as the original board: (150 + rssi) / 100,
     so -50 dBm is fully opaque and -100 dBm half transparent. Never invisible. */
  function opacity(rssi) {
    if (rssi === null || rssi === undefined) return 1;
    return clamp((150 + rssi) / 100, 0.2, 1);
  }

  /* Current bandwidth -> size: idle 1x, ~1.35x at 10 kB/s, ~1.7x at 100 kB/s, 2x from 1 MB/s. */
  function scale(bytesPerSecond) {
    var bps = Math.max(0, bytesPerSecond || 0);
    return 1 + clamp(Math.log10(1 + bps / 1000) / 3, 0, 1);
  }

  /* Leaving: a device unseen (no traffic, not associated) since `seenAt` fades
     from full to 0.3x over `leaveAfter` seconds, then counts as departed (it leaves the
     board's middle) until it is seen again. No seen time (no radio, no traffic yet): no fade. */
  var FADE_FLOOR = 0.3, UNSEEN_GRACE = 5;
  function unseenFor(seenAt, now) { return seenAt ? Math.max(0, now - seenAt) : 0; }
  function fade(seenAt, leaveAfter, now) {
    var unseen = unseenFor(seenAt, now);
    if (unseen <= UNSEEN_GRACE) return 1;
    return 1 - (1 - FADE_FLOOR) * clamp(unseen / (leaveAfter || 600), 0, 1);
  }
  function departed(seenAt, leaveAfter, now) { return !!seenAt && unseenFor(seenAt, now) >= (leaveAfter || 600); }

  /* Retransmissions -> red highlight once more than 10% of frames are retried. */
  function retransmitting(retrans) { return (retrans || 0) > 0.1; }

  function bytes(n) {
    n = n || 0;
    if (n < 1024) return Math.round(n) + " B";
    var units = ["kB", "MB", "GB", "TB"], i = -1;
    do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
    return n.toFixed(n < 10 ? 1 : 0) + " " + units[i];
  }

  /* The second line: what kind of name this is, and whether the MAC is private. */
  function subtitle(d) {
    var parts = [];
    if (d.private) parts.push("private address");
    else if (d.vendor && d.label_source !== "vendor") parts.push(d.vendor);
    if (d.label_source === "mac" && !d.private) parts.push("unknown maker");
    if (d.owner) parts.push(d.owner);
    if (d.type) parts.push(d.type);
    var link = connection(d);                /* "wired" or "Wi-Fi 2.4 GHz (wlan0)" */
    if (link) parts.push(link);
    /* over a usage limit: a block wins over a slow-down, as in the switch */
    if (d.usage_blocked) parts.push("blocked: usage limit");
    else if (d.usage_slowed) parts.push("slowed: usage limit");
    var pause = paused(d);
    if (pause) parts.push(pause);
    if (d.priority === "high") parts.push("★ first");     /* a high-priority device */
    return parts.join(" · ") || d.mac;
  }

  /* Priorities: household words for the API's classes high, medium, default. */
  var PRIORITY_WORDS = { high: "First", medium: "Preferred", "default": "Normal" };
  function priority(cls) { return PRIORITY_WORDS[cls] || cls; }

  /* How the device is connected: "wired", "Wi-Fi 5 GHz (wlan1)", "Wi-Fi (wlan0)" when
     the band is unknown; a radio's group of randomised MACs is "not connected"; "" otherwise. */
  function connection(d) {
    if (d.wired) return "wired";
    if (d.state === "group") return "not connected" + (d.radio ? " · " + wifi(d) : "");
    return d.radio ? wifi(d) : "";
  }
  function wifi(d) { return "Wi-Fi " + (d.band ? d.band + " " : "") + "(" + radioName(d.radio) + ")"; }

  /* A radio's name: the router's own ("wlan0") or a satellite's, which the router calls
     "wlan0@sat2": "wlan0 on satellite 2". */
  var SATELLITE_RADIO = /^(.+)@sat(\d+)$/;
  function radioName(radio) {
    var m = SATELLITE_RADIO.exec(radio || "");
    return m ? m[1] + " on satellite " + m[2] : radio;
  }
  /* The satellite radio a device is on, {satellite, radio}, or null. */
  function satelliteRadio(radio) {
    var m = SATELLITE_RADIO.exec(radio || "");
    return m ? { satellite: +m[2], radio: m[1] } : null;
  }

  /* Schedules: "paused until 22:15" for a one-tap pause, "bedtime" while a pause
     window holds, "strict DNS" in a dns-strict window; "" otherwise. */
  function paused(d) {
    if (d.paused && d.paused_by === "schedule") return "bedtime";
    if (d.paused) return "paused until " + clock(d.paused_until);
    return d.in_schedule === "dns-strict" ? "strict DNS" : "";
  }

  function clock(epochSeconds) {
    var t = new Date(epochSeconds * 1000);
    return ("0" + t.getHours()).slice(-2) + ":" + ("0" + t.getMinutes()).slice(-2);
  }

  return { opacity: opacity, scale: scale, retransmitting: retransmitting, bytes: bytes,
           subtitle: subtitle, clamp: clamp, paused: paused, clock: clock,
           fade: fade, departed: departed, connection: connection, priority: priority,
           satelliteRadio: satelliteRadio, PRIORITIES: ["high", "medium", "default"] };
})();
