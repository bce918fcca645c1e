/* The DNS query log page: recent queries from hwdb (GET /ws.v1/dns/queries), searchable and
   filtered by device or verdict, with one-click Block/Allow of a name for that device or the
   whole household (POST /ws.v1/deny-dns|permit-dns/<mac or "household">/<name>); counts per
   device and the most blocked names (GET /ws.v1/dns/queries/summary). */
jQuery(function ($) {
  "use strict";
  var REFRESH_MS = 10000;
  var LIMIT = 200;
  var HOUSEHOLD = "household";
  var DECIDED_MS = 60000;
  var timer = 0;
  var names = {};          // mac -> the name the board shows
  // "<mac or household> <name>" -> what the household just did there. The table is redrawn
  // every 10 s (and a redraw may land while the call is on its way): the confirmation stays
  // on every row it concerns for a minute instead of vanishing with the row it was put in.
  var decided = {};

  function showLogin(message) {
    clearTimeout(timer);
    $("#querylog, #logout").prop("hidden", true);
    $("#login").prop("hidden", false).find(".error").text(message || "");
    $("#login input[name=password]").val("").trigger("focus");
  }

  function time(epoch) {
    return new Date(epoch * 1000).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function who(mac, fallback) { return names[mac] || fallback || mac || "?"; }

  function filters() {
    var f = $("#filters")[0], q = { limit: LIMIT };
    if (f.elements.search.value.trim()) q.search = f.elements.search.value.trim();
    if (f.elements.mac.value) q.mac = f.elements.mac.value;
    if (f.elements.verdict.value) q.verdict = f.elements.verdict.value;
    return q;
  }

  function decision(mac, name) {
    var d = decided[mac + " " + name] || decided[HOUSEHOLD + " " + name];
    return d && Date.now() - d.at < DECIDED_MS ? d.text : "";
  }

  function doneMark(text) { return $("<span>", { "class": "done", text: text }); }

  /* The rule buttons of one row: block an allowed name, allow a blocked one. */
  function ruleCell(row) {
    var $td = $("<td>", { "class": "rule" });
    if (!row.mac || row.name.charAt(0) === "(") return $td;   // "(other names)": a flood's fold-up row
    var done = decision(row.mac, row.name);
    if (done) return $td.append(doneMark(done));
    var action = row.verdict === "blocked" ? "permit" : "deny";
    var word = action === "deny" ? "Block" : "Allow";
    [[row.mac, "device", word + " for " + who(row.mac, row.device)], [HOUSEHOLD, "household", word + " for everyone"]]
      .forEach(function (target) {
        $("<button>", { type: "button", text: target[1] === "device" ? word : word + " for all",
                        title: target[2] + ": " + row.name, "class": target[1] === "device" ? "" : "secondary" })
          .attr({ "data-action": action, "data-target": target[1], "data-mac": target[0], "data-name": row.name })
          .appendTo($td);
      });
    return $td;
  }

  function showQueries(result) {
    var $body = $("#queries tbody").empty();
    result.queries.forEach(function (r) {
      $("<tr>", { "class": r.verdict }).attr({ "data-mac": r.mac, "data-name": r.name }).append(
        $("<td>", { text: time(r.at) }),
        $("<td>", { "class": "device", text: who(r.mac, r.device) }),
        $("<td>", { "class": "name", text: r.name + (r.count > 1 ? " ×" + r.count : "") }),
        $("<td>", { text: r.type }),
        $("<td>", { "class": "verdict", text: r.verdict,
                    title: r.verdict === "bogus" ? "The answer failed its DNSSEC check (forged or broken): the device got an error" : "" }),
        ruleCell(r)).appendTo($body);
    });
    $("#querylog .status").text(result.queries.length ? result.queries.length + " most recent queries" +
                                (result.queries.length >= result.limit ? " (older ones not shown)" : "")
                                : "No queries match.");
  }

  function showSummary(s) {
    var $body = $("#per-device tbody").empty();
    s.devices.forEach(function (d) {
      $("<tr>").attr("data-mac", d.mac).append($("<td>", { text: who(d.mac, d.device) }),
        $("<td>", { "class": "total", text: d.total }), $("<td>", { "class": "blocked", text: d.blocked })).appendTo($body);
    });
    var $top = $("#top-blocked").empty();
    s.top_blocked.forEach(function (t) {
      $("<li>", { text: t.name + " (" + t.count + ")" }).attr("data-name", t.name).appendTo($top);
    });
    if (!s.top_blocked.length) $("<li>", { text: "Nothing blocked yet." }).appendTo($top);
  }

  function showDevices(views) {
    var $sel = $("#filters select[name=mac]"), chosen = $sel.val();
    $sel.find("option:not(:first)").remove();
    views.filter(function (v) { return v.state; }).forEach(function (v) {
      names[v.mac] = v.label || v.name || v.hostname || v.mac;
      $("<option>", { value: v.mac, text: names[v.mac] }).appendTo($sel);
    });
    $sel.val(chosen || "");
  }

  function load() {
    clearTimeout(timer);
    timer = setTimeout(load, REFRESH_MS);
    $.when(HW.api.call("GET", "dns/queries?" + $.param(filters())), HW.api.call("GET", "dns/queries/summary"))
      .done(function (queries, summary) {
        $(".load-error").text("");
        showQueries(queries[0]);
        showSummary(summary[0]);
        $("#querylog").attr("data-loaded", String(Date.now()));   // tests wait for a completed load
      })
      .fail(function (xhr) {
        if (xhr.status === 401) return;             // HW.api shows the log-in form
        $(".load-error").text(xhr.status === 503 ? "The query log needs hwdb on the router." : HW.api.errorText(xhr));
      });
  }

  function start() {
    $("#login").prop("hidden", true);
    $("#querylog, #logout").prop("hidden", false);
    HW.api.call("GET", "devices").done(showDevices).always(load);
  }

  HW.api.bindLogin(start, showLogin);
  var typing = 0;
  $("#filters").on("submit", function (e) { e.preventDefault(); load(); });
  $("#filters input[name=search]").on("input", function () { clearTimeout(typing); typing = setTimeout(load, 300); });
  $("#filters select").on("change", load);
  $("#filters .refresh").on("click", load);
  $("#queries").on("click", "td.rule button", function () {
    var $b = $(this), $cell = $b.closest("td");
    $cell.find("button").prop("disabled", true);
    var mac = $b.attr("data-mac"), name = $b.attr("data-name");
    HW.api.dnsRule($b.attr("data-action"), mac, name)
      .done(function () {
        var text = ($b.attr("data-action") === "deny" ? "Blocked" : "Allowed") +
                   (mac === HOUSEHOLD ? " for everyone" : " for this device");
        decided[mac + " " + name] = { text: text, at: Date.now() };
        $cell.empty().append(doneMark(text));          // the clicked row, if a redraw has not replaced it
        $("#queries tbody tr").filter(function () {     // and every row shown now that it concerns
          var $tr = $(this);
          return $tr.attr("data-name") === name && (mac === HOUSEHOLD || $tr.attr("data-mac") === mac);
        }).find("td.rule").empty().append(function () { return doneMark(text); });
      })
      .fail(function (xhr) {
        $cell.find("button").prop("disabled", false);
        $(".load-error").text(HW.api.errorText(xhr));
      });
  });

  HW.api.session().done(start).fail(function () { showLogin(); });
});
