/* The board page: once logged in (the page shell), keep the board live from the event
   stream, and make the household's decisions (a drop, a label's Let in / Refuse, the panel's). */
jQuery(function ($) {
  "use strict";
  var es = null, pollTimer = null;
  // ?poll=SECONDS: poll the device list instead of the live stream (for proxies that
  // buffer streams; also the research board's behaviour, which `make bench` compares with).
  var pollSeconds = Number(new URLSearchParams(window.location.search).get("poll")) || 0;
  var shell;

  function setLive(on) {
    $("#live").toggleClass("on", on).toggleClass("off", !on).text(on ? "live" : "offline");
  }

  function stop() {
    if (es) { es.close(); es = null; }
    if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
    setLive(false);
  }

  function start(session) {
    if (HW.panelMode) HW.panelMode.start(session);           // the router's screen, a wall tablet
    if (HW.usageBanner) HW.usageBanner.refresh();
    if (HW.remote) HW.remote.init();       // the "Away from home" button (remote.js)
    if (es) es.close();
    if (pollSeconds > 0) {
      var poll = function () {
        HW.api.request("devices").done(function (views) { HW.board.sync(views); setLive(true); })
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
          .fail(function () { shell.showLogin("Your session ended; please log in again."); });
      }
    });
  }

  /* A decision: `zone` "permitted" lets the device in, "outside" keeps it out. A satellite
     asking to pair is permitted or denied the same way; a permit names the code the board
     showed, so a request that changed since is not signed. */
  function decide(mac, zone, d) {
    var act;
    if (d && d.kind === "access-point") {
      if (zone === "permitted") act = HW.api.request("permitSatellite", { dpid: d.dpid }, { code: d.code });
      else if (zone === "outside") act = HW.api.request("denySatellite", { dpid: d.dpid });
    } else if (zone === "permitted") {
      act = HW.api.request("permit", { mac: mac }).done(function (view) {
        // First permit of a device nobody has named yet: ask whose it is.
        if (d && !d.name) HW.panel.askName($.extend({}, d, view, { label: d.label }));
      });
    } else if (zone === "outside") {
      act = HW.api.request("deny", { mac: mac });
    }
    if (!act) return $.Deferred().reject().promise();
    return act.fail(function (xhr) { if (xhr) window.alert(HW.api.errorText(xhr)); });
  }

  HW.board.on("drop", decide);
  HW.board.on("open", function (mac) {
    if (HW.panelMode && HW.panelMode.active()) { HW.panelMode.open(mac); return; }   // Let in / Keep out
    if (mac.indexOf("ap-") !== 0) HW.panel.open(mac);     // an access point has no device panel
  });
  HW.panel.init();
  shell = HW.shell.page({ main: "#board", start: start, stop: stop });
});
