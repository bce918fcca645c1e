/* The Open ports page: every device with a port open from the internet (or allowed to open
   ports), its forwards with whether each is open now and why not, and the ports it opened
   itself with their expiry; Remove and Close act at once. Read again every REFRESH_MS, as
   mappings come and go by themselves. */
jQuery(function ($) {
  "use strict";
  var REFRESH_MS = 5000;
  var timer = 0;

  function showLogin(message) {
    clearTimeout(timer);
    $("#open-ports, #logout").prop("hidden", true);
    $("#login").prop("hidden", false).find(".error").text(message || "");
    $("#login input[name=password]").val("").trigger("focus");
  }

  function act(method, path, body) {
    $("#open-ports .error").text("");
    HW.api.call(method, path, body).done(load).fail(function (xhr) {
      $("#open-ports .error").text(HW.api.errorText(xhr));
    });
  }

  function show(rows) {
    var $list = $("#open-ports .devices").empty();
    rows.forEach(function (d) {
      var $ul = $("<ul>");
      d.forwards.forEach(function (f) {
        $ul.append($("<li>").toggleClass("closed", !f.open).append(
          $('<span class="what">').text("Forward: " + HW.reach.forwardText(f)),
          $('<span class="state">').text(f.open ? "open" : "closed: " + f.why_closed),
          $('<button type="button" class="secondary remove">Remove</button>').attr("data-id", f.id)));
      });
      d.mappings.forEach(function (m) {
        $ul.append($("<li>").append(
          $('<span class="what">').text("Opened itself: " + HW.reach.mappingText(m)),
          $('<button type="button" class="secondary close-mapping">Close</button>').attr("data-key", m.key)));
      });
      if (!d.forwards.length && !d.mappings.length) $ul.append($('<li class="none">').text("Nothing open now."));
      $list.append($('<section class="device">').attr("data-mac", d.mac).append(
        $("<h3>").text(d.device + (d.may_open_ports ? " · may open ports itself" : "")), $ul));
    });
    if (!rows.length) $list.append($("<p>").text("Nothing is open from the internet."));
  }

  function load() {
    clearTimeout(timer);
    timer = setTimeout(load, REFRESH_MS);
    HW.api.call("GET", "open-ports").done(show).fail(function (xhr) {
      $("#open-ports .error").text(xhr.status === 503 ? "This router cannot open ports (its reach component is not loaded)."
                                                        : HW.api.errorText(xhr));
    });
    HW.api.call("GET", "upnp").done(function (u) {
      $("#open-ports .upnp-note").text(u.note || (u.running ? "" : "Devices cannot open ports themselves now."));
    });
  }

  function start() {
    $("#login").prop("hidden", true);
    $("#open-ports, #logout").prop("hidden", false);
    load();
  }

  $("#open-ports").on("click", ".remove", function () {
    act("POST", "forwards/" + encodeURIComponent(this.dataset.id) + "/remove");
  });
  $("#open-ports").on("click", ".close-mapping", function () {
    act("POST", "upnp/close", { key: this.dataset.key });
  });
  HW.api.bindLogin(start, showLogin);
  HW.api.session().done(start).fail(function () { showLogin(); });
});
