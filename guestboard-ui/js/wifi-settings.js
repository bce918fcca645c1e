/* The settings page's "Wi-Fi" section: the network name and a new passphrase
   (GET/POST /ws.v1/wifi). The passphrase is never shown, only replaced; the controller
   checks it (8-63 printable ASCII or 64 hex digits) and its message is shown as it is. */
(function ($) {
  "use strict";

  function say(which, text) { $("#wifi-form ." + which).text(text || ""); }

  function load() {
    return HW.api.call("GET", "wifi").done(function (w) {
      $("#wifi-form [name=ssid]").val(w.ssid);
      $("#wifi .interfaces").text(w.interfaces.length ? "Access point on " + w.interfaces.join(", ") + "." :
        "No Wi-Fi interface is in use on this router.");
    });
  }

  function save(e) {
    e.preventDefault();
    var f = this.elements;
    say("error", ""); say("status", "");
    if (f.passphrase.value !== f.again.value) { say("error", "The two passphrases differ."); return; }
    var $button = $("#wifi-form button").prop("disabled", true);
    HW.api.call("POST", "wifi", { ssid: f.ssid.value, passphrase: f.passphrase.value }).done(function (r) {
      f.passphrase.value = f.again.value = "";
      say("status", "Saved: network " + r.ssid + ". " + (r.note || ""));
    }).fail(function (xhr) { say("error", HW.api.errorText(xhr)); })
      .always(function () { $button.prop("disabled", false); });
  }

  $(function () {
    $("#wifi-form").on("submit", save);
    HW.settings.whenShown(load);
  });
})(jQuery);
