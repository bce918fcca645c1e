/* Panels: the Guest Board on the router's own screen and on wall tablets, with the panel
   role (they see the board and let devices in or out; no settings). For an admin: the
   board's "Pair a wall tablet" shows a one-time QR code (POST /ws.v1/panels/pair), so nobody
   types the admin password on a shared screen; the settings page's Panels section lists
   the panels with Unpair, and sets when their screens dim at night. */
window.HW = window.HW || {};
HW.panels = (function ($) {
  "use strict";
  var timer = null;

  function when(ts) { return ts ? new Date(ts * 1000).toLocaleString() : ""; }

  /* The pairing dialog: the code's QR (the tablet's camera opens its link), the link itself
     and how long it is good for. */
  function showPairing() {
    var $d = $("#pair-dialog");
    if (!$d.length) {
      $d = $("<dialog id='pair-dialog' aria-labelledby='pair-h'>" +
        "<h2 id='pair-h'>Pair a wall tablet</h2>" +
        "<p class='note'>On the tablet (already let in on this board), scan this code with its camera, or open the " +
        "link. It becomes a panel: it shows the board and lets devices in or out, and cannot change settings.</p>" +
        "<div class='qr' role='img' aria-label='QR code of the pairing link'></div>" +
        "<p class='link'><code></code></p><p class='expires note' role='status'></p>" +
        "<p class='error' role='alert'></p>" +
        "<menu><button type='button' class='close secondary'>Done</button></menu></dialog>").appendTo("body");
      $d.find(".close").on("click", function () { $d[0].close(); });
      $d.on("close", function () { if (timer) { clearInterval(timer); timer = null; } });
    }
    $d.find(".qr").empty();
    $d.find(".link code, .expires, .error").text("");
    if (!$d[0].open) $d[0].showModal();
    return HW.api.call("POST", "panels/pair", {}).done(function (p) {
      $d.find(".qr").html(p.qr_svg || "");
      $d.find(".link code").text(p.url);
      var until = Date.now() + p.expires_in * 1000;
      var tick = function () {
        var left = Math.max(0, Math.round((until - Date.now()) / 1000));
        $d.find(".expires").text(left ? "Good for one tablet, for " + Math.floor(left / 60) + " min " +
          (left % 60) + " s." : "This code has expired: close and pair again.");
        if (!left && timer) { clearInterval(timer); timer = null; $d.find(".qr").empty(); }
      };
      tick();
      if (timer) clearInterval(timer);
      timer = setInterval(tick, 1000);
    }).fail(function (xhr) { $d.find(".error").text(HW.api.errorText(xhr)); });
  }

  /* -- the settings page's Panels section --------------------------------------------- */
  function loadList() {
    return HW.api.call("GET", "panels").done(function (list) {
      var $body = $("#panels .list tbody").empty();
      if (!list.length) $("<tr>").append($("<td colspan='5' class='empty'>").text("No panels paired.")).appendTo($body);
      $.each(list, function (_, p) {
        var $revoke = $("<button type='button' class='secondary'>").text("Unpair").on("click", function () {
          HW.api.call("POST", "panels/" + p.id + "/revoke").done(loadList)
            .fail(function (xhr) { $("#panels .error").text(HW.api.errorText(xhr)); });
        });
        $("<tr>").append($("<td>").text(p.name), $("<td>").text(p.kind === "screen" ? "the router's screen" : "tablet"),
          $("<td>").text(p.device || ""), $("<td>").text(when(p.last_used)),
          $("<td>").append(p.kind === "screen" ? $("<span class='hint'>").text("pairs itself again") : $revoke))
          .appendTo($body);
      });
    });
  }

  function loadNight() {
    return HW.api.call("GET", "panels/display").done(function (s) {
      var f = $("#panel-night")[0];
      if (!f) return;
      f.elements.enabled.checked = s.enabled;
      f.elements.from.value = s.from;
      f.elements.to.value = s.to;
      f.elements.brightness.value = s.night_brightness;
      $("#panels .dim-now").text(s.dim ? "Dimmed now (" + s.brightness + " %)." : "Not dimmed now.");
    });
  }

  function saveNight(e) {
    e.preventDefault();
    var f = this, $f = $(f);
    $f.find(".error, .status").text("");
    var body = f.elements.enabled.checked ?
      { from: f.elements.from.value, to: f.elements.to.value, brightness: Number(f.elements.brightness.value) } :
      { enabled: false };
    HW.api.call("POST", "panels/night", body).done(function () {
      $f.find(".status").text("Saved.");
      loadNight();
    }).fail(function (xhr) { $f.find(".error").text(HW.api.errorText(xhr)); });
  }

  $(function () {
    $(document).on("click", ".pair-tablet", showPairing);
    if ($("#panels").length && HW.settings) {
      $("#panel-night").on("submit", saveNight);
      $("#panels .refresh").on("click", loadList);
      HW.settings.whenShown(function () { loadList(); loadNight(); });
    }
  });

  return { showPairing: showPairing };
})(jQuery);
