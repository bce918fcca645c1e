/* The settings page's "Name lookups (DNS)" section: where the router looks names up (the
   internet provider in plain DNS, or resolvers over TLS, with the fallback for when those
   cannot be reached) and whether that works; DNSSEC checking and the domains it is off for.
   GET/POST /ws.v1/dns/upstream, /ws.v1/dns/dnssec, /ws.v1/dns/dnssec/insecure. Runs whenever
   the settings become visible (after login, js/settings.js). Text only. */
(function ($) {
  "use strict";

  var $section;
  var CHECK_AGAIN_MS = 2000;      // "checking": the router looks at a new choice within seconds

  function say(which, text) { $section.find("." + which).text(text || ""); }

  function renderUpstream(u) {
    say("upstream-status", u.message);
    $section.find(".upstream-status").attr("data-state", u.state);
    var $list = $section.find(".upstream-servers").empty();
    (u.servers_status || []).forEach(function (s) {
      $("<li>", { "class": s.reachable ? "ok" : "down" })
        .text(s.server + ": " + (s.reachable ? "answers (" + s.rtt_ms + " ms)" : s.why)).appendTo($list);
    });
    var form = document.getElementById("dns-upstream");
    if (!$(form).data("editing")) {
      form.elements.provider.value = u.provider;
      form.elements.servers.value = u.provider === "custom" ? u.servers.join("\n") : "";
      $(form).find("input[name=fallback][value=" + u.fallback + "]").prop("checked", true);
      showCustom();
    }
    if (u.state === "checking") setTimeout(loadUpstream, CHECK_AGAIN_MS);
  }

  function renderDnssec(d) {
    $section.find("input[name=dnssec]").prop("checked", !!d.enabled);
    say("dnssec-status", d.message || (d.enabled ? (d.validating ? "Checking signatures." : "")
                                                 : "Signatures are not checked."));
    var $list = $section.find("ul.insecure").empty();
    if (!d.insecure.length) $("<li>", { "class": "empty" }).text("None: every signed domain is checked.").appendTo($list);
    d.insecure.forEach(function (domain) {
      $("<li>").attr("data-domain", domain).append(
        $("<span>").text(domain + " "),
        $("<button>", { type: "button", "class": "remove secondary" }).text("Check again")
          .on("click", function () { removeInsecure(domain); })).appendTo($list);
    });
  }

  function fail(xhr) { say("status", ""); say("error", HW.api.errorText(xhr)); }

  function loadUpstream() { return HW.api.call("GET", "dns/upstream").done(renderUpstream).fail(fail); }

  function load() {
    say("error", "");
    loadUpstream();
    HW.api.call("GET", "dns/dnssec").done(renderDnssec).fail(fail);
  }

  function showCustom() {
    var form = document.getElementById("dns-upstream");
    var encrypted = form.elements.provider.value !== "isp";
    $(form).find(".custom-servers").prop("hidden", form.elements.provider.value !== "custom");
    $(form).find(".fallback").prop("hidden", !encrypted);
  }

  function saveUpstream(e) {
    e.preventDefault();
    var form = this, body = { provider: form.elements.provider.value };
    if (body.provider !== "isp") body.fallback = $(form).find("input[name=fallback]:checked").val();
    if (body.provider === "custom") {
      body.servers = form.elements.servers.value.split(/[\s,]+/).filter(function (s) { return s; });
    }
    say("error", "");
    var $button = $(form).find("button[type=submit]").prop("disabled", true);
    HW.api.call("POST", "dns/upstream", body).done(function (u) {
      $(form).data("editing", false);
      say("status", "Saved.");
      renderUpstream(u);
    }).fail(fail).always(function () { $button.prop("disabled", false); });
  }

  function setDnssec() {
    say("error", "");
    HW.api.call("POST", "dns/dnssec", { enabled: this.checked }).done(function (d) {
      say("status", d.enabled ? "DNSSEC signatures are checked." : "DNSSEC signatures are not checked.");
      renderDnssec(d);
    }).fail(function (xhr) { fail(xhr); load(); });
  }

  function addInsecure(e) {
    e.preventDefault();
    var form = this;
    say("error", "");
    HW.api.call("POST", "dns/dnssec/insecure", { domain: $.trim(form.elements.domain.value) }).done(function (d) {
      form.reset();
      say("status", "Signatures of that domain are no longer checked.");
      renderDnssec(d);
    }).fail(fail);
  }

  function removeInsecure(domain) {
    say("error", "");
    HW.api.call("POST", "dns/dnssec/insecure/" + encodeURIComponent(domain) + "/remove").done(function (d) {
      say("status", "Signatures of " + domain + " are checked again.");
      renderDnssec(d);
    }).fail(fail);
  }

  $(function () {
    var settings = document.getElementById("settings");
    $section = $("#dns-privacy");
    if (!settings || !$section.length) return;
    $("#dns-upstream").on("submit", saveUpstream)
      .on("input change", function () { $(this).data("editing", true); })
      .find("select[name=provider]").on("change", showCustom);
    $("#dnssec-insecure").on("submit", addInsecure);
    $section.find(".refresh").on("click", load);
    $section.find("input[name=dnssec]").on("change", setDnssec);
    new MutationObserver(function () { if (!settings.hidden) load(); })
      .observe(settings, { attributes: true, attributeFilter: ["hidden"] });
    if (!settings.hidden) load();
  });
})(jQuery);
