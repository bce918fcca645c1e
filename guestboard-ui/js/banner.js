/* The "storage full" banner: the router keeps routing and the board keeps reading when its
   state disk is full, but changes cannot be saved. GET /ws.v1/session says so
   ({storage: {full, writable, error, queued_writes}}); we ask every few seconds while
   logged in and show or hide one banner under the header. Standalone: no other script
   depends on it. Styles are set from script (CSSOM), which the page's CSP allows. */
(function ($) {
  "use strict";
  var POLL_MS = 5000;
  var $banner = null;

  function banner() {
    if (!$banner) {
      $banner = $("<div>", { id: "storage-banner", role: "alert", hidden: true }).css({
        background: "#b3261e", color: "#fff", padding: "0.6em 1em", margin: 0,
        fontWeight: "bold", textAlign: "center"
      });
      var $header = $("header").first();
      if ($header.length) $banner.insertAfter($header); else $banner.prependTo("body");
    }
    return $banner;
  }

  function message(storage) {
    var what = storage.full ? "The router's storage is full."
                            : "The router cannot save its settings right now (" + storage.error + ").";
    var waiting = storage.queued_writes > 0
      ? " " + storage.queued_writes + " recent changes are kept in memory and will be saved then." : "";
    return what + " Devices stay online and the board keeps working, but new decisions, names and " +
           "rules cannot be saved until space is freed." + waiting;
  }

  function show(storage) {
    if (storage && storage.writable === false) {
      banner().text(message(storage)).prop("hidden", false);
    } else if ($banner) {
      $banner.prop("hidden", true).text("");
    }
  }

  function check() {
    HW.api.request("session", null, undefined, { quiet: true })
      .done(function (s) { show(s && s.storage); })
      .fail(function () { show(null); })      // logged out: nothing to say here
      .always(function () { setTimeout(check, POLL_MS); });
  }

  $(check);
})(jQuery);
