/* Away from home (remote access over WireGuard): the header's "Away from home" button adds
   a device that connects from outside; the router makes its keys and the dialog shows its
   WireGuard configuration as a QR code (to scan with the WireGuard app) and a file. The new
   device then asks to join like any other. A remote device's panel says where it connects
   from, and shows its configuration again. Hidden when the router has no remote component
   (GET remote answers 503). */
window.HW = window.HW || {};
HW.remote = (function ($) {
  "use strict";

  function ago(epoch) {
    var s = Math.max(0, Math.round(Date.now() / 1000 - epoch));
    if (s < 90) return s + " s ago";
    if (s < 5400) return Math.round(s / 60) + " min ago";
    if (s < 172800) return Math.round(s / 3600) + " h ago";
    return Math.round(s / 86400) + " days ago";
  }

  /* "connected from 198.51.100.1, last spoke 12 s ago" in a household's words. */
  function where(away) {
    if (!away.last_handshake) return "Not connected yet: scan its code with the WireGuard app.";
    var from = away.endpoint ? away.endpoint.replace(/:\d+$/, "").replace(/^\[|\]$/g, "") : "somewhere";
    return (away.connected ? "Connected from " : "Last connected from ") + from + ", " + ago(away.last_handshake) + ".";
  }

  function dialog() {
    var $d = $("#remote-dialog");
    if ($d.length) return $d;
    $d = $('<dialog id="remote-dialog" aria-labelledby="remote-title">').append(
      $('<form class="remote-form">').append(
        $('<h2 id="remote-title">').text("A device away from home"),
        $('<p class="note">').text("A phone or laptop that reaches home over WireGuard from anywhere: it gets its own " +
          "address, asks to join like any device, and has the same rules as at home."),
        $("<label>").text("Name ").append($('<input name="name" maxlength="64" required>').attr("placeholder", "Dad's phone")),
        $("<label>").text("Owner ").append($('<input name="owner" maxlength="64">')),
        $('<p class="error" role="alert">'),
        $("<menu>").append($('<button type="button" class="secondary cancel">').text("Cancel"),
                           $('<button type="submit">').text("Make its key"))),
      $('<section class="remote-result" hidden>').append(
        $("<h2>").append($('<span class="who">')),
        $('<p class="note">').text("Scan this with the WireGuard app on the device (add a tunnel, from a QR code), " +
          "or copy the file to it. Then let it in on the board when it asks to join."),
        $('<img class="qr" alt="the device\'s WireGuard configuration as a QR code" width="280" height="280">'),
        $("<p>").append($('<a class="download" download>').text("Download the configuration file")),
        $("<menu>").append($('<button type="button" class="done">').text("Done"))));
    $("body").append($d);
    $d.on("click", ".cancel, .done", function () { $d[0].close(); });
    $d.on("submit", ".remote-form", function (e) {
      e.preventDefault();
      var f = this, $error = $d.find(".error").text("");
      $(f).find("button[type=submit]").prop("disabled", true).text("Making its key…");
      HW.api.call("POST", "remote", { name: f.elements.name.value.trim(), owner: f.elements.owner.value.trim() || undefined })
        .done(function (view) { show(view); HW.api.device(view.mac).done(function (d) { HW.board.upsert(d); }); })
        .fail(function (xhr) { $error.text(HW.api.errorText(xhr)); })
        .always(function () { $(f).find("button[type=submit]").prop("disabled", false).text("Make its key"); });
    });
    return $d;
  }

  /* The configuration of a remote device: its QR code and its file, from the API. */
  function show(view) {
    var $d = dialog();
    $d.find(".remote-form").prop("hidden", true);
    var $r = $d.find(".remote-result").prop("hidden", false);
    $r.find(".who").text(view.name);
    var mac = encodeURIComponent(view.mac);
    $r.find("img.qr").attr("src", "/ws.v1/remote/" + mac + "/qr.svg?t=" + Date.now());
    $r.find("a.download").attr("href", "/ws.v1/remote/" + mac + "/config").attr("download", view.file_name);
    if (!$d[0].open) $d[0].showModal();
  }

  function open() {
    var $d = dialog();
    $d.find(".remote-form").prop("hidden", false)[0].reset();
    $d.find(".remote-result").prop("hidden", true);
    $d.find(".error").text("");
    $d[0].showModal();
  }

  /* The panel's line for a remote device (its `away` facts). */
  function fill(d) {
    var $p = $("#panel");
    var $box = $p.find(".away");
    if (!$box.length) {
      $box = $('<section class="away">').append($("<h3>").text("Away from home"), $('<p class="where">'),
        $('<button type="button" class="secondary show-config">').text("Show its configuration"));
      $p.find(".grid").after($box);
      $box.on("click", ".show-config", function () {
        HW.api.call("GET", "remote").done(function (r) {
          var view = (r.devices || []).filter(function (x) { return x.mac === $box.attr("data-mac"); })[0];
          if (view) { $p[0].close(); show(view); }
        });
      });
    }
    $box.attr("data-mac", d.mac).prop("hidden", !d.away);
    if (d.away) $box.find(".where").text(where(d.away));
  }

  function init() {
    HW.api.call("GET", "remote").done(function () {
      if ($("#remote-button").length) return;
      $('<button id="remote-button" type="button" class="secondary">').text("Away from home")
        .attr("title", "A device that connects from outside, over WireGuard").insertBefore("#logout").on("click", open);
    });
  }

  return { init: init, open: open, show: show, fill: fill, where: where };
})(jQuery);
