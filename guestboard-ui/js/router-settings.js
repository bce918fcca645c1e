/* The settings page's "Router" section: the software version, uptime, time
   zone, state schema and update slot (GET /ws.v1/system); set the time zone (used at
   once, no restart), change the admin password (every session
   ends: log in again), and a factory reset behind a typed confirmation. Runs on its own:
   the section is inside #settings, shown after login (js/settings.js). */
(function ($) {
  "use strict";

  var CONFIRM = "erase everything";

  function say($form, which, text) { $form.find("." + which).text(text || ""); }

  function duration(seconds) {
    var d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600), m = Math.floor(seconds % 3600 / 60);
    return d ? d + " d " + h + " h" : h ? h + " h " + m + " min" : m + " min";
  }

  // The WAN's lease ([router] wan_lease_file): address, gateway, DNS servers, how long it has been up.
  function wanText(w) {
    if (!w.up) return "no lease from the ISP (not connected?)";
    return w.address + " on " + w.interface + (w.gateway ? " via " + w.gateway : "") +
      "; DNS " + (w.dns.length ? w.dns.join(", ") : "none") +
      (w.up_for !== null ? "; up for " + duration(w.up_for) : "");
  }

  function load() {
    return HW.api.call("GET", "system").done(function (s) {
      var $r = $("#router");
      $r.find(".version").text(s.version);
      $r.find(".uptime").text(duration(s.uptime));
      $r.find(".timezone").text((s.timezone || "the system's") +
        (s.timezone_source === "board" ? " (set here)" : " (from the configuration file)"));
      $r.find(".schema").text(s.schema);
      $r.find(".slot").text(s.update_slot);
      $r.find(".wan-row").prop("hidden", !s.wan);
      if (s.wan) $r.find(".wan").text(wanText(s.wan));
    });
  }

  function submitter(handler) {
    return function (e) {
      e.preventDefault();
      var $form = $(this);
      say($form, "error", "");
      say($form, "status", "");
      var request = handler($form, this.elements);
      if (!request) return;
      var $button = $form.find("button").prop("disabled", true);
      request.fail(function (xhr) { say($form, "error", HW.api.errorText(xhr)); })
        .always(function () { $button.prop("disabled", false); });
    };
  }

  var setTimezone = submitter(function ($form, f) {
    return HW.api.call("POST", "system/timezone", { timezone: f.timezone.value.trim() }).done(function (r) {
      say($form, "status", "Time zone set to " + r.timezone + ". " + (r.note || ""));
      load();
    });
  });

  var changePassword = submitter(function ($form, f) {
    return HW.api.call("POST", "password", { old: f.old.value, "new": f["new"].value }).done(function () {
      $form[0].reset();
      say($form, "status", "Password changed: every session ended, log in again with the new password.");
    });
  });

  var factoryReset = submitter(function ($form, f) {
    if (f.confirm.value !== CONFIRM) {
      say($form, "error", "Type " + CONFIRM + " exactly to confirm.");
      return null;
    }
    return HW.api.call("POST", "factory-reset", { confirm: CONFIRM }).done(function (r) {
      $form[0].reset();
      say($form, "status", "Factory reset: " + r.note + ". Every device is a stranger now, this one too: open " +
          "any web page on it and choose \u201cThis is my router: set it up\u201d. On the Wi-Fi, give this set-up code " +
          "there (write it down): " + r.setup_code + ". A computer plugged into the router needs no code.");
      HW.restart.show("factory reset", r.back_in, { reset: true });
    });
  });

  $(function () {
    $("#router-timezone").on("submit", setTimezone);
    $("#router-password").on("submit", changePassword);
    $("#router-reset").on("submit", factoryReset);
    HW.settings.whenShown(load);
  });
})(jQuery);
