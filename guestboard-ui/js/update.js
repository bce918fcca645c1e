/* The settings page's "Software" section: the running version and slot, the other
   slot's version (GET /ws.v1/system/update); upload a .hwup (POST /ws.v1/system/update, the
   file itself as the body), follow the writing with a progress bar, show why a file was
   refused, and a Reboot button once the update is ready. Runs on its own: the section is
   inside #settings, shown after login (js/settings.js). */
(function ($) {
  "use strict";

  var POLL_MS = 500;
  var polling = null;

  function $form() { return $("#update-upload"); }
  function say(which, text) { $form().find("." + which).text(text || ""); }
  function bar(percent) { $form().find("progress").prop("hidden", percent === null).val(percent || 0); }

  function slotText(o) {
    if (!o) return "none (this system has no A/B slots)";
    var what = { empty: "empty", trying: "to be tried at the next boot", good: "good", failed: "failed to start" };
    return o.slot.toUpperCase() + ": " + (o.version ? o.version + ", " : "") + (what[o.state] || o.state);
  }

  function show(s) {
    var $s = $("#software");
    var r = s.running;
    $s.find(".running").text(r.version + " (build " + r.sequence + ")" +
      (r.slot ? ", slot " + r.slot.toUpperCase() : ""));
    $s.find(".other").text(slotText(s.other));
    $("#update-reboot").prop("hidden", s.state !== "ready-to-reboot");
    $form().find("button").prop("disabled", !s.enabled || /^(receiving|verifying|writing)$/.test(s.state));
    if (!s.enabled) say("status", "Updates are off on this system (flash a new image instead).");
    if (s.state === "writing" || s.state === "verifying") {
      bar(s.percent);
      say("status", "Writing " + (s.version || "the update") + " to the other slot: " + s.percent + " %");
    } else if (s.state === "ready-to-reboot") {
      bar(100);
      say("status", "Ready to reboot: " + s.version + " is written. Reboot to start it.");
    } else if (s.state === "failed") {
      bar(null);
      say("status", "");
      say("error", s.error);
    }
    return s;
  }

  function load() {
    return HW.api.request("update").done(function (s) {
      show(s);
      if (/^(receiving|verifying|writing)$/.test(s.state) && !polling) follow();
    });
  }

  function follow() {
    polling = setInterval(function () {
      HW.api.request("update").done(function (s) {
        show(s);
        if (!/^(receiving|verifying|writing)$/.test(s.state)) { clearInterval(polling); polling = null; }
      });
    }, POLL_MS);
  }

  /* The file itself as the request body (not JSON), with a progress bar while it goes up. */
  function upload(e) {
    e.preventDefault();
    var file = this.elements.file.files[0];
    say("error", "");
    say("status", "");
    if (!file) { say("error", "Choose an update file (.hwup) first."); return; }
    $form().find("button").prop("disabled", true);
    bar(0);
    HW.api.upload("upload", null, file, function (p) {
      if (!p.lengthComputable) return;
      var pct = Math.floor(p.loaded * 100 / p.total);
      bar(pct);
      say("status", pct < 100 ? "Uploading: " + pct + " %" : "Checking the signature and every file …");
    }).done(function (r) {
      say("status", "Verified " + r.version + ": writing it to slot " + r.slot.toUpperCase() + " …");
      follow();
    }).fail(function (xhr) {
      bar(null);
      say("status", "");
      say("error", xhr.status ? HW.api.errorText(xhr) : "The upload did not reach the router (connection lost).");
      $form().find("button").prop("disabled", false);
    });
  }

  function reboot() {
    if (!window.confirm("Reboot the router now? The network is down for a minute or two.")) return;
    var $button = $(this).prop("disabled", true);
    HW.api.request("reboot").done(function () {
      say("status", "Rebooting: this page works again in a minute or two, with the new version if it started fine.");
    }).fail(function (xhr) {
      say("error", HW.api.errorText(xhr));
      $button.prop("disabled", false);
    });
  }

  $(function () {
    $("#update-upload").on("submit", upload);
    $("#update-reboot").on("click", reboot);
    HW.settings.whenShown(load);
  });
})(jQuery);
