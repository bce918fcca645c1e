/* Open from the internet, in the device panel: the device's port forwards (open, or why
   not), the ports it opened itself by UPnP / NAT-PMP / PCP with their expiry and a Close
   button, the "may open ports" tick, and a form to forward a port. Markup added once, as
   the panel's other sections; hidden when the router has no reach component (no
   `open_ports` in the device view). */
window.HW = window.HW || {};
HW.reach = (function ($) {
  "use strict";
  var mac = null;
  // The tick the household just changed, while its request is on its way: a panel refresh
  // that left before it (a device event, the read after another change) must not undo it.
  var ticking = null;     // {mac, allowed}

  function until(expires) {
    if (!expires) return "until closed";
    var d = new Date(expires * 1000);
    return "until " + (d.toDateString() === new Date().toDateString() ? "" : d.toLocaleDateString() + " ") +
      d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  /* "TCP 9000 → its port 8080" in a household's words. */
  function forwardText(f) {
    var proto = f.protocol === "both" ? "TCP and UDP" : f.protocol.toUpperCase();
    var to = f.to_port !== f.first ? " → its port " + f.to_port : "";
    return proto + " " + f.ports + to + (f.description ? " · " + f.description : "");
  }

  function mappingText(m) {
    var proto = m.protocol.toUpperCase();
    var what = m.family === 6 ? proto + " port " + m.port + " (IPv6)"
      : proto + " " + m.port + (m.to_port !== m.port ? " → its port " + m.to_port : "");
    return what + (m.description ? " · " + m.description : "") + " · " + until(m.expires);
  }

  function add() {
    if ($("#panel .open-ports").length) return;
    var $box = $('<section class="open-ports" aria-label="Open from the internet">').append(
      $("<h3>").text("Open from the internet"),
      $('<label class="may-open">').append(
        $('<input type="checkbox" name="may_open_ports">'),
        " May open ports itself (UPnP, NAT-PMP, PCP: games and consoles ask for this)"),
      $('<p class="may-open-note hint">'),
      $('<ul class="forwards">'),
      $('<ul class="mappings">'),
      $('<form class="forward-form">').append(
        $('<input name="ports" required maxlength="11" inputmode="numeric" aria-label="External port or range">')
          .attr("placeholder", "port, e.g. 8080 or 27015-27030"),
        $('<input name="to_port" maxlength="5" inputmode="numeric" aria-label="Its port (optional)">')
          .attr("placeholder", "its port"),
        $('<select name="protocol" aria-label="Protocol">').append(
          $('<option value="tcp">').text("TCP"), $('<option value="udp">').text("UDP"),
          $('<option value="both">').text("TCP and UDP")),
        $('<input name="description" maxlength="64" aria-label="What for">').attr("placeholder", "what for"),
        $('<button type="submit">').text("Forward")),
      $('<p class="reach-error" role="alert">'));
    $("#panel .grid").after($box);

    $box.on("change", "input[name=may_open_ports]", function () {
      var allowed = this.checked, tick = ticking = { mac: mac, allowed: allowed };
      call("POST", "open-ports/" + encodeURIComponent(mac), { allowed: allowed }, null,
           function () { if (ticking === tick) ticking = null; });
    });
    $box.on("submit", ".forward-form", function (e) {
      e.preventDefault();
      var f = this, body = { mac: mac, ports: f.elements.ports.value.trim(), protocol: f.elements.protocol.value };
      if (f.elements.to_port.value.trim()) body.to_port = parseInt(f.elements.to_port.value.trim(), 10) || f.elements.to_port.value;
      if (f.elements.description.value.trim()) body.description = f.elements.description.value.trim();
      call("POST", "forwards", body, function () { f.reset(); });
    });
    $box.on("click", ".forwards .remove", function () {
      call("POST", "forwards/" + encodeURIComponent(this.dataset.id) + "/remove");
    });
    $box.on("click", ".mappings .close-mapping", function () {
      call("POST", "upnp/close", { key: this.dataset.key });
    });
  }

  /* A change, then the panel and the board's label read the device again (`settled`: the
     change has its answer, whichever it was, before that read). */
  function call(method, path, body, done, settled) {
    var shown = mac, $error = $("#panel .reach-error").text("");
    HW.api.call(method, path, body).done(function () {
      if (settled) settled();
      if (done) done();
      HW.api.device(shown).done(function (d) {
        HW.board.upsert(d);
        if (mac === shown) fill(d);
      });
    }).fail(function (xhr) {
      if (settled) settled();
      $error.text(HW.api.errorText(xhr));
      HW.api.device(shown).done(function (d) { if (mac === shown) fill(d); });
    });
  }

  function fill(d) {
    var $box = $("#panel .open-ports");
    if (d.mac !== mac) $box.find(".reach-error").text("");
    mac = d.mac;
    var op = d.open_ports;
    $box.prop("hidden", op === undefined || d.state === "unknown");
    if (op === undefined) return;
    var let_in = d.state === "permitted";
    var tick = ticking && ticking.mac === d.mac ? ticking.allowed : !!d.may_open_ports;
    $box.find("input[name=may_open_ports]").prop("checked", tick).prop("disabled", !let_in && !tick);
    $box.find(".may-open-note").text(let_in ? "" : "Only a device let into the home may open ports.");
    var $fw = $box.find(".forwards").empty();
    (op.forwards || []).forEach(function (f) {
      $fw.append($("<li>").toggleClass("closed", !f.open).append(
        $('<span class="what">').text(forwardText(f)),
        $('<span class="state">').text(f.open ? " · open" : " · closed: " + f.why_closed),
        $('<button type="button" class="secondary remove">Remove</button>').attr("data-id", f.id)
          .attr("aria-label", "Remove the forward of " + f.ports)));
    });
    if (!(op.forwards || []).length) $fw.append($('<li class="none">').text("No ports forwarded."));
    var $maps = $box.find(".mappings").empty();
    (op.mappings || []).forEach(function (m) {
      $maps.append($("<li>").append(
        $('<span class="what">').text("It opened " + mappingText(m)),
        $('<button type="button" class="secondary close-mapping">Close</button>').attr("data-key", m.key)
          .attr("aria-label", "Close " + m.protocol + " port " + m.port)));
    });
  }

  return { add: add, fill: fill, forwardText: forwardText, mappingText: mappingText, until: until };
})(jQuery);
