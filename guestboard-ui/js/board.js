/* The three zones and their labels: rendering from device views, and drag and drop
   (pointer events, so mouse, pen and touch all work; touch events where a browser gives a
   finger no pointer events, as the WebKit of the router's own screen does). Dropping on
   "On the network" permits, on "In range" denies; both take effect at once, the dialog
   comes after.

   Built to stay usable with thousands of devices (a DHCP flood):
   - every lookup is by MAC in a Map, never a scan of all labels;
   - events only mark a MAC dirty; one flush per animation frame draws all of them;
   - drag and tap are delegated from the document, so a label costs no listeners;
   - undecided devices (pending or merely heard) beyond a few newest are collapsed per
     zone into one "N unknown devices" group, drawn only when someone opens it. */
window.HW = window.HW || {};
HW.board = (function ($) {
  "use strict";
  var COLLAPSE_OVER = 24;      // more undecided devices than this in a zone -> collapse
  var SHOW_NEWEST = 6;         // ... keeping this many of the newest as ordinary labels
  var DRAG_THRESHOLD = 6;      // pixels before a press becomes a drag (else it is a tap)
  var ZONES = ["outside", "asking", "permitted"];

  var devices = new Map();     // mac -> latest view from the API
  var labels = new Map();      // mac -> its label element, only while it is drawn
  var dirty = new Map();       // mac -> true if it should flash as it arrives
  var grouped = new Set();     // macs collapsed into their zone's group
  var regroupNeeded = false;   // the undecided devices changed: recompute the groups
  var frame = 0;
  var groups = {};             // zone -> {el, list, expanded}
  var handlers = { drop: function () { return jQuery.Deferred().reject().promise(); }, open: function () {} };
  var press = null;            // the label under a pointer that is down

  function undecided(v) { return v.state === "pending" || v.state === "unknown"; }

  /* -- groups of unknown devices ----------------------------------------------------- */
  function group(zone) {
    if (groups[zone]) return groups[zone];
    var el = document.createElement("div");
    el.className = "group";
    el.hidden = true;
    el.innerHTML = '<button type="button" class="group-toggle secondary" aria-expanded="false">' +
                   '<span class="count"></span> unknown devices</button><div class="group-list" hidden></div>';
    var section = document.getElementById("zone-" + zone);
    section.insertBefore(el, section.querySelector(".labels"));
    var g = groups[zone] = { el: el, list: el.querySelector(".group-list"), expanded: false, zone: zone };
    el.querySelector(".group-toggle").addEventListener("click", function () { toggleGroup(g); });
    return g;
  }

  function toggleGroup(g) {
    g.expanded = !g.expanded;
    g.el.querySelector(".group-toggle").setAttribute("aria-expanded", String(g.expanded));
    g.el.classList.toggle("open", g.expanded);
    g.list.hidden = !g.expanded;
    if (!g.expanded) g.list.textContent = "";
    // Members are drawn only while the group is open.
    grouped.forEach(function (mac) {
      var v = devices.get(mac);
      if (v && v.zone === g.zone) {
        if (!g.expanded) labels.delete(mac);
        markDirty(mac, false);
      }
    });
  }

  /* Which undecided devices are collapsed: per zone, all but the newest few, once
     there are more than COLLAPSE_OVER of them. */
  function regroup() {
    var byZone = {};
    devices.forEach(function (v) {
      if (!undecided(v)) return;
      (byZone[v.zone] = byZone[v.zone] || []).push(v);
    });
    var now = new Set();
    ZONES.forEach(function (zone) {
      var list = byZone[zone] || [];
      var collapse = list.length > COLLAPSE_OVER;
      if (collapse) {
        list.sort(function (a, b) { return (b.first_seen || 0) - (a.first_seen || 0); });
        for (var i = SHOW_NEWEST; i < list.length; i++) now.add(list[i].mac);
      }
      if (collapse || groups[zone]) {
        var g = group(zone);
        g.el.hidden = !collapse;
        g.el.querySelector(".count").textContent = collapse ? String(list.length - SHOW_NEWEST) : "0";
        if (!collapse && g.expanded) toggleGroup(g);
      }
    });
    grouped.forEach(function (mac) { if (!now.has(mac)) markDirty(mac, false); });
    now.forEach(function (mac) { if (!grouped.has(mac)) markDirty(mac, false); });
    grouped = now;
  }

  /* -- drawing ----------------------------------------------------------------------- */
  function markDirty(mac, flash) {
    dirty.set(mac, (dirty.get(mac) || false) || flash);
    if (!frame) frame = window.requestAnimationFrame(flush);
  }

  function flush() {
    frame = 0;
    if (regroupNeeded) { regroupNeeded = false; regroup(); }
    var work = dirty;
    dirty = new Map();
    work.forEach(function (flash, mac) {
      // Moving the label under a pointer would end its drag: draw it after the release.
      if (press && press.mac === mac) { dirty.set(mac, flash); return; }
      draw(mac, flash);
    });
  }

  function containerOf(v) {
    if (grouped.has(v.mac)) {
      var g = groups[v.zone];
      return g && g.expanded ? g.list : null;
    }
    return document.querySelector("#zone-" + v.zone + " .labels");
  }

  function draw(mac, flash) {
    var v = devices.get(mac);
    var el = labels.get(mac);
    var where = v ? containerOf(v) : null;
    if (!where) {
      if (el) { el.remove(); labels.delete(mac); }
      return;
    }
    if (!el) {
      // The label: a button that opens the device's panel (tap, Enter or Space), and for a
      // device asking to join its Let in / Refuse buttons; the whole label is dragged.
      el = document.createElement("div");
      el.className = "label";
      el.dataset.mac = mac;
      el.innerHTML = '<button type="button" class="open"><span class="name"></span><span class="guess"></span>' +
                     '<span class="sub"></span></button>' +
                     '<span class="decide" hidden><button type="button" class="let-in">Let in</button>' +
                     '<button type="button" class="refuse">Refuse</button></span>';
      labels.set(mac, el);
    }
    fill(el, v);
    if (el.parentNode !== where) {
      where.appendChild(el);
      if (flash) el.animate([{ background: "#fff0a8" }, { background: "#fff" }], { duration: 800, easing: "ease-out" });
    }
  }

  function fill(el, d) {
    el.dataset.state = d.state;
    el.dataset.zone = d.zone;
    var open = el.firstChild, name = open.firstChild;
    var text = d.label || d.mac;
    name.textContent = text;
    if (d.state === "blacklisted" || d.state === "denied") {
      name.appendChild(badge("badge", d.state === "blacklisted" ? "blacklisted" : "denied"));
    }
    // Set by the routing component when the device hit the per-host flow limit.
    if (d.flow_limited) name.appendChild(badge("badge flow-mark", "limited"));
    el.classList.toggle("flow-limited", !!d.flow_limited);
    var sub = HW.labels.subtitle(d);
    open.lastChild.textContent = sub;
    // What the router guesses it is (identify.js): an icon and the guess, never a decision.
    var guess = HW.identify ? HW.identify.text(d) : "", guessEl = open.querySelector(".guess");
    guessEl.textContent = guess;
    guessEl.hidden = !guess;
    open.setAttribute("aria-label", text + ", " + HW.labels.stateWords(d.state) + (guess ? ", " + guess : "") +
                      ": " + sub);
    // A group of randomised MACs stands for many devices: it has no panel.
    open.disabled = d.state === "group";
    el.classList.toggle("private", !!d["private"]);
    el.title = d["private"] ? "This device uses a private (randomised) address, so it may look new on each network."
                            : (d.vendor || d.mac);
    var buttons = el.lastChild, asking = d.state === "pending" && (d.zone === "asking" || d.kind === "access-point");
    buttons.hidden = !asking;
    if (asking) {
      buttons.firstChild.setAttribute("aria-label", "Let " + text + " in");
      buttons.lastChild.setAttribute("aria-label", "Refuse " + text);
    }
    el.classList.toggle("wired", !!d.wired);     // a lease on a wired port
    applyMetrics(el, d.metrics || {}, d.leave_after);
  }

  function badge(cls, text) {
    var b = document.createElement("span");
    b.className = cls;
    b.textContent = text;
    return b;
  }

  function applyMetrics(el, m, leaveAfter) {
    var now = Date.now() / 1000;
    leaveAfter = leaveAfter || m.leave_after;
    el.style.opacity = (HW.labels.opacity(m.rssi) * HW.labels.fade(m.seen_at, leaveAfter, now)).toFixed(3);
    el.classList.toggle("departed", HW.labels.departed(m.seen_at, leaveAfter, now));
    el.style.setProperty("--scale", HW.labels.scale(m.bps).toFixed(3));
    el.classList.toggle("retrans", HW.labels.retransmitting(m.retrans));
    el.dataset.rssi = m.rssi === null || m.rssi === undefined ? "" : m.rssi;
    el.dataset.bps = Math.round(m.bps || 0);
  }

  /* -- the device list ---------------------------------------------------------------- */
  function set(view, flash) {
    var old = devices.get(view.mac);
    devices.set(view.mac, view);
    if (undecided(view) || (old && undecided(old))) {
      if (!old || old.zone !== view.zone || old.state !== view.state || old.first_seen !== view.first_seen) {
        regroupNeeded = true;
      }
    }
    markDirty(view.mac, flash && (!old || old.zone !== view.zone));
  }

  function upsert(view) {
    if (!view || !view.mac) return;
    set(view, true);
  }

  function remove(mac) {
    var old = devices.get(mac);
    if (!old) return;
    devices.delete(mac);
    if (undecided(old)) regroupNeeded = true;
    markDirty(mac, false);
  }

  function replaceAll(views) {
    devices.forEach(function (v, mac) { markDirty(mac, false); });
    devices = new Map();
    (views || []).forEach(function (v) { if (v && v.mac) set(v, false); });
    regroupNeeded = true;
  }

  /* Polling mode: bring the board in line with a full device list without rebuilding it. */
  function sync(views) {
    var keep = new Set();
    (views || []).forEach(function (v) { if (v && v.mac) { keep.add(v.mac); upsert(v); } });
    Array.from(devices.keys()).forEach(function (mac) { if (!keep.has(mac)) remove(mac); });
  }

  function metrics(mac, m, label) {
    var d = devices.get(mac);
    if (!d && label) {      // heard by the radio only: "in range, not connected"
      set($.extend({ mac: mac, state: "unknown", zone: "outside", name: "", owner: "", type: "", metrics: m }, label), true);
      return;
    }
    if (!d) return;
    d.metrics = m;
    var el = labels.get(mac);
    if (el) applyMetrics(el, m, d.leave_after);
  }

  /* Time passes without events while a device is away: re-apply the fade every few seconds. */
  setInterval(function () {
    labels.forEach(function (el, mac) {
      var d = devices.get(mac);
      if (d && d.metrics && d.metrics.seen_at) applyMetrics(el, d.metrics, d.leave_after);   // radio-heard only
    });
  }, 2000);

  /* -- drag and tap, delegated -------------------------------------------------------- */
  function zoneAt(x, y) {
    for (var i = 0; i < ZONES.length; i++) {
      var r = document.getElementById("zone-" + ZONES[i]).getBoundingClientRect();
      if (x >= r.left && x <= r.right && y >= r.top && y <= r.bottom) return ZONES[i];
    }
    return null;
  }

  function labelFrom(target) {
    if (target && target.closest && target.closest(".decide button")) return null;    // its own buttons
    var el = target && target.closest ? target.closest(".label") : null;
    // A radio's group of randomised MACs stands for many devices: no drag, no panel.
    if (el && el.dataset.state === "group") return null;
    return el && !el.classList.contains("ghost") && labels.get(el.dataset.mac) === el ? el : null;
  }

  function showDropTarget(zone) {
    ZONES.forEach(function (z) {
      document.getElementById("zone-" + z).classList.toggle("drop-target", z === zone);
    });
  }

  /* A press on a label, from a pointer (id: its pointerId) or a finger's touch (id: "touch"
     and the touch's identifier). */
  function begin(target, x, y, id) {
    var el = labelFrom(target);
    if (!el) return;
    press = { el: el, mac: el.dataset.mac, x: x, y: y, id: id, dragging: false, over: null, ghost: null };
  }

  function move(x, y, pointerId) {
    var dx = x - press.x, dy = y - press.y;
    if (!press.dragging && Math.abs(dx) + Math.abs(dy) < DRAG_THRESHOLD) return;
    if (!press.dragging) {
      // A floating copy follows the pointer: the zones scroll, so the label itself
      // would be clipped at its zone's edge.
      var el = press.el, r = el.getBoundingClientRect();
      var ghost = el.cloneNode(true);
      ghost.classList.add("dragging", "ghost");
      ghost.style.cssText = el.style.cssText;
      Object.assign(ghost.style, { position: "fixed", left: r.left + "px", top: r.top + "px",
                                   width: r.width + "px", margin: "0" });
      document.body.appendChild(ghost);
      el.classList.add("drag-source");
      press.ghost = ghost;
      press.dragging = true;
      // Captured only once it is a drag: a tap's release stays on the label's button (its click).
      if (pointerId !== undefined) {
        try { el.setPointerCapture(pointerId); } catch (err) { /* the pointer is gone already */ }
      }
    }
    press.ghost.style.transform = "translate(" + dx + "px," + dy + "px)";
    var zone = zoneAt(x, y);
    if (zone !== press.over) { showDropTarget(zone); press.over = zone; }
  }

  /* The press ends at (x, y); true when it was a drag (then no tap follows). */
  function finish(x, y, cancelled) {
    var p = press;
    press = null;
    p.el.classList.remove("drag-source");
    if (p.ghost) p.ghost.remove();
    showDropTarget(null);
    if (dirty.has(p.mac) && !frame) frame = window.requestAnimationFrame(flush);
    if (cancelled || !p.dragging) return false;     // a tap: the label's button opens the panel (click)
    draggedAt = Date.now();
    var zone = zoneAt(x, y);
    if (zone && zone !== p.el.dataset.zone) handlers.drop(p.mac, zone, devices.get(p.mac));
    return true;
  }

  function onDown(e) {
    if (e.button !== 0 || press) return;
    begin(e.target, e.clientX, e.clientY, e.pointerId);
  }

  function onMove(e) {
    if (press && e.pointerId === press.id) move(e.clientX, e.clientY, e.pointerId);
  }

  function onUp(e, cancelled) {
    if (press && e.pointerId === press.id) finish(e.clientX, e.clientY, cancelled);
  }

  /* A finger where the browser sends touch events only (bookworm's WPE WebKit, the router's
     screen: a finger there makes no pointer events, and a moving one no mouse events either).
     A browser that sends pointer events for the finger too has begun its press at
     pointerdown, before touchstart, so the touch leaves it alone. */
  function fingerOf(e) {
    if (!press || typeof press.id !== "string") return null;
    for (var i = 0; i < e.changedTouches.length; i++) {
      if ("touch" + e.changedTouches[i].identifier === press.id) return e.changedTouches[i];
    }
    return null;
  }

  function onTouchStart(e) {
    if (press || e.touches.length !== 1) return;
    var t = e.changedTouches[0];
    begin(e.target, t.clientX, t.clientY, "touch" + t.identifier);
  }

  function onTouchMove(e) {
    var t = fingerOf(e);
    if (!t) return;
    e.preventDefault();            // the finger moves the label, not the page
    move(t.clientX, t.clientY);
  }

  function onTouchEnd(e, cancelled) {
    var t = fingerOf(e);
    // A drag's release is no tap: the browser would make a click of it where the finger left.
    if (t && finish(t.clientX, t.clientY, cancelled)) e.preventDefault();
  }

  /* The household's decision on a device, whichever way it was made (drop or button):
     `zone` "permitted" or "outside"; a promise of the answer. */
  function decide(mac, zone) {
    return handlers.drop(mac, zone, devices.get(mac));
  }

  var draggedAt = 0;     // a drag's release is no tap on the label's button

  document.addEventListener("pointerdown", onDown);
  document.addEventListener("pointermove", onMove);
  document.addEventListener("pointerup", function (e) { onUp(e, false); });
  document.addEventListener("pointercancel", function (e) { onUp(e, true); });
  // Not passive: a dragging finger's moves and its release are the board's, not the page's.
  document.addEventListener("touchstart", onTouchStart, { passive: true });
  document.addEventListener("touchmove", onTouchMove, { passive: false });
  document.addEventListener("touchend", function (e) { onTouchEnd(e, false); }, { passive: false });
  document.addEventListener("touchcancel", function (e) { onTouchEnd(e, true); }, { passive: false });
  /* A tap or click on a label opens its panel (its button: Enter and Space too), except on
     its Let in / Refuse buttons, which decide. */
  document.addEventListener("click", function (e) {
    var el = e.target && e.target.closest ? e.target.closest(".label") : null;
    if (!el || el.classList.contains("ghost") || labels.get(el.dataset.mac) !== el) return;
    if (Date.now() - draggedAt < 400) return;
    var button = e.target.closest(".decide button");
    if (button) decide(el.dataset.mac, button.classList.contains("let-in") ? "permitted" : "outside");
    else if (el.dataset.state !== "group") handlers.open(el.dataset.mac);
  });

  return {
    upsert: upsert, remove: remove, replaceAll: replaceAll, sync: sync, metrics: metrics, decide: decide,
    get: function (mac) { return devices.get(mac); },
    on: function (name, fn) { handlers[name] = fn; }
  };
})(jQuery);
