/* The household cap banner: from 80 % of this billing period's allowance (the alerts
   usage-80 and usage-100) the board says so under its header, with a link to
   the usage page. Asks GET /ws.v1/usage/cap when the page opens, after a login, every
   minute, and at once when the event stream brings a usage alert. Standalone, like banner.js; styles
   from script (CSSOM), which the page's CSP allows. */
(function ($) {
  "use strict";
  var POLL_MS = 60000;
  var WARN_PERCENT = 80;
  var $banner = null;

  function banner() {
    if (!$banner) {
      $banner = $("<div>", { id: "usage-banner", role: "status", hidden: true }).css({
        padding: "0.5em 1em", margin: 0, textAlign: "center", fontWeight: "bold"
      });
      var $header = $("header").first();
      if ($header.length) $banner.insertAfter($header); else $banner.prependTo("body");
    }
    return $banner;
  }

  function size(bytes) {
    var units = ["B", "kB", "MB", "GB", "TB"], i = 0;
    while (bytes >= 1000 && i < units.length - 1) { bytes /= 1000; i++; }
    return (i ? bytes.toFixed(1) : String(bytes)) + " " + units[i];
  }

  function show(c) {
    if (!c || !c.cap || c.percent === null || c.percent < WARN_PERCENT) {
      if ($banner) $banner.prop("hidden", true).empty();
      return;
    }
    var over = c.percent >= 100;
    var text = (over ? "The household has used its allowance: " : "The household has used ") +
      c.percent + "% of this month's " + size(c.cap) +
      (over ? "." : " (" + size(c.projected) + " projected by the billing day).") + " ";
    banner().css({ background: over ? "#b3261e" : "#f2c744", color: over ? "#fff" : "#222" })
      .empty().append(document.createTextNode(text))
      .append($("<a>", { href: "usage.html", text: "Who used what" }).css({ color: "inherit" }))
      .prop("hidden", false);
  }

  function check() {
    $.ajax({ url: "/ws.v1/usage/cap", dataType: "json" })
      .done(show)
      .fail(function () { show(null); });     // logged out, or no usage component: nothing to say
  }

  $(function () {
    check();
    setInterval(check, POLL_MS);
    // main.js's stream hands every alert to HW.usageBanner.alert (see main.js).
    window.HW = window.HW || {};
    HW.usageBanner = { refresh: check, alert: function (d) { if (d && /^usage-/.test(d.kind || "")) check(); } };
  });
})(jQuery);
