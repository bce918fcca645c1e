/* The settings page's "Hardware" section: the router's ports (what each is for and why,
   driver, link), its Wi-Fi cards (driver, firmware, access point per band, stations) and a
   sentence for whatever cannot work, from GET /ws.v1/system's "hardware" (gathered by the
   controller from sysfs, ethtool, iw and the kernel log; nox-modules/homework/hardware). */
(function ($) {
  "use strict";

  var ROLE = { wan: "Internet (WAN)", lan: "Home network", satellite: "Satellite cable", unused: "Not used" };

  function speed(mbps) {
    if (!mbps) return "";
    return mbps >= 1000 ? (mbps / 1000) + " Gb/s" : mbps + " Mb/s";
  }

  function cell(text) { return $("<td>").text(text === undefined || text === null ? "" : text); }

  function link(p) {
    if (p.carrier === null) return "port switched off";
    if (!p.carrier) return "no link";
    return "up" + (p.speed_mbps ? " at " + speed(p.speed_mbps) : "") +
      (p.max_speed_mbps ? " (up to " + speed(p.max_speed_mbps) + ")" : "");
  }

  function firmware(r) {
    if (r.firmware === "missing") return "missing: " + r.firmware_missing.join(", ");
    if (r.firmware === "loaded") return "loaded" + (r.firmware_version ? " (" + r.firmware_version + ")" : "");
    return r.firmware;
  }

  function access(r) {
    if (r.ap_mode === null) return "not known (the router could not read it)";
    if (!r.ap_mode) return "cannot be an access point";
    return $.map(r.bands, function (b) { return b.band + (b.ap ? " yes" : " no"); }).join(", ") || "no bands";
  }

  function render(hw) {
    var $s = $("#hardware");
    var $problems = $s.find(".problems").empty();
    $.each(hw.problems || [], function (_, pr) {
      $("<li>").addClass(pr.severity).text(pr.message).appendTo($problems);
    });
    $s.find(".no-problems").prop("hidden", (hw.problems || []).some(function (p) { return p.severity !== "info"; }));
    var $ports = $s.find(".ports tbody").empty();
    $.each(hw.ports || [], function (_, p) {
      $("<tr>").append(cell(p.name), cell(ROLE[p.role] || p.role).attr("title", p.role_reason),
        cell(p.role_reason), cell((p.chip ? p.chip + " " : "") + "(" + (p.driver || "no driver") + ")"),
        cell(p.mac), cell(link(p))).appendTo($ports);
    });
    var $radios = $s.find(".radios tbody").empty();
    $.each(hw.radios || [], function (_, r) {
      $("<tr>").append(cell(r.interfaces.join(", ") || "none"),
        cell((r.chip ? r.chip + " " : "") + "(" + (r.driver || "no driver") + ")"), cell(firmware(r)),
        cell(access(r)), cell(r.max_stations === null ? "not stated" : r.max_stations),
        cell(r.serving ? "yes" : "no")).appendTo($radios);
    });
    $s.find(".radios").prop("hidden", !(hw.radios || []).length);
    $s.find(".no-radios").prop("hidden", !!(hw.radios || []).length);
  }

  function load() {
    return HW.api.call("GET", "system").done(function (s) { if (s.hardware) render(s.hardware); });
  }

  $(function () {
    $("#hardware .refresh").on("click", load);
    HW.settings.whenShown(load);
  });
})(jQuery);
