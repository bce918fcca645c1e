/* "The router is restarting, back in about N s": shown when the controller restarts in
   place (a restore, a factory reset, a satellite's cable), instead of bare errors while it
   is away. Told by the board's event stream (`restart`, for every open board) or by the
   answer of the page that asked for it (back_in). Counts down, then asks the router until
   it answers and reloads the page. After a factory reset this device is a stranger too:
   the page then goes to the waiting page (http://), where the router offers its set-up. */
window.HW = window.HW || {};
HW.restart = (function ($) {
  "use strict";
  var POLL_MS = 2000, GIVE_UP_MS = 15 * 60 * 1000;
  var active = false, $banner = null, timer = null;

  function banner() {
    if (!$banner) {
      $banner = $("<div>", { id: "restart-banner", role: "status" }).css({
        position: "fixed", left: 0, right: 0, top: 0, zIndex: 1000, padding: "0.8em 1em",
        background: "#23415f", color: "#fff", fontSize: "16px", textAlign: "center"
      }).appendTo("body");
    }
    return $banner;
  }

  function say(text, link) {
    var $b = banner().empty().text(text);
    if (link) $b.append(" ", $("<a>", { href: link, text: link }).css({ color: "#fff", fontWeight: "bold" }));
  }

  function minutes(s) {
    s = Math.max(0, Math.round(s));
    return Math.floor(s / 60) + ":" + ("0" + (s % 60)).slice(-2);
  }

  /* Back when the API answers anything but "not reachable" (lighttpd's 502/503 while the
     controller is away): 200 or 401 (a restore ends the sessions). */
  function poll(startedAt, stay) {
    function back() {
      clearInterval(timer);
      say("The router is back.");
      setTimeout(function () {
        if (!stay) { window.location.reload(); return; }
        banner().remove();
        $banner = null;
        active = false;
      }, 1000);
    }
    $.ajax({ url: "/ws.v1/session", dataType: "json", timeout: 5000 }).done(back).fail(function (xhr) {
      if (xhr.status === 401) { back(); return; }
      if (Date.now() - startedAt > GIVE_UP_MS) {
        clearInterval(timer);
        say("The router has not come back yet. Wait a little longer, then reload this page.");
        return;
      }
      setTimeout(function () { poll(startedAt, stay); }, POLL_MS);
    });
  }

  /* show(why, backIn seconds, {reset: true} after a factory reset; {stay: true}: the page
     that asked tells the outcome itself, so the banner goes once the router is back instead
     of reloading the page) */
  function show(why, backIn, options) {
    if (active) return;
    active = true;
    var reset = options && options.reset;
    var started = Date.now(), expected = (backIn || 30) * 1000;
    var waiting = "http://" + window.location.hostname + "/";
    function tick() {
      var left = (expected - (Date.now() - started)) / 1000;
      if (reset) {
        say("Factory reset: the router is restarting and should be back in about " + (backIn || 30) +
            " s (" + minutes(left) + " left). Every device is a stranger then, this one too: it then opens the " +
            "router's waiting page, where you set the router up again. You can also open it yourself:", waiting);
        if (left <= -5) { clearInterval(timer); window.location.href = waiting; }
        return;
      }
      say(left > 0 ? "The router is restarting (" + why + ") and should be back in about " + (backIn || 30) +
          " s (" + minutes(left) + " left). This page comes back by itself."
        : "The router is restarting (" + why + ") and is taking longer than expected; this page comes back by itself.");
    }
    tick();
    timer = setInterval(tick, 1000);
    // it stops answering a second after it said so: ask from a few seconds on
    if (!reset) setTimeout(function () { poll(Date.now(), options && options.stay); }, 3000);
  }

  return { show: show, active: function () { return active; } };
})(jQuery);
