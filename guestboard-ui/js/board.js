/* The three zones and their labels: rendering from device views, and drag and drop
   (pointer events, so mouse, pen and touch all work). Dropping on "On the network"
   permits, on "In range" denies; both take effect at once, the dialog comes after. */
window.HW = window.HW || {};
HW.board = (function ($) {
  "use strict";
  var devices = {};            // mac -> latest view from the API
  var handlers = { drop: function () {}, open: function () {} };
  var DRAG_THRESHOLD = 6;      // pixels before a press becomes a drag (else it is a tap)

  function zoneEl(zone) { return $("#zone-" + zone + " .labels"); }

  function labelEl(mac) {
    return $(".label:not(.ghost)").filter(function () { return this.dataset.mac === mac; });
  }

  function render(d) {
    var $l = labelEl(d.mac);
    var fresh = $l.length === 0;
    if (fresh) {
      $l = $('<div class="label" role="button" tabindex="0"><span class="name"></span><span class="sub"></span></div>');
      $l.attr("data-mac", d.mac);
      bindDrag($l);
    }
    $l.attr("data-state", d.state).attr("data-zone", d.zone);
    $l.find(".name").text(d.label);
    $l.find(".badge").remove();
    if (d.state === "blacklisted" || d.state === "denied") {
      $l.find(".name").append($('<span class="badge"></span>').text(d.state === "blacklisted" ? "blocked" : "refused"));
    }
    $l.find(".sub").text(HW.labels.subtitle(d));
    $l.toggleClass("private", !!d.private);
    $l.attr("title", d.private ? "This device uses a private (randomised) address, so it may look new on each network."
                               : (d.vendor || d.mac));
    applyMetrics($l, d.metrics || {});
    var $zone = zoneEl(d.zone);
    if (fresh || !$l.parent().is($zone)) {
      $zone.append($l);
      $l.removeClass("arrived");
      void $l[0].offsetWidth;   // restart the arrival highlight
      $l.addClass("arrived");
    }
  }

  function applyMetrics($l, m) {
    $l.css("opacity", HW.labels.opacity(m.rssi));
    $l[0].style.setProperty("--scale", HW.labels.scale(m.bps).toFixed(3));
    $l.toggleClass("retrans", HW.labels.retransmitting(m.retrans));
    $l.attr("data-rssi", m.rssi === null || m.rssi === undefined ? "" : m.rssi);
    $l.attr("data-bps", Math.round(m.bps || 0));
  }

  function upsert(view) {
    if (!view || !view.mac) return;
    devices[view.mac] = view;
    render(view);
  }

  function replaceAll(views) {
    devices = {};
    $(".label").remove();
    (views || []).forEach(upsert);
  }

  /* Polling mode: bring the board in line with a full device list without rebuilding it. */
  function sync(views) {
    var keep = {};
    (views || []).forEach(function (v) { keep[v.mac] = true; upsert(v); });
    $(".label:not(.ghost)").each(function () {
      if (!keep[this.dataset.mac]) { delete devices[this.dataset.mac]; $(this).remove(); }
    });
  }

  function metrics(mac, m, label) {
    var d = devices[mac];
    if (!d && label) {      // heard by the radio only: "in range, not connected"
      d = $.extend({ mac: mac, state: "unknown", zone: "outside", name: "", owner: "", type: "" }, label);
      devices[mac] = d;
    }
    if (!d) return;
    d.metrics = m;
    var $l = labelEl(mac);
    if ($l.length) applyMetrics($l, m); else render(d);
  }

  function zoneAt(x, y) {
    var found = null;
    $(".zone").each(function () {
      var r = this.getBoundingClientRect();
      if (x >= r.left && x <= r.right && y >= r.top && y <= r.bottom) found = this.dataset.zone;
    });
    return found;
  }

  function bindDrag($l) {
    // While dragging, a floating copy follows the pointer: the zones scroll, so the
    // label itself would be clipped at its zone's edge.
    var el = $l[0], start = null, dragging = false, over = null, ghost = null;
    el.addEventListener("pointerdown", function (e) {
      if (e.button !== 0) return;
      start = { x: e.clientX, y: e.clientY, id: e.pointerId };
      dragging = false;
      el.setPointerCapture(e.pointerId);
    });
    el.addEventListener("pointermove", function (e) {
      if (!start || e.pointerId !== start.id) return;
      var dx = e.clientX - start.x, dy = e.clientY - start.y;
      if (!dragging && Math.abs(dx) + Math.abs(dy) < DRAG_THRESHOLD) return;
      if (!dragging) {
        var r = el.getBoundingClientRect();
        ghost = $l.clone().removeClass("arrived").addClass("dragging ghost")
          .css({ position: "fixed", left: r.left + "px", top: r.top + "px", width: r.width + "px", margin: 0 })
          .appendTo("body")[0];
        ghost.style.setProperty("--scale", el.style.getPropertyValue("--scale"));
        ghost.style.opacity = el.style.opacity;
        $l.addClass("drag-source");
      }
      dragging = true;
      ghost.style.transform = "translate(" + dx + "px," + dy + "px)";
      var zone = zoneAt(e.clientX, e.clientY);
      if (zone !== over) {
        $(".zone").removeClass("drop-target");
        if (zone) $("#zone-" + zone).addClass("drop-target");
        over = zone;
      }
    });
    function finish(e, cancelled) {
      if (!start || e.pointerId !== start.id) return;
      var wasDragging = dragging;
      start = null; dragging = false; over = null;
      $l.removeClass("drag-source");
      if (ghost) { $(ghost).remove(); ghost = null; }
      $(".zone").removeClass("drop-target");
      var mac = el.dataset.mac;
      if (cancelled) return;
      if (!wasDragging) { handlers.open(mac); return; }
      var zone = zoneAt(e.clientX, e.clientY);
      if (zone && zone !== el.dataset.zone) handlers.drop(mac, zone, devices[mac]);
    }
    el.addEventListener("pointerup", function (e) { finish(e, false); });
    el.addEventListener("pointercancel", function (e) { finish(e, true); });
    el.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); handlers.open(el.dataset.mac); }
    });
  }

  return {
    upsert: upsert, replaceAll: replaceAll, sync: sync, metrics: metrics,
    get: function (mac) { return devices[mac]; },
    on: function (name, fn) { handlers[name] = fn; }
  };
})(jQuery);
