/* The per-device panel (tap a label): traffic now and today, a chart of its traffic over the
   last hour/day/month, DNS rules, blacklist and whitelist, forgetting it, recent alerts; and
   the naming dialog shown after a first permit. */
window.HW = window.HW || {};
HW.panel = (function ($) {
  "use strict";
  var current = null;          // MAC shown in the panel
  var FORGET_ARM_MS = 4000;    // Forget needs a second tap within this time
  var forgetTimer = 0;
  var chartRange = "day";      // last hour | day | month, kept while the board is open
  var CHART_REFRESH_MS = 30000;
  var chartTimer = 0;

  function fail($where) {
    return function (xhr) { $where.text(HW.api.errorText(xhr)); };
  }

  function fill(d) {
    var $p = $("#panel");
    $p.find(".title").text(d.label);
    var ident = [d.mac];
    if (d.private) ident.push("private (randomised) address");
    else if (d.vendor) ident.push(d.vendor);
    if (d.hostname) ident.push("calls itself " + d.hostname);
    ident.push(d.state);
    $p.find(".ident").text(ident.join(" · "));
    var m = d.metrics || {};
    $p.find(".traffic-now").text(HW.labels.bytes(m.bps) + "/s");
    $p.find(".traffic-today").text(HW.labels.bytes(m.today_bytes));
    $p.find(".signal").text((m.rssi === null || m.rssi === undefined ? "–" : m.rssi + " dBm" +
                            (HW.labels.retransmitting(m.retrans) ? " (many retries)" : "")) +
                            (HW.labels.connection(d) ? " · " + HW.labels.connection(d) : ""));
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
    $p.find(".blacklist").prop("hidden", d.state === "blacklisted");
    // Only registered devices can be forgotten (one merely heard by the radio is not).
    $p.find(".forget").prop("hidden", d.state === "unknown");
    $p.find(".whitelist").prop("hidden", d.state !== "blacklisted");
    var $rules = $p.find(".rules").empty();
    if (d.dns_rules === null || d.dns_rules === undefined) {
      $p.find(".rule-form").prop("hidden", true);
      $p.find(".rules-note").text("Website rules need the router's DNS component.");
    } else {
      $p.find(".rule-form").prop("hidden", false);
      // GET /ws.v1/devices/{mac} answers {rules, mode} (the dns-rules command's shape)
      var rules = Array.isArray(d.dns_rules) ? d.dns_rules : (d.dns_rules.rules || []);
      $p.find(".rules-note").text(rules.length ? "" : "No rules: every website is allowed.");
      rules.forEach(function (r) {
        var $li = $("<li>").append($('<span class="domain">').text(r.domain),
                                   $('<span class="action">').text(r.action === "deny" ? "blocked" : "allowed"),
                                   $('<button type="button" class="secondary remove">Remove</button>').attr("data-domain", r.domain));
        $rules.append($li);
      });
    }
    var $alerts = $p.find(".alerts").empty();
    (d.alerts || []).forEach(function (a) {
      $alerts.append($("<li>").text(new Date(a.at * 1000).toLocaleTimeString() + " " + a.kind + ": " + a.detail));
    });
    if (!(d.alerts || []).length) $alerts.append($("<li>").text("none"));
    fillPause(d);
    fillPriority(d);
    fillBurst(d);
    if (HW.identify) HW.identify.fill(d);   // what it is, why the router thinks so (identify.js)
    if (HW.reach) HW.reach.fill(d);      // open from the internet (reach.js)
    if (HW.remote) HW.remote.fill(d);    // away from home: where it connects from (remote.js)
  }

  /* Priority: the device's class, in household words, set with
     POST qos/devices/<mac>. Markup added once; hidden without the qos component (no
     `priority` in the view) and for devices not on the network. */
  function addPriority() {
    if ($("#panel .priority").length) return;
    var $select = $('<select name="class" aria-label="Priority">');
    HW.labels.PRIORITIES.forEach(function (c) { $select.append($("<option>").val(c).text(HW.labels.priority(c))); });
    var $box = $('<section class="priority">').append(
      $("<h3>").text("Priority"),
      $('<div class="priority-form">').css({ display: "flex", alignItems: "center", gap: "0.6em" }).append(
        $select.css({ width: "auto" }), $('<a href="priorities.html">').text("all priorities"),
        // not class "error": the panel's other failures fill every "#panel .error"
        $('<span class="priority-error" role="alert">').css({ color: "var(--danger)", fontSize: "13px" })));
    $("#panel .grid").after($box);
    $select.on("change", function () {
      var mac = current, $error = $box.find(".priority-error").text("");
      HW.api.call("POST", "qos/devices/" + encodeURIComponent(mac), { "class": this.value }).done(function () {
        HW.api.device(mac).done(function (d) {
          HW.board.upsert(d);
          if (current === mac) fill(d);
        });
      }).fail(fail($error));
    });
  }

  function fillPriority(d) {
    var $box = $("#panel .priority");
    $box.prop("hidden", d.priority === undefined || d.state !== "permitted");
    $box.find("select").val(d.priority || "default");
    if (d.mac !== $box.attr("data-mac")) $box.attr("data-mac", d.mac).find(".priority-error").text("");
  }

  /* Pause and bedtime: a one-tap pause for an hour, resume, and the device's
     schedules (its own and its owner's) with add and remove. Markup added once, as the
     chart's; hidden when the router has no schedules component (no `paused` in the view). */
  function addSchedules() {
    if ($("#panel .schedules").length) return;
    var $box = $('<section class="schedules">').append(
      $("<h3>").text("Pause and bedtime"),
      $('<p class="pause-note">'),
      $('<div class="actions pause-actions">').append(
        $('<button type="button" class="pause-1h">').text("Pause 1 h"),
        $('<button type="button" class="resume secondary">').text("Resume")),
      $('<ul class="schedule-list">'),
      $('<form class="schedule-form">').append(
        $('<input name="days" required maxlength="40" aria-label="days">').attr("placeholder", "sun-thu").val("sun-thu"),
        $('<input name="from" type="time" required aria-label="from">').val("21:30"),
        $('<input name="to" type="time" required aria-label="to">').val("07:00"),
        $('<select name="action" aria-label="what happens">').append(
          $('<option value="pause">').text("no internet"),
          $('<option value="dns-strict">').text("allowed websites only")),
        $('<button type="submit">').text("Add")).css({ display: "flex", flexWrap: "wrap", gap: "0.4em" }));
    $("#panel .actions").first().after($box);
    $box.on("click", ".pause-1h", function () {
      HW.api.call("POST", "pause/" + encodeURIComponent(current), { minutes: 60 }).done(pauseChanged)
        .fail(fail($("#panel .error")));
    });
    $box.on("click", ".resume", function () {
      HW.api.call("POST", "resume/" + encodeURIComponent(current)).done(pauseChanged)
        .fail(fail($("#panel .error")));
    });
    $box.on("click", ".schedule-list .remove", function () {
      HW.api.call("POST", "schedules/" + encodeURIComponent(this.dataset.id) + "/remove").done(pauseChanged)
        .fail(fail($("#panel .error")));
    });
    $box.on("submit", ".schedule-form", function (e) {
      e.preventDefault();
      var f = this;
      HW.api.call("POST", "schedules", { mac: current, days: f.elements.days.value.trim(), from: f.elements.from.value,
                                         to: f.elements.to.value, action: f.elements.action.value })
        .done(pauseChanged).fail(fail($("#panel .error")));
    });
  }

  function fillPause(d) {
    var $box = $("#panel .schedules");
    var shown = d.paused !== undefined && d.state === "permitted";
    $box.prop("hidden", !shown);
    if (!shown) return;
    $box.find(".pause-note").text(HW.labels.paused(d) ? "Now: " + HW.labels.paused(d) : "Not paused.");
    $box.find(".pause-1h").prop("hidden", !!(d.paused && d.paused_by === "pause"));
    $box.find(".resume").prop("hidden", !d.paused);
  }

  function loadSchedules() {
    var mac = current;
    if (!mac || $("#panel .schedules").prop("hidden")) return;
    HW.api.call("GET", "schedules?mac=" + encodeURIComponent(mac)).done(function (rows) {
      if (current !== mac) return;
      var $list = $("#panel .schedule-list").empty();
      rows.forEach(function (r) {
        $list.append($("<li>").append(
          $('<span class="window">').text(r.window),
          $('<span class="action">').text(" · " + (r.action === "pause" ? "no internet" : "allowed websites only") +
                                          (r.owner ? " (all of " + r.owner + "'s devices) " : " ")),
          $('<button type="button" class="secondary remove">Remove</button>').attr("data-id", r.id)));
      });
      if (!rows.length) $list.append($('<li class="none">').text("No schedules."));
    });
  }

  /* After a pause, resume or schedule change: the panel and the board's label follow. */
  function pauseChanged() {
    var mac = current;
    $("#panel .error").text("");
    HW.api.device(mac).done(function (d) {
      HW.board.upsert(d);
      if (current === mac) { fill(d); loadSchedules(); }
    });
  }

  /* Usage alert: "tell us when it uses more than X in Y minutes", set with
     POST usage/bursts {mac, size, minutes} and turned off with POST usage/bursts/remove.
     Markup added once; hidden without the usage component (no `usage_burst` in the view)
     and for devices not let in. */
  function addBurst() {
    if ($("#panel .burst").length) return;
    var $box = $('<section class="burst">').append(
      $("<h3>").text("Usage alert"),
      $('<p class="burst-note">').css({ fontSize: "13px", margin: "0 0 6px" }),
      $('<form class="burst-form">').append(
        $("<span>").text("Tell me when it uses more than"),
        $('<input name="size" required maxlength="12" aria-label="amount, e.g. 500M or 2G">')
          .attr("placeholder", "500M").css({ width: "6em" }),
        $("<span>").text("in"),
        $('<input name="minutes" type="number" min="1" max="60" required aria-label="minutes">').val(10)
          .css({ width: "4.5em" }),
        $("<span>").text("minutes"),
        $('<button type="submit">').text("Set"),
        $('<button type="button" class="secondary burst-off">').text("Turn off"))
        .css({ display: "flex", flexWrap: "wrap", gap: "0.4em", alignItems: "center" }),
      $('<p class="burst-error" role="alert">').css({ color: "var(--danger)", fontSize: "13px", margin: "4px 0" }));
    $("#panel .actions").first().after($box);
    $box.on("submit", ".burst-form", function (e) {
      e.preventDefault();
      var f = this, mac = current;
      HW.api.call("POST", "usage/bursts", { mac: mac, size: f.elements.size.value.trim(),
                                            minutes: Number(f.elements.minutes.value) })
        .done(function () { burstChanged(mac); }).fail(fail($box.find(".burst-error")));
    });
    $box.on("click", ".burst-off", function () {
      var mac = current;
      HW.api.call("POST", "usage/bursts/remove", { mac: mac })
        .done(function () { burstChanged(mac); }).fail(fail($box.find(".burst-error")));
    });
  }

  function fillBurst(d) {
    var $box = $("#panel .burst");
    if (!$box.length) return;
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

  function burstChanged(mac) {
    $("#panel .burst-error").text("");
    HW.api.device(mac).done(function (d) {
      if (current === mac) { $("#panel .burst").removeAttr("data-mac"); fill(d); }
    });
  }

  /* The traffic chart's markup, added once: index.html stays as it is, and Chart.js, its
     helpers and usage.css load only when a panel first opens. */
  function addChart() {
    if ($("#panel .usage-chart").length) return;
    $('<link rel="stylesheet" href="usage.css">').appendTo("head");
    var $box = $('<section class="usage-chart">').append(
      $("<h3>").text("Traffic"),
      $('<div class="range" role="group" aria-label="Traffic over the last">').append(
        ["hour", "day", "month"].map(function (r) {
          return $('<button type="button" class="secondary">').attr("data-range", r).text("Last " + r);
        })),
      $('<div class="chart-box">').append($("<canvas>").attr("aria-label", "traffic up and down")),
      $('<p class="chart-note">'));
    $("#panel .grid").after($box);
    $box.on("click", "button[data-range]", function () {
      chartRange = this.dataset.range;
      loadChart();
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
      $(this).toggleClass("selected", this.dataset.range === range).attr("aria-pressed", this.dataset.range === range);
    });
    clearTimeout(chartTimer);
    if (!mac) return;
    chartTimer = setTimeout(loadChart, CHART_REFRESH_MS);
    var series = HW.api.call("GET", "usage/devices/" + encodeURIComponent(mac) + "?range=" + range);
    $.when(chartScript().then(function () { return HW.charts.load(); }), series).done(function (_c, res) {
      if (current !== mac || chartRange !== range) return;     // the panel moved on meanwhile
      var s = res[0];
      var canvas = $box.find("canvas")[0];
      HW.charts.draw(canvas, {
        type: "bar",
        data: { labels: s.labels, datasets: [
          { label: "Down", data: s.down, backgroundColor: HW.charts.COLOURS.down, stack: "bytes" },
          { label: "Up", data: s.up, backgroundColor: HW.charts.COLOURS.up, stack: "bytes" }] },
        options: { scales: { x: { stacked: true, ticks: { maxTicksLimit: 8 } }, y: HW.charts.bytesAxis({ stacked: true }) },
                   plugins: { tooltip: HW.charts.tooltip() } }
      });
      canvas.dataset.loaded = mac + " " + range;    // which data the chart holds (tests wait for it)
      $box.find(".chart-note").text(HW.charts.size(s.total) + " in the last " + range +
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
    HW.api.device(current).done(function (d) { fill(d); loadSchedules(); }).fail(fail($("#panel .error")));
  }

  /* The shown device's radio or traffic changed (a link event): its signal, band and access
     point come with its view, so read it again, at most every LIVE_REFRESH_MS. A change
     inside that window is read at its end, not dropped: a station's link events come only
     with news (or once a minute), so the one just after the panel opened may be the last
     for a while. */
  var LIVE_REFRESH_MS = 3000;
  var lastRefresh = 0, refreshTimer = null;
  function liveRefresh() {
    var mac = current, wait = lastRefresh + LIVE_REFRESH_MS - Date.now();
    if (!mac || refreshTimer) return;
    if (wait > 0) {
      refreshTimer = setTimeout(function () { refreshTimer = null; liveRefresh(); }, wait);
      return;
    }
    lastRefresh = Date.now();
    HW.api.device(mac).done(function (d) { if (current === mac) fill(d); });
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
    HW.api.forget(mac).done(function () {
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
    addSchedules();
    addPriority();
    addBurst();
    if (HW.identify) HW.identify.add();
    if (HW.reach) HW.reach.add();
    var d = HW.board.get(mac);
    if (d) fill($.extend({ dns_rules: undefined }, d));
    var dlg = $("#panel")[0];
    if (!dlg.open) dlg.showModal();
    if (d && d.state !== "unknown") refresh();
    addChart();
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

  function init() {
    $("#panel .close").on("click", close);
    $("#panel").on("close", function () { current = null; clearTimeout(chartTimer); disarmForget(); });
    $("#panel .forget").on("click", forget);
    $("#panel .rule-form").on("submit", function (e) {
      e.preventDefault();
      var action = (e.originalEvent && e.originalEvent.submitter && e.originalEvent.submitter.value) || "deny";
      var domain = this.elements.domain.value.trim();
      var form = this;
      HW.api.dnsRule(action, current, domain).done(function () { form.reset(); refresh(); })
        .fail(fail($("#panel .error")));
    });
    $("#panel .rules").on("click", ".remove", function () {
      HW.api.removeDnsRule(current, this.dataset.domain).done(refresh).fail(fail($("#panel .error")));
    });
    $("#panel .blacklist").on("click", function () {
      HW.api.blacklist(current).done(refresh).fail(fail($("#panel .error")));
    });
    $("#panel .whitelist").on("click", function () {
      HW.api.whitelist(current).done(refresh).fail(fail($("#panel .error")));
    });
    $("#panel .rename").on("click", function () {
      var d = HW.board.get(current);
      $("#panel")[0].close();
      if (d) askName(d);
    });
    $("#meta-skip").on("click", function () { $("#meta-dialog")[0].close(); });
    $("#meta-form").on("submit", function (e) {
      e.preventDefault();
      var f = this, mac = $(f).data("mac");
      HW.api.meta(mac, { name: f.elements.name.value.trim(), owner: f.elements.owner.value.trim(),
                         type: f.elements.type.value })
        .done(function () { $("#meta-dialog")[0].close(); })
        .fail(fail($(f).find(".error")));
    });
  }

  return { init: init, open: open, close: close, askName: askName, refresh: refresh, liveRefresh: liveRefresh,
           current: function () { return current; } };
})(jQuery);
