/* The settings page's "Software" section: the running version and slot, the other
   slot's version (GET /ws.v1/system/update); upload a .hwup (POST /ws.v1/system/update, the
   file itself as the body), follow the writing with a progress bar, show why a file was
   refused, and a Reboot button once the update is ready. Runs on its own: the section is
   inside #settings, shown after login (js/settings.js). */
(function ($) {
  "use strict";

  var BASE = "/ws.v1/";
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
    return HW.api.call("GET", "system/update").done(function (s) {
      show(s);
      if (/^(receiving|verifying|writing)$/.test(s.state) && !polling) follow();
    });
  }

  function follow() {
    polling = setInterval(function () {
      HW.api.call("GET", "system/update").done(function (s) {
        show(s);
        if (!/^(receiving|verifying|writing)$/.test(s.state)) { clearInterval(polling); polling = null; }
      });
    }, POLL_MS);
  }

  // The file as the request body (not JSON): the session's CSRF token from /session.
  function send(file, csrf) {
    var xhr = new XMLHttpRequest();
    xhr.open("POST", BASE + "system/update");
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    if (csrf) xhr.setRequestHeader("X-CSRF-Token", csrf);
    xhr.upload.onprogress = function (e) {
      if (!e.lengthComputable) return;
      var pct = Math.floor(e.loaded * 100 / e.total);
      bar(pct);
      say("status", pct < 100 ? "Uploading: " + pct + " %" : "Checking the signature and every file …");
    };
    xhr.onload = function () {
      var body = {};
      try { body = JSON.parse(xhr.responseText); } catch (err) { /* lighttpd's own errors are JSON too */ }
      if (xhr.status === 202) {
        say("status", "Verified " + body.version + ": writing it to slot " + body.slot.toUpperCase() + " …");
        follow();
      } else {
        bar(null);
        say("status", "");
        say("error", body.error || "error " + xhr.status);
        $form().find("button").prop("disabled", false);
      }
    };
    xhr.onerror = function () {
      bar(null);
      say("status", "");
      say("error", "The upload did not reach the router (connection lost).");
      $form().find("button").prop("disabled", false);
    };
    xhr.send(file);
  }

  function upload(e) {
    e.preventDefault();
    var file = this.elements.file.files[0];
    say("error", "");
    say("status", "");
    if (!file) { say("error", "Choose an update file (.hwup) first."); return; }
    $form().find("button").prop("disabled", true);
    bar(0);
    $.ajax({ url: BASE + "session", dataType: "json" }).done(function (s) { send(file, s.csrf); })
      .fail(function (xhr) {
        say("error", HW.api.errorText(xhr));
        $form().find("button").prop("disabled", false);
      });
  }

  function reboot() {
    if (!window.confirm("Reboot the router now? The network is down for a minute or two.")) return;
    var $button = $(this).prop("disabled", true);
    HW.api.call("POST", "system/reboot").done(function () {
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
