/* Start-up: log in if needed, then keep the board live from the event stream. */
jQuery(function ($) {
  "use strict";
  var es = null, pollTimer = null;
  // ?poll=SECONDS: poll the device list instead of the live stream (for proxies that
  // buffer streams; also the research board's behaviour, which `make bench` compares with).
  var pollSeconds = Number(new URLSearchParams(window.location.search).get("poll")) || 0;

  function showLogin(message) {
    if (es) { es.close(); es = null; }
    if (HW.panelMode && HW.panelMode.unpaired()) return;      // a panel's session ended (panelmode.js)
    if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
    $("#board, #logout").prop("hidden", true);
    $("#login").prop("hidden", false).find(".error").text(message || "");
    $("#login input[name=password]").val("").trigger("focus");
    setLive(false);
  }

  function setLive(on) {
    $("#live").toggleClass("on", on).toggleClass("off", !on).text(on ? "live" : "offline");
  }

  function start(session) {
    if (HW.panelMode) HW.panelMode.start(session);           // the router's screen, a wall tablet
    if (HW.usageBanner) HW.usageBanner.refresh();
    if (HW.remote) HW.remote.init();       // the "Away from home" button (remote.js)
    $("#login").prop("hidden", true);
    $("#board, #logout").prop("hidden", false);
    if (es) es.close();
    if (pollSeconds > 0) {
      var poll = function () {
        HW.api.call("GET", "devices").done(function (views) { HW.board.sync(views); setLive(true); })
          .fail(function () { setLive(false); });
      };
      poll();
      if (!pollTimer) pollTimer = setInterval(poll, pollSeconds * 1000);
      return;
    }
    es = HW.api.stream({
      snapshot: function (d) { HW.board.replaceAll(d.devices); },
      device: function (d) {
        // A forgotten device has no view any more (state null): its label goes.
        if (d.reason === "forgotten" || (d.state === null && !d.view)) {
          HW.board.remove(d.mac);
          if (HW.panel.current() === d.mac) HW.panel.close();
          return;
        }
        HW.board.upsert(d.view);
        if (HW.panel.current() === d.mac) HW.panel.refresh();
      },
      lease: function (d) { HW.board.upsert(d.view); },
      link: function (d) {
        HW.board.metrics(d.mac, d.metrics, d.label);
        if (HW.panel.current() === d.mac) HW.panel.liveRefresh();
      },
      bandwidth: function (d) { HW.board.metrics(d.mac, d.metrics); },
      alert: function (d) {
        if (HW.panel.current() === d.mac) HW.panel.refresh();
        if (HW.usageBanner) HW.usageBanner.alert(d);
      },
      restart: function (d) { HW.restart.show(d.why, d.back_in, { reset: d.why === "factory reset" }); },
      state: setLive,
      closed: function () {
        // The stream ended: expired session (-> log in) or a restart (-> reconnect).
        if (HW.restart.active()) return;          // the banner brings the page back
        HW.api.session().done(function () { setTimeout(start, 1000); })
          .fail(function () { showLogin("Your session ended; please log in again."); });
      }
    });
  }

  HW.board.on("drop", function (mac, zone, d) {
    if (d && d.kind === "access-point") {      // a satellite switch asking to pair
      var what = zone === "permitted" ? "permit" : zone === "outside" ? "deny" : null;
      // A permit names the code the board showed: if the request changed since, nothing is signed.
      if (what) HW.api.call("POST", "satellites/" + d.dpid + "/" + what, what === "permit" ? { code: d.code } : undefined)
        .fail(function (xhr) { window.alert(HW.api.errorText(xhr)); });
      return;
    }
    var act = zone === "permitted" ? HW.api.permit(mac) : zone === "outside" ? HW.api.deny(mac) : null;
    if (!act) return;
    act.done(function (view) {
      // First permit of a device nobody has named yet: ask whose it is.
      if (zone === "permitted" && d && !d.name) HW.panel.askName($.extend({}, d, view, { label: d.label }));
    }).fail(function (xhr) { window.alert(HW.api.errorText(xhr)); });
  });
  HW.board.on("open", function (mac) {
    if (HW.panelMode && HW.panelMode.active()) { HW.panelMode.open(mac); return; }   // Let in / Keep out
    if (mac.indexOf("ap-") !== 0) HW.panel.open(mac);     // an access point has no device panel
  });
  HW.panel.init();
  HW.api.bindLogin(start, showLogin);

  HW.api.session().done(start).fail(function () { showLogin(); });
});
