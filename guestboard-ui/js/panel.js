/* The per-device panel (tap a label): let it in or refuse it, its traffic now and today and a
   chart of the last hour/day/month (one source for every byte figure: the router's usage
   count), pause and bedtime, priority, allowance, website rules, blacklist and forget, recent alerts;
   and the naming dialog shown after a first permit. Laid out in three columns on a
   1024x600 screen (index.html), so nothing a household does here is below the fold. */
window.HW = window.HW || {};
HW.panel = (function ($) {
  "use strict";
  var current = null;          // MAC shown in the panel
  var FORGET_ARM_MS = 4000;    // Forget needs a second tap within this time
  var forgetTimer = 0;
  var chartRange = "day";      // last hour | day | month, kept while the board is open
  var CHART_REFRESH_MS = 30000;
  var chartTimer = 0;
  var lastRefresh = 0;
  var LIVE_REFRESH_MS = 3000;

  function fail($where) {
    return function (xhr) { $where.text(HW.api.errorText(xhr)); };
  }

  function fill(d) {
    var $p = $("#panel");
    var name = d.label || d.mac;
    $p.find(".title").text(name);
    var ident = [d.mac];
    if (d["private"]) ident.push("private (randomised) address");
    else if (d.vendor) ident.push(d.vendor);
    if (d.hostname) ident.push("calls itself " + d.hostname);
    ident.push(HW.labels.stateWords(d.state));
    $p.find(".ident").text(ident.join(" · "));
    fillDecide(d, name);
    var m = d.metrics || {};
    $p.find(".traffic-now").text(HW.labels.bytes(m.bps) + "/s");
    $p.find(".traffic-today").text(HW.labels.bytes(m.today_bytes));
    var link = HW.labels.connection(d);
    $p.find(".signal").text((m.rssi === null || m.rssi === undefined ? "–" : m.rssi + " dBm" +
                            (HW.labels.retransmitting(m.retrans) ? " (many retries)" : "")) +
                            (link ? " · " + link : ""));
    $p.find(".address").text(d.lease && d.lease.active ? d.lease.ip : "none");
    // Which switch it is on: the router itself or one of the satellites.
    var at = d.attached;
    $p.find(".attached-row").prop("hidden", !at);
    var air = HW.labels.satelliteRadio(d.radio);     // a station its satellite's agent reports
    $p.find(".attached").text(!at ? "" : air && air.satellite === at.satellite ? "satellite " + at.satellite + ", Wi-Fi " + air.radio
                              : at.satellite ? "satellite " + at.satellite + ", port " + at.port
                              : "the router, port " + at.port);
    // Its own IPv6 /64 when the router gives devices IPv6 (every address in it is the device's).
    $p.find(".ipv6-row").prop("hidden", !d.ipv6_prefix);
    $p.find(".ipv6-prefix").text(d.ipv6_prefix || "");
    // The name other devices reach it by inside the home (localnames: permitted devices).
    $p.find(".dns-name-row").prop("hidden", !d.dns_name);
    $p.find(".dns-name").text(d.dns_name || "");
    $p.find(".flow-note").prop("hidden", !d.flow_limited);
    $p.find(".blacklist").prop("hidden", d.state === "blacklisted").attr("aria-label", "Blacklist " + name);
    // Only registered devices can be forgotten (one merely heard by the radio is not).
    $p.find(".forget").prop("hidden", d.state === "unknown").attr("aria-label", "Forget " + name);
    $p.find(".whitelist").prop("hidden", d.state !== "blacklisted").attr("aria-label", "Lift the blacklist of " + name);
    $p.find(".rename").attr("aria-label", "Rename " + name);
    fillRules(d);
    var $alerts = $p.find(".alerts").empty();
    (d.alerts || []).forEach(function (a) {
      $alerts.append($("<li>").text(new Date(a.at * 1000).toLocaleTimeString() + " " + a.kind + ": " + a.detail));
    });
    if (!(d.alerts || []).length) $alerts.append($("<li>").text("none"));
    fillPause(d);
    fillPriority(d);
    fillBurst(d);
    fillAllowance(d);
    fillPresence(d);
    if (HW.identify) HW.identify.fill(d);   // what it is, why the router thinks so (identify.js)
    if (HW.reach) HW.reach.fill(d);      // open from the internet (reach.js)
    if (HW.remote) HW.remote.fill(d);    // away from home: where it connects from (remote.js)
  }

  /* A device asking to join (or kept out) gets the two buttons that decide, named after it
     for a screen reader; the same decisions as dragging its label. */
  function fillDecide(d, name) {
    var $d = $("#panel .decide");
    var undecided = d.state === "pending" || d.state === "denied";
    $d.prop("hidden", !undecided || d.kind === "access-point");
    $d.find(".let-in").attr("aria-label", "Let " + name + " in");
    $d.find(".refuse").attr("aria-label", "Refuse " + name).prop("hidden", d.state === "denied");
  }

  /* Website rules: the device's own (GET devices/{mac} carries them as {rules, mode}). */
  function fillRules(d) {
    var $p = $("#panel"), $rules = $p.find(".rules").empty();
    var dns = d.dns_rules;
    if (dns === null || dns === undefined) {
      $p.find(".rule-form").prop("hidden", true);
      $p.find(".rules-mode").text("");
      $p.find(".rules-note").text("Website rules need the router's DNS component.");
      return;
    }
    var rules = dns.rules || [];
    $p.find(".rule-form").prop("hidden", false);
    $p.find(".rules-mode").text(dns.mode === "allowlist"
      ? "Only the websites allowed here open on this device."
      : "Websites open on this device unless blocked here, by the household's rules or by a blocklist.");
    rules.forEach(function (r) {
      var blocked = r.action === "deny";
      var when = r.schedule ? " (" + r.schedule + (r.active ? ", now" : ", not now") + ")" : "";
      $rules.append($("<li>").attr("data-domain", r.domain).append(
        $('<span class="domain">').text(r.domain),
        $('<span class="action">').text((blocked ? "blocked" : "allowed") + when),
        $('<button type="button" class="secondary remove">Remove</button>').attr("data-domain", r.domain)
          .attr("aria-label", "Remove the rule for " + r.domain)));
    });
    $p.find(".rules-note").text(rules.length ? "" : dns.mode === "allowlist"
      ? "No website is allowed yet: add the ones it may open."
      : "No rules of its own.");
  }

  /* Priority: the device's class, in household words, set with POST qos/devices/<mac>;
     hidden without the qos component (no `priority` in the view) and off the network. */
  function fillPriority(d) {
    var $box = $("#panel .priority");
    $box.prop("hidden", d.priority === undefined || d.state !== "permitted");
    $box.find("select").val(d.priority || "default");
    if (d.mac !== $box.attr("data-mac")) $box.attr("data-mac", d.mac).find(".priority-error").text("");
  }

  /* Usage alert: "tell me when it uses more than X in Y minutes" (POST usage/bursts, turned
     off with POST usage/bursts/remove); hidden without the usage component (no `usage_burst`
     in the view) and for devices not let in. The form shows the device's own setting. */
  function fillBurst(d) {
    var $box = $("#panel .burst");
    $box.prop("hidden", d.usage_burst === undefined || d.state !== "permitted");
    $box.find(".burst-note").text(d.usage_burst ? "You are told when it uses " + d.usage_burst.text + "."
                                                : "No usage alert: you are not told how fast it uses data.");
    $box.find(".burst-off").prop("hidden", !d.usage_burst);
    if (d.mac !== $box.attr("data-mac")) {       // another device: its own setting in the form
      $box.attr("data-mac", d.mac).find(".burst-error").text("");
      var f = $box.find(".burst-form")[0];
      f.elements.size.value = d.usage_burst ? Math.round(d.usage_burst.bytes / 1e6) + "M" : "";
      f.elements.minutes.value = d.usage_burst ? d.usage_burst.minutes : 10;
    }
  }

  /* Allowance: so much a day or a month, and what happens once it is used up (slowed to a
     rate, no internet, or the household only told): POST usage/limits, removed with POST
     usage/limits/remove. The router checks what is typed (the same check as the CLI's), and
     its answer's words are shown. Hidden without the usage component (no `usage_limit` in
     the view) and for devices not let in. An owner's allowance counts all their devices. */
  function fillAllowance(d) {
    var $box = $("#panel .allowance"), limit = d.usage_limit;
    $box.prop("hidden", limit === undefined || d.state !== "permitted").data("limit", limit || null);
    var now = d.usage_blocked ? " Used up: its internet is off."
      : d.usage_slowed ? " Used up: it is slowed down." : "";
    $box.find(".allowance-note").text(limit ? "Allowance: " + limit.text + "." + now
                                            : "No allowance: it may use as much as it likes.");
    $box.find(".allowance-off").prop("hidden", !limit)
      .attr("aria-label", "Remove the allowance of " + (d.label || d.mac));
    if (d.mac !== $box.attr("data-mac")) {       // another device: its own setting in the form
      $box.attr("data-mac", d.mac).find(".allowance-error").text("");
      var f = $box.find(".allowance-form")[0];
      f.elements.allowance.value = limit ? Math.round(limit.allowance / 1e6) + "M" : "";
      f.elements.period.value = limit ? limit.period : "day";
      f.elements.action.value = limit ? limit.action : "slow";
      f.elements.rate.value = limit && limit.rate ? limit.rate + "kbit" : "1mbit";
      showRate(f);
    }
  }

  function showRate(form) {
    $(form.elements.rate).prop("hidden", form.elements.action.value !== "slow");
  }

  function allowanceChanged(mac) {
    if (current !== mac) return;
    $("#panel .allowance").removeAttr("data-mac");     // the form shows what the router kept
    changed();
  }

  function burstChanged(mac) {
    $("#panel .burst-error").text("");
    HW.api.request("device", { mac: mac }).done(function (d) {
      if (current === mac) { $("#panel .burst").removeAttr("data-mac"); fill(d); }
    });
  }

  /* Comings and goings: "tell me when it comes home or leaves" (GET and POST
     notifications/presence/{mac}); its section, made here, sits below the usage alert. Asked
     once per device shown (live refreshes do not ask again); hidden for devices not let in
     and without the notify component (the route's 503). */
  var PRESENCE_HTML = '<section class="presence" aria-labelledby="presence-h" hidden>' +
    '<h3 id="presence-h">Comings and goings</h3>' +
    '<label><input type="checkbox" name="presence"> Tell me when it comes home or leaves</label>' +
    '<p class="presence-note"></p><p class="presence-error" role="alert"></p></section>';

  function fillPresence(d) {
    var $box = $("#panel .presence");
    if (d.state !== "permitted") { $box.prop("hidden", true).removeAttr("data-mac"); return; }
    if (d.mac === $box.attr("data-mac")) return;
    $box.attr("data-mac", d.mac).find(".presence-error").text("");
    HW.api.request("presenceAlert", { mac: d.mac }, undefined, { quiet: true }).done(function (alert) {
      if (current === alert.mac) showPresence(alert);
    }).fail(function () { $box.prop("hidden", true); });
  }

  function showPresence(alert) {
    var $box = $("#panel .presence").prop("hidden", false);
    $box.find("input[name=presence]").prop("checked", alert.on);
    $box.find(".presence-note").text(alert.text);
  }

  /* Pause and bedtime: hidden without the schedules component (no `paused` in the view). A
     paused device shows Resume, and Pause only when it is not paused by a one-tap pause. */
  function fillPause(d) {
    var $box = $("#panel .schedules");
    var shown = d.paused !== undefined && d.state === "permitted";
    $box.prop("hidden", !shown);
    if (!shown) return;
    var now = HW.labels.paused(d);
    $box.find(".pause-note").text(now ? "Now: " + now + "." : "Not paused.");
    var pausedByTap = !!(d.paused && d.paused_by === "pause");
    $box.find(".pause-1h").prop("hidden", pausedByTap).attr("aria-label", "Pause " + (d.label || d.mac) + " for an hour");
    $box.find(".resume").prop("hidden", !d.paused).attr("aria-label", "Resume " + (d.label || d.mac));
  }

  function loadSchedules() {
    var mac = current;
    if (!mac || $("#panel .schedules").prop("hidden")) return;
    HW.api.request("schedules", { mac: mac }).done(function (rows) {
      if (current !== mac) return;
      var $list = $("#panel .schedule-list").empty();
      rows.forEach(function (r) {
        $list.append($("<li>").append(
          $('<span class="window">').text(r.window),
          $('<span class="action">').text(" · " + (r.action === "pause" ? "no internet" : "allowed websites only") +
                                          (r.owner ? " (all of " + r.owner + "'s devices) " : " ")),
          $('<button type="button" class="secondary remove">Remove</button>').attr("data-id", r.id)
            .attr("aria-label", "Remove the bedtime " + r.window)));
      });
      if (!rows.length) $list.append($('<li class="none">').text("No schedules."));
    });
  }

  /* After a decision, pause, resume or schedule change: the panel and the label follow. The
     answer of a pause or resume is the device's pause facts: shown at once, before the view. */
  function changed(facts) {
    var mac = current;
    $("#panel .error").text("");
    if (facts && facts.mac === mac && facts.paused !== undefined) {
      var d = $.extend({}, HW.board.get(mac), facts);
      fillPause(d);
    }
    HW.api.request("device", { mac: mac }).done(function (view) {
      HW.board.upsert(view);
      if (current === mac) { fill(view); loadSchedules(); }
    });
  }

  /* A <script> element, not $.ajax: the page's CSP (script-src 'self') forbids eval. */
  var chartsLoading = null;
  function chartScript() {
    if (HW.charts) return $.Deferred().resolve().promise();
    if (!chartsLoading) {
      var d = $.Deferred(), s = document.createElement("script");
      s.src = "js/charts.js";
      s.onload = function () { d.resolve(); };
      s.onerror = function () { chartsLoading = null; d.reject("js/charts.js did not load"); };
      document.head.appendChild(s);
      chartsLoading = d.promise();
    }
    return chartsLoading;
  }

  /* The device's bytes up and down over the chosen range, from GET usage/devices/{mac}. */
  function loadChart() {
    var mac = current, range = chartRange;
    var $box = $("#panel .usage-chart");
    $box.find("button[data-range]").each(function () {
      $(this).toggleClass("selected", this.dataset.range === range).attr("aria-pressed", String(this.dataset.range === range));
    });
    clearTimeout(chartTimer);
    if (!mac) return;
    chartTimer = setTimeout(loadChart, CHART_REFRESH_MS);
    var series = HW.api.request("usageDevice", { mac: mac, range: range });
    $.when(chartScript().then(function () { return HW.charts.load(); }), series).done(function (_c, res) {
      if (current !== mac || chartRange !== range) return;     // the panel moved on meanwhile
      var s = res[0];
      var canvas = $box.find("canvas")[0];
      HW.charts.draw(canvas, {
        type: "bar",
        data: { labels: s.labels, datasets: [
          { label: "Down", data: s.down, backgroundColor: HW.charts.COLOURS.down, stack: "bytes" },
          { label: "Up", data: s.up, backgroundColor: HW.charts.COLOURS.up, stack: "bytes" }] },
        options: { scales: { x: { stacked: true, ticks: { maxTicksLimit: 8 } },
                             y: HW.charts.bytesAxis({ stacked: true }) },
                   plugins: { tooltip: HW.charts.tooltip() } }
      });
      canvas.dataset.loaded = mac + " " + range;    // which data the chart holds (tests wait for it)
      $box.find(".chart-note").text(HW.labels.bytes(s.total) + " in the last " + range +
        (range === "hour" ? " (per minute)" : range === "day" ? " (per hour)" : " (per day)"));
    }).fail(function (xhr) {
      if (current !== mac) return;
      $box.find(".chart-note").text(xhr && xhr.status === 503 ? "Usage charts need the router's usage component."
        : typeof xhr === "string" ? xhr : HW.api.errorText(xhr));
    });
  }

  function refresh() {
    if (!current) return;
    lastRefresh = Date.now();
    HW.api.request("device", { mac: current }).done(function (d) { fill(d); loadSchedules(); })
      .fail(fail($("#panel .error")));
  }

  /* The shown device's radio or traffic changed (a link event): its signal, band and access
     point come with its view, so read it again, at most every LIVE_REFRESH_MS. A change
     inside that window is read at its end, not dropped: a station's link events come only
     with news (or once a minute), so the one just after the panel opened may be the last
     for a while. */
  var refreshTimer = null;
  function liveRefresh() {
    var mac = current, wait = lastRefresh + LIVE_REFRESH_MS - Date.now();
    if (!mac || refreshTimer) return;
    if (wait > 0) {
      refreshTimer = setTimeout(function () { refreshTimer = null; liveRefresh(); }, wait);
      return;
    }
    lastRefresh = Date.now();
    HW.api.request("device", { mac: mac }).done(function (d) { if (current === mac) fill(d); });
  }

  function disarmForget() {
    clearTimeout(forgetTimer);
    $("#panel .forget").removeClass("armed").text("Forget");
  }

  /* First tap arms, second tap forgets: the device loses its decision, name and address
     and must ask again, so a stray tap should not do it. */
  function forget() {
    var $b = $("#panel .forget");
    if (!$b.hasClass("armed")) {
      $b.addClass("armed").text("Tap again to forget");
      forgetTimer = setTimeout(disarmForget, FORGET_ARM_MS);
      return;
    }
    disarmForget();
    var mac = current;
    HW.api.request("forget", { mac: mac }).done(function () {
      HW.board.remove(mac);     // the stream's "forgotten" event will say the same
      if (current === mac) close();
    }).fail(fail($("#panel .error")));
  }

  function close() {
    current = null;
    clearTimeout(chartTimer);
    disarmForget();
    var dlg = $("#panel")[0];
    if (dlg.open) dlg.close();
  }

  function open(mac) {
    current = mac;
    disarmForget();
    $("#panel .error").text("");
    if (HW.identify) HW.identify.add();
    if (HW.reach) HW.reach.add();
    var d = HW.board.get(mac);
    if (d) fill($.extend({ dns_rules: undefined }, d));
    var dlg = $("#panel")[0];
    if (!dlg.open) dlg.showModal();
    if (d && d.state !== "unknown") refresh();
    $("#panel .usage-chart").prop("hidden", !d || d.state === "unknown");
    $("#panel .usage-chart canvas").removeAttr("data-loaded");
    if (d && d.state !== "unknown") loadChart();
  }

  function askName(d) {
    var $f = $("#meta-form");
    $f.find(".who").text(d.label);
    $f[0].elements.name.value = d.name || d.hostname || "";
    $f[0].elements.owner.value = d.owner || "";
    $f[0].elements.type.value = d.type || "laptop";
    $f.find(".error").text("");
    $f.data("mac", d.mac);
    $("#meta-dialog")[0].showModal();
  }

  /* Let in or refuse: the same as a drop on "On the network" or "In range" (main.js). */
  function decide(what) {
    var mac = current;
    HW.board.decide(mac, what === "permit" ? "permitted" : "outside").done(function () {
      if (current === mac) changed();
    });
  }

  function init() {
    var $p = $("#panel");
    var $select = $p.find(".priority select");
    $(PRESENCE_HTML).insertAfter($p.find(".burst")).find("input[name=presence]").on("change", function () {
      var box = this, $error = $p.find(".presence-error").text("");
      HW.api.request("setPresenceAlert", { mac: current }, { on: box.checked }).done(showPresence)
        .fail(function (xhr) { box.checked = !box.checked; fail($error)(xhr); });
    });
    HW.labels.PRIORITIES.forEach(function (c) { $select.append($("<option>").val(c).text(HW.labels.priority(c))); });
    $select.on("change", function () {
      var mac = current, $error = $p.find(".priority-error").text("");
      HW.api.request("qosDevice", { mac: mac }, { "class": this.value }).done(function () { changed(); })
        .fail(fail($error));
    });
    $p.find(".close").on("click", close);
    $p.on("close", function () { current = null; clearTimeout(chartTimer); disarmForget(); });
    $p.find(".forget").on("click", forget);
    $p.find(".let-in").on("click", function () { decide("permit"); });
    $p.find(".refuse").on("click", function () { decide("deny"); });
    $p.find(".pause-1h").on("click", function () {
      HW.api.request("pause", { mac: current }, { minutes: 60 }).done(changed).fail(fail($p.find(".error")));
    });
    $p.find(".resume").on("click", function () {
      HW.api.request("resume", { mac: current }).done(changed).fail(fail($p.find(".error")));
    });
    $p.find(".schedule-list").on("click", ".remove", function () {
      HW.api.request("removeSchedule", { id: this.dataset.id }).done(function () { changed(); })
        .fail(fail($p.find(".error")));
    });
    $p.find(".schedule-form").on("submit", function (e) {
      e.preventDefault();
      var f = this;
      HW.api.request("addSchedule", null, { mac: current, days: f.elements.days.value.trim(), from: f.elements.from.value,
                                            to: f.elements.to.value, action: f.elements.action.value })
        .done(function () { changed(); }).fail(fail($p.find(".error")));
    });
    $p.find(".usage-chart").on("click", "button[data-range]", function () {
      chartRange = this.dataset.range;
      loadChart();
    });
    $p.find(".burst-form").on("submit", function (e) {
      e.preventDefault();
      var f = this, mac = current;
      HW.api.request("setUsageBurst", null, { mac: mac, size: f.elements.size.value.trim(),
                                             minutes: Number(f.elements.minutes.value) })
        .done(function () { burstChanged(mac); }).fail(fail($p.find(".burst-error")));
    });
    $p.find(".allowance-form").on("submit", function (e) {
      e.preventDefault();
      var f = this, mac = current, body = { mac: mac, allowance: f.elements.allowance.value.trim(),
                                           period: f.elements.period.value, action: f.elements.action.value };
      if (body.action === "slow") body.rate = f.elements.rate.value.trim();
      $p.find(".allowance-error").text("");
      HW.api.request("setUsageLimit", null, body)
        .done(function () { allowanceChanged(mac); }).fail(fail($p.find(".allowance-error")));
    });
    $p.find(".allowance-form select[name=action]").on("change", function () { showRate(this.form); });
    $p.find(".allowance-off").on("click", function () {
      var mac = current, limit = $p.find(".allowance").data("limit"), owner = "owner:";
      var body = limit && limit.target.indexOf(owner) === 0 ? { owner: limit.target.slice(owner.length) } : { mac: mac };
      $p.find(".allowance-error").text("");
      HW.api.request("removeUsageLimit", null, body)
        .done(function () { allowanceChanged(mac); }).fail(fail($p.find(".allowance-error")));
    });
    $p.find(".burst-off").on("click", function () {
      var mac = current;
      HW.api.request("removeUsageBurst", null, { mac: mac })
        .done(function () { burstChanged(mac); }).fail(fail($p.find(".burst-error")));
    });
    $p.find(".rule-form").on("submit", function (e) {
      e.preventDefault();
      var action = (e.originalEvent && e.originalEvent.submitter && e.originalEvent.submitter.value) || "deny";
      var domain = this.elements.domain.value.trim();
      var form = this;
      HW.api.request(action === "permit" ? "permitDns" : "denyDns", { mac: current, domain: domain })
        .done(function () { form.reset(); refresh(); })
        .fail(fail($p.find(".error")));
    });
    $p.find(".rules").on("click", ".remove", function () {
      HW.api.request("removeDnsRule", { mac: current, domain: this.dataset.domain }).done(refresh)
        .fail(fail($p.find(".error")));
    });
    $p.find(".blacklist").on("click", function () {
      HW.api.request("blacklist", { mac: current }).done(function () { changed(); }).fail(fail($p.find(".error")));
    });
    $p.find(".whitelist").on("click", function () {
      HW.api.request("whitelist", { mac: current }).done(function () { changed(); }).fail(fail($p.find(".error")));
    });
    $p.find(".rename").on("click", function () {
      var d = HW.board.get(current);
      $p[0].close();
      if (d) askName(d);
    });
    $("#meta-skip").on("click", function () { $("#meta-dialog")[0].close(); });
    $("#meta-form").on("submit", function (e) {
      e.preventDefault();
      var f = this, mac = $(f).data("mac");
      HW.api.request("meta", { mac: mac }, { name: f.elements.name.value.trim(), owner: f.elements.owner.value.trim(),
                                             type: f.elements.type.value })
        .done(function () { $("#meta-dialog")[0].close(); })
        .fail(fail($(f).find(".error")));
    });
  }

  return { init: init, open: open, close: close, askName: askName, refresh: refresh, liveRefresh: liveRefresh,
           current: function () { return current; } };
})(jQuery);
