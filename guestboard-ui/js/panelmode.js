/* The board as a panel: the router's own screen (its kiosk) or a paired wall tablet, signed
   in with the panel role (components/api/panels.py). It shows the board and lets devices in
   or out: tapping a label offers Let in / Keep out instead of the device's settings, and
   nothing that needs the admin role is shown. At night (GET /ws.v1/panels/display) the
   page darkens itself; a tap lights it for a minute. If the panel is unpaired, the router's
   screen closes the page (its kiosk starts again and pairs itself anew) and a tablet says
   how to pair it again. */
window.HW = window.HW || {};
HW.panelMode = (function ($) {
  "use strict";
  var POLL_MS = 30000, WAKE_MS = 60000;
  var active = false, kind = "", poll = null, wakeUntil = 0, display = { dim: false, brightness: 100 };

  function shade() {
    var $s = $("#night-shade");
    if (!$s.length) {
      $s = $("<div id='night-shade' aria-hidden='true'>").appendTo("body");
      // While dimmed, the first tap only lights the screen: nothing behind it is pressed.
      $s.on("pointerdown", function (e) {
        e.preventDefault();
        e.stopPropagation();
        wakeUntil = Date.now() + WAKE_MS;
        render();
        setTimeout(render, WAKE_MS + 50);
      });
    }
    return $s;
  }

  function render() {
    var pct = Date.now() < wakeUntil ? 100 : display.brightness;
    shade().css("opacity", (100 - pct) / 100).toggleClass("on", pct < 100);
  }

  function refreshDisplay() {
    HW.api.call("GET", "panels/display").done(function (s) { display = s; render(); });
  }

  function start(session) {
    active = !!session && session.role === "panel";
    $("body").toggleClass("panel-mode", active).removeClass("panel-screen panel-tablet");
    if (!active) return false;
    kind = session.panel || "tablet";
    try { window.localStorage.setItem("hw-panel", kind); } catch (e) { /* private mode */ }
    $("body").addClass("panel-" + kind);
    $("#panel-setup-note").prop("hidden", session.set_up !== false);
    refreshDisplay();
    if (!poll) poll = setInterval(refreshDisplay, POLL_MS);
    return true;
  }

  /* The session is gone (revoked, a factory reset): true when this page handled it. */
  function unpaired() {
    var was;
    try { was = window.localStorage.getItem("hw-panel"); } catch (e) { was = null; }
    if (!active && !was) return false;
    if (poll) { clearInterval(poll); poll = null; }
    if ((kind || was) === "screen") {
      window.close();            // the kiosk's browser ends; its service starts it again, paired anew
      return true;
    }
    try { window.localStorage.removeItem("hw-panel"); } catch (e) { /* nothing kept */ }
    $("#board, #logout").prop("hidden", true);
    $("#panel-unpaired").prop("hidden", false);
    active = false;
    return true;
  }

  /* A tap on a label: Let in / Keep out, the panel's two decisions. */
  function open(mac) {
    var $d = $("#decide-dialog");
    if (!$d.length) {
      $d = $("<dialog id='decide-dialog' aria-labelledby='decide-h'><h2 id='decide-h'></h2><p class='note'></p>" +
        "<p class='error' role='alert'></p><menu>" +
        "<button type='button' class='keep-out danger'>Keep out</button>" +
        "<button type='button' class='let-in'>Let in</button>" +
        "<button type='button' class='close secondary'>Close</button></menu></dialog>").appendTo("body");
      $d.find(".close").on("click", function () { $d[0].close(); });
    }
    HW.api.device(mac).done(function (d) {
      $d.find("h2").text(d.label || mac);
      $d.find(".note").text(d.state === "permitted" ? "On the network." : d.state === "pending" ?
        "Asking to join." : "Kept out.");
      $d.find(".error").text("");
      $d.find(".let-in").prop("hidden", d.state === "permitted").off("click").on("click", function () {
        HW.api.permit(mac).done(function (view) {
          $d[0].close();
          if (!d.name) HW.panel.askName($.extend({}, d, view, { label: d.label }));
        }).fail(function (xhr) { $d.find(".error").text(HW.api.errorText(xhr)); });
      });
      $d.find(".keep-out").prop("hidden", d.state === "denied").off("click").on("click", function () {
        HW.api.deny(mac).done(function () { $d[0].close(); })
          .fail(function (xhr) { $d.find(".error").text(HW.api.errorText(xhr)); });
      });
      if (!$d[0].open) $d[0].showModal();
    });
  }

  return { start: start, unpaired: unpaired, open: open, active: function () { return active; } };
})(jQuery);
