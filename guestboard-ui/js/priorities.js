/* The Priorities page: the line's rates and shaping on/off, the three classes in
   household words, each device's class, application rules (with one-click presets and an
   optional time window), and the rate per class over the last minutes from GET qos/stats,
   with a marker when the "first" (high) class dropped packets. Every change is one ws.v1
   call; its 400 message is shown next to the control that made it. */
jQuery(function ($) {
  "use strict";
  var STATS_MS = 2000;           // the chart's poll
  var REFRESH_MS = 30000;        // rules and devices (changes made elsewhere)
  var WINDOW_S = 300;            // the chart shows this many seconds
  var DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
  var CLASS_COLOURS = { high: "#b3261e", medium: "#3b6ea8", "default": "#8a8577" };
  /* Ports and names of common applications; tcp/443 alone would catch all web traffic,
     so video calls are matched by their media ports and their services' names. */
  var PRESETS = [
    { name: "video calls", "class": "high", ports: ["udp/3478-3481", "udp/19302-19309"],
      domains: ["zoom.us", "teams.microsoft.com", "meet.google.com"] },
    { name: "remote desktop", "class": "high", ports: ["tcp/3389", "tcp/5900"], domains: [] },
    { name: "games", "class": "medium", ports: ["udp/3074", "udp/3478-3479"], domains: [] }
  ];
  var word = HW.labels.priority;
  var refreshTimer = 0, statsTimer = 0;
  var qos = null;
  var samples = [];              // [{at, rates: {"down high": bps, ..}, dropped: {down, up}, devices, apps}]
  var chartView = "class";       // the chart's series: per "class", "device" or "app"
  var names = {};                // mac -> the device's label, for the chart's legend
  var TOP_SERIES = 6;            // busiest devices or applications drawn (a readable legend)
  var SERIES_COLOURS = ["#3b6ea8", "#b3261e", "#2e7d32", "#8e44ad", "#c77800", "#00838f"];
  var highDrops = null;          // the high class's drop counters at the last poll, per direction
  var agentSecrets = {};         // mac -> the agent secret shown once on this page: kept through redraws

  function stop() {
    clearTimeout(refreshTimer);
    clearTimeout(statsTimer);
    agentSecrets = {};           // the session ended: the next to log in does not see them
  }

  function classSelect(value, name) {
    var $s = $('<select class="class">');
    if (name) $s.attr("aria-label", "Priority of " + name);     // in a table row; the form's has its <label>
    HW.labels.PRIORITIES.forEach(function (c) { $s.append($("<option>").val(c).text(word(c))); });
    return $s.val(value || "default");
  }

  function windowText(w) {
    if (!w) return "always";
    return (w.days && w.days.length ? w.days.join(",") + " " : "") + w.start + "–" + w.end;
  }

  /* Rates in the API are bits per second; the household reads Mbit/s like its contract. */
  function rate(bps) {
    bps = bps || 0;
    if (bps >= 1e6) return (bps / 1e6).toFixed(bps < 1e7 ? 1 : 0) + " Mbit/s";
    if (bps >= 1e3) return Math.round(bps / 1e3) + " kbit/s";
    return Math.round(bps) + " bit/s";
  }

  function mbit(kbit) { return kbit === null || kbit === undefined ? "" : String(kbit / 1000); }

  function showLink(q) {
    $("#priorities .shaping-state").text(!q.enabled ? "sharing is off"
      : q.active ? "sharing is on: what matters goes first when the line is busy"
      : "sharing is on but not applied yet");
    $("#priorities .high-share").text(q.high_share !== undefined ? q.high_share + "%" : "a share");   // whole percent
    var f = $("#link-form")[0];
    if ($(f).data("edited")) return;       // do not overwrite what someone is typing
    f.elements.enabled.checked = !!q.enabled;
    f.elements.down_mbit.value = mbit(q.down_kbit);
    f.elements.up_mbit.value = mbit(q.up_kbit);
  }

  /* Permitted devices, plus any with a class that is not on the network now. */
  function showDevices(q, views) {
    var $body = $("#device-classes tbody");
    var rows = views.filter(function (v) { return v.state === "permitted" || q.devices[v.mac]; });
    var known = {};
    rows.forEach(function (v) { known[v.mac] = true; });
    views.forEach(function (v) { names[v.mac] = v.label || v.name || v.mac; });
    Object.keys(q.devices).forEach(function (mac) { if (!known[mac]) rows.push({ mac: mac, label: mac }); });
    var focused = $body.find("select:focus").closest("tr").attr("data-mac");
    if (focused) return;                   // redraw later, not under someone's finger
    $body.empty();
    rows.forEach(function (v) {
      var rule = q.devices[v.mac] || {};
      $body.append($('<tr class="device-row">').attr("data-mac", v.mac).append(
        $('<td class="name">').text(v.label || v.mac).attr("title", v.mac),
        $("<td>").append(classSelect(rule["class"] || v.priority, v.label || v.mac),
                         rule.window ? $('<small class="when">').text(" " + windowText(rule.window)) : null,
                         (q.agents || []).indexOf(v.mac) < 0 && !agentSecrets[v.mac] && v.state === "permitted"
                           ? $('<button type="button" class="secondary add-agent">').text("Add its agent") : null),
        $('<td class="error" role="alert">')));
      if (agentSecrets[v.mac]) $body.append(secretRow(v.mac, agentSecrets[v.mac]));
      if ((q.agents || []).indexOf(v.mac) >= 0) showHostApps(v.mac);
    });
    if (!rows.length) $body.append($('<tr class="none">').append($('<td colspan="3">').text("No devices on the network.")));
  }

  /* A computer with the Homework agent: its applications by name, each with a priority
     that follows the application's connections (GET/POST qos/devices/{mac}/apps). */
  function showHostApps(mac) {
    HW.api.request("qosHostApps", { mac: mac }).done(function (h) {
      // the device's own row: its applications' and its agent secret's rows carry its data-mac too
      var $row = $("#device-classes tbody tr.device-row[data-mac='" + mac + "']");
      $row.nextAll("tr.host-apps[data-mac='" + mac + "']").remove();
      var $list = $('<ul class="host-app-list">');
      (h.apps || []).forEach(function (a) {
        $list.append($("<li>").attr("data-app", a.name).append(
          $('<span class="app-name">').text(a.name),
          a.connections ? $("<small>").text(" " + a.connections + (a.connections === 1 ? " connection " : " connections "))
                        : " ",
          classSelect(a["class"], a.name).removeClass("class").addClass("host-app")));
      });
      var said = h.reporting ? "Applications on this computer (its agent reports them):"
        : "Applications on this computer (its agent has not reported for a while):";
      $row.after($('<tr class="host-apps">').attr("data-mac", mac).append($('<td colspan="3">').append(
        $('<span class="hint">').text(h.apps && h.apps.length ? said : "The agent on this computer has reported no "
          + "applications yet."), $list, $('<p class="error" role="alert">'))));
    });
  }

  function showApps(q) {
    var $body = $("#app-classes tbody").empty();
    q.apps.forEach(function (a) {
      $body.append($("<tr>").attr("data-name", a.name).append(
        $('<td class="name">').text(a.name),
        $('<td class="class">').attr("data-class", a["class"]).text(word(a["class"])),
        $('<td class="ports">').text((a.ports || []).join(", ")),
        $('<td class="domains">').text((a.domains || []).join(", ")),
        $('<td class="when">').text(windowText(a.window)),
        $("<td>").append($('<button type="button" class="secondary delete">').text("Delete"))));
    });
    if (!q.apps.length) $body.append($('<tr class="none">').append($('<td colspan="6">').text("No application rules.")));
    var taken = {};
    q.apps.forEach(function (a) { taken[a.name] = true; });
    $("#priorities .presets button").each(function () {
      $(this).prop("disabled", !!taken[this.dataset.name]);
    });
  }

  function load() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(load, REFRESH_MS);
    $.when(HW.api.request("qos"), HW.api.request("devices")).done(function (q, views) {
      qos = q[0];
      $(".load-error").text("");
      showLink(qos);
      showDevices(qos, views[0]);
      showApps(qos);
      $("#priorities").attr("data-loaded", String(Date.now()));   // tests wait for a completed load
    }).fail(function (xhr) {
      if (xhr.status === 401) return;             // HW.api shows the log-in form
      // no answer at all (the browser dropped the request, e.g. a network change): soon again
      if (xhr.status === 0) { clearTimeout(refreshTimer); refreshTimer = setTimeout(load, 1000); }
      $(".load-error").text(xhr.status === 503 || xhr.status === 404
        ? "Priorities need the router's qos component." : HW.api.errorText(xhr));
    });
  }

  /* -- the chart: rate per class and direction, polled ------------------------------------ */
  function addSample(s) {
    var rates = {}, drops = {}, dropped = {};
    (s.classes || []).forEach(function (r) {
      rates[r.direction + " " + r["class"]] = r.rate_bps;
      if (r["class"] === "high") drops[r.direction] = r.drops || 0;
    });
    // A counter that went down is a restarted shaper: a new baseline, not a drop.
    Object.keys(drops).forEach(function (dir) {
      var more = highDrops && highDrops[dir] !== undefined ? drops[dir] - highDrops[dir] : 0;
      if (more > 0) { dropped[dir] = true; showDrop(s.at, more, dir); }
    });
    highDrops = drops;
    samples.push({ at: s.at, rates: rates, dropped: dropped, devices: perKey(s.devices, "mac"), apps: perKey(s.apps, "name") });
    while (samples.length && samples[0].at < s.at - WINDOW_S) samples.shift();
    drawChart();
  }

  /* Rows of GET qos/stats -> {key: {down: bps, up: bps}} (a device's classes summed). */
  function perKey(rows, field) {
    var out = {};
    (rows || []).forEach(function (r) {
      var k = r[field];
      if (!k) return;
      out[k] = out[k] || { down: 0, up: 0 };
      out[k][r.direction] = (out[k][r.direction] || 0) + (r.rate_bps || 0);
    });
    return out;
  }

  /* The busiest devices or applications over the window, most traffic first. */
  function busiest(field) {
    var total = {};
    samples.forEach(function (p) {
      Object.keys(p[field] || {}).forEach(function (k) { total[k] = (total[k] || 0) + p[field][k].down + p[field][k].up; });
    });
    return Object.keys(total).sort(function (a, b) { return total[b] - total[a]; }).slice(0, TOP_SERIES);
  }

  function seriesDatasets() {
    var field = chartView === "device" ? "devices" : "apps", datasets = [];
    busiest(field).forEach(function (k, i) {
      var colour = SERIES_COLOURS[i % SERIES_COLOURS.length];
      ["down", "up"].forEach(function (dir) {
        datasets.push({
          label: (field === "devices" ? names[k] || k : k) + (dir === "down" ? " ↓" : " ↑"),
          data: samples.map(function (p) { return ((p[field] || {})[k] || {})[dir] || 0; }),
          borderColor: colour, backgroundColor: colour, borderWidth: 2, tension: 0.2, pointRadius: 0,
          borderDash: dir === "up" ? [5, 4] : []
        });
      });
    });
    return datasets;
  }

  function clock(at) { return new Date(at * 1000).toLocaleTimeString(); }

  function showDrop(at, packets, dir) {
    $("#priorities .drop-marker").prop("hidden", false).attr("data-at", String(at))
      .text("▲ " + word("high") + " dropped " + packets + " packet" + (packets === 1 ? "" : "s") +
            (dir === "up" ? " going up" : " coming down") + " at " + clock(at) +
            ": more first-priority traffic than its share of the line. Fewer devices or applications in " +
            word("high") + " would keep it smooth.");
  }

  function drawChart() {
    var canvas = $("#rates-chart")[0];
    HW.charts.load().done(function () {
      var datasets = chartView === "class" ? [] : seriesDatasets();
      (chartView === "class" ? ["down", "up"] : []).forEach(function (dir) {
        HW.labels.PRIORITIES.forEach(function (c) {
          var isHigh = c === "high";
          datasets.push({
            label: word(c) + (dir === "down" ? " ↓" : " ↑"),
            data: samples.map(function (p) { return p.rates[dir + " " + c] || 0; }),
            borderColor: CLASS_COLOURS[c], backgroundColor: CLASS_COLOURS[c], borderWidth: 2, tension: 0.2,
            borderDash: dir === "up" ? [5, 4] : [],
            // the samples where the high class dropped packets stand out as large points
            pointRadius: samples.map(function (p) { return isHigh && p.dropped[dir] ? 5 : 0; }),
            pointStyle: "triangle"
          });
        });
      });
      HW.charts.draw(canvas, {
        type: "line",
        data: { labels: samples.map(function (p) { return clock(p.at); }), datasets: datasets },
        options: { scales: { x: { ticks: { maxTicksLimit: 6 } },
                             y: { beginAtZero: true, ticks: { callback: function (v) { return rate(v); } } } },
                   plugins: { tooltip: { callbacks: { label: function (c) {
                     return c.dataset.label + ": " + rate(c.parsed.y); } } } } }
      });
      canvas.dataset.samples = String(samples.length);     // tests wait for drawn samples
      canvas.dataset.series = datasets.map(function (d) { return d.label; }).join("|");
      var last = samples[samples.length - 1];
      $("#priorities .chart-note").text(last ? "Now: down " + rate(sum(last, "down")) + ", up " + rate(sum(last, "up")) : "");
    }).fail(function (msg) { $("#priorities .chart-note").text(msg); });
  }

  function sum(sample, dir) {
    return HW.labels.PRIORITIES.reduce(function (n, c) { return n + (sample.rates[dir + " " + c] || 0); }, 0);
  }

  function pollStats() {
    clearTimeout(statsTimer);
    statsTimer = setTimeout(pollStats, STATS_MS);
    HW.api.request("qosStats").done(addSample).fail(function (xhr) {
      if (xhr.status !== 401) $("#priorities .chart-note").text(HW.api.errorText(xhr));
    });
    HW.api.request("qosEdge").done(showEdge);
  }

  /* GET qos/edge: whether the provider's edge honours the household's priorities ([isp] edge). */
  function connections(n) { return n === 1 ? "1 connection" : n + " connections"; }

  function showEdge(e) {
    var $card = $("#priorities .card.edge");
    $card.prop("hidden", !e.configured);
    if (!e.configured) return;
    var state, drops = "";
    if (e.reachable === null || e.reachable === undefined) {
      state = "Asking your provider's equipment...";
    } else if (!e.reachable || e.error) {
      state = "Your provider's equipment does not answer: " + e.error +
        " Your priorities still hold on this router.";
    } else {
      state = "Your provider honours your priorities: " + connections(e.placed) + " of " + e.wanted +
        " placed in its queues for this home, " + e.honoured + " carrying traffic now.";
      if (e.refused && e.refused.length) state += " It refused some: " + e.refused[0];
    }
    var high = (e.queues || {}).high;
    if (high) {
      drops = high.drops
        ? "Its fast lane for this home has lost " + high.drops + " packets: more is set to First than the " +
          rate(high.ceil_kbit * 1000) + " your provider guarantees carries."
        : "Its fast lane for this home (" + rate(high.ceil_kbit * 1000) + " guaranteed) has lost no packets.";
    }
    $card.find(".edge-state").text(state);
    $card.find(".edge-drops").text(drops).toggleClass("error", !!(high && high.drops));
  }

  /* -- changes ------------------------------------------------------------------------------ */
  function list(text) {
    return text.split(/[\s,]+/).filter(function (x) { return x; });
  }

  function changed($error) {
    return function () { $error.text(""); load(); };
  }

  function failed($error) {
    return function (xhr) { $error.text(HW.api.errorText(xhr)); };
  }

  $("#link-form").on("input change", function () { $(this).data("edited", true); });
  $("#link-form").on("submit", function (e) {
    e.preventDefault();
    var f = this, $error = $(f).find(".error"), body = { enabled: f.elements.enabled.checked };
    // kbit/s in the API; what was typed goes as it is, so the router judges 0 or absurd rates
    [["down_mbit", "down_kbit"], ["up_mbit", "up_kbit"]].forEach(function (k) {
      var v = f.elements[k[0]].value.trim();
      if (v !== "") body[k[1]] = Math.round(Number(v) * 1000);
    });
    HW.api.request("qosLink", null, body).done(function () {
      $(f).data("edited", false);
      changed($error)();
    }).fail(failed($error));
  });

  $("#chart-view").on("change", function () { chartView = this.value; drawChart(); });

  $("#device-classes").on("change", "select.class", function () {
    var $row = $(this).closest("tr"), $error = $row.find(".error");
    HW.api.request("qosDevice", { mac: $row.attr("data-mac") }, { "class": this.value })
      .done(function () { $(document.activeElement).trigger("blur"); changed($error)(); }).fail(failed($error));
  });

  /* The agent of a computer: its secret is shown once, to put in /etc/homework-agent.conf there.
     It stays on the page until the page is left: the table's refresh redraws it too. */
  function secretRow(mac, token) {
    return $('<tr class="agent-secret">').attr("data-mac", mac).append($('<td colspan="3">').append(
      $("<p>").text("Install homework-agent on this computer and put this in its /etc/homework-agent.conf " +
                    "(shown only now):"),
      $("<code>").text("secret = " + token)));
  }

  $("#device-classes").on("click", "button.add-agent", function () {
    var $tr = $(this).closest("tr"), mac = $tr.attr("data-mac"), $error = $tr.find(".error");
    HW.api.request("addQosAgent", { mac: mac }).done(function (r) {
      agentSecrets[mac] = r.token;
      var $now = $("#device-classes tbody tr.device-row[data-mac='" + mac + "']");    // redrawn meanwhile?
      $now.nextAll("tr.agent-secret[data-mac='" + mac + "']").remove();
      $now.after(secretRow(mac, r.token));
      $now.find("button.add-agent").remove();
    }).fail(failed($error));
  });

  $("#device-classes").on("change", "select.host-app", function () {
    var $tr = $(this).closest("tr"), mac = $tr.attr("data-mac"), name = $(this).closest("li").attr("data-app");
    var $error = $tr.find(".error");
    HW.api.request("setQosHostApp", { mac: mac }, { name: name, "class": this.value })
      .done(function () { $error.text(""); showHostApps(mac); }).fail(failed($error));
  });

  $("#app-classes").on("click", "button.delete", function () {
    var name = $(this).closest("tr").attr("data-name"), $error = $("#priorities .apps-error");
    HW.api.request("deleteQosApp", { name: name }).done(changed($error)).fail(failed($error));
  });

  $("#app-form").on("submit", function (e) {
    e.preventDefault();
    var f = this, $error = $(f).find(".error");
    var body = { name: f.elements.name.value.trim(), "class": f.elements["class"].value,
                 ports: list(f.elements.ports.value), domains: list(f.elements.domains.value), window: null };
    var days = $(f).find(".days input:checked").map(function () { return this.value; }).get();
    if (days.length || f.elements.start.value || f.elements.end.value) {
      body.window = { days: days, start: f.elements.start.value, end: f.elements.end.value };
    }
    HW.api.request("qosApp", null, body).done(function () { f.reset(); changed($error)(); }).fail(failed($error));
  });

  function addPresets() {
    var $box = $("#priorities .presets");
    PRESETS.forEach(function (p) {
      $box.append($('<button type="button" class="secondary">').attr("data-name", p.name)
        .attr("title", word(p["class"]) + ": " + p.ports.concat(p.domains).join(", ")).text("+ " + p.name));
    });
    $box.on("click", "button", function () {
      var name = this.dataset.name, $error = $("#priorities .presets-error");
      var preset = PRESETS.filter(function (p) { return p.name === name; })[0];
      HW.api.request("qosApp", null, $.extend({ window: null }, preset)).done(changed($error)).fail(failed($error));
    });
  }

  function addFormControls() {
    $("#app-form select[name=class]").replaceWith(classSelect("high").attr("name", "class"));
    var $days = $("#app-form .days");
    DAYS.forEach(function (d) {
      $days.append($("<label>").append($('<input type="checkbox">').val(d), " " + d));
    });
    $("#priorities .classes dt").each(function () { $(this).text(word(this.dataset.class)); });
  }

  function start() {
    load();
    pollStats();
  }

  addFormControls();
  addPresets();
  HW.shell.page({ main: "#priorities", start: start, stop: stop });
});
