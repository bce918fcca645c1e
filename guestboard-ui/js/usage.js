/* The household usage page: this billing month against the cap with the projection to the
   billing day, who used how much (per owner; "unassigned" for devices without one), and a
   line per day. Log-in and session handling as on the board (js/api.js). */
jQuery(function ($) {
  "use strict";
  var REFRESH_MS = 60000;
  var timer = 0;
  var C = HW.charts.COLOURS;

  function stop() { clearTimeout(timer); }

  function date(epoch) {
    return new Date(epoch * 1000).toLocaleDateString(undefined, { day: "numeric", month: "short" });
  }

  /* The cap as it can be typed back unchanged: "500G" when whole, else bytes. */
  function exact(n) {
    var units = [["T", 1e12], ["G", 1e9], ["M", 1e6], ["K", 1e3]];
    for (var i = 0; i < units.length; i++) if (n % units[i][1] === 0) return n / units[i][1] + units[i][0];
    return String(n);
  }

  function percent(p) { return p === null || p === undefined ? "" : " (" + p + "%)"; }

  function showCap(c) {
    var s = HW.charts.size;
    $("#usage .period").text(date(c.start) + " – " + date(c.end - 1));
    $("#usage .cap-text").toggleClass("over", !!c.cap && c.used >= c.cap)
      .text(c.cap ? s(c.used) + " of " + s(c.cap) + " used" + percent(c.percent)
                  : s(c.used) + " used (no monthly allowance set)");
    $("#usage .projection").text("Projected " + s(c.projected) + percent(c.projected_percent) +
                                 " by the billing day, " + date(c.end) + ".");
    var f = $("#cap-form")[0];
    if (!$(f).data("edited")) {
      f.elements.cap.value = c.cap ? exact(c.cap) : "";
      f.elements.billing_day.value = c.billing_day;
    }
    var labels = ["Used so far", "Projected by " + date(c.end)], data = [c.used, c.projected];
    var colours = [C.down, C.projected];
    if (c.cap) { labels.push("Allowance"); data.push(c.cap); colours.push(C.cap); }
    HW.charts.draw($("#cap-chart")[0], {
      type: "bar",
      data: { labels: labels, datasets: [{ label: "Bytes", data: data, backgroundColor: colours }] },
      options: { indexAxis: "y", scales: { x: HW.charts.bytesAxis() },
                 plugins: { legend: { display: false }, tooltip: HW.charts.tooltip() } }
    });
  }

  function showOwners(u) {
    HW.charts.draw($("#owners-chart")[0], {
      type: "bar",
      data: { labels: u.rows.map(function (r) { return r.who; }), datasets: [
        { label: "Down", data: u.rows.map(function (r) { return r.down; }), backgroundColor: C.down },
        { label: "Up", data: u.rows.map(function (r) { return r.up; }), backgroundColor: C.up }] },
      options: { scales: { x: { stacked: true }, y: HW.charts.bytesAxis({ stacked: true }) },
                 plugins: { tooltip: HW.charts.tooltip() } }
    });
  }

  /* Every day of the month so far (u.steps), the quiet ones as zero. */
  function showDays(u) {
    var perDay = {};
    u.series.forEach(function (r) { perDay[r.period] = (perDay[r.period] || 0) + r.total; });
    HW.charts.draw($("#days-chart")[0], {
      type: "line",
      data: { labels: u.steps, datasets: [{ label: "Household", data: u.steps.map(function (d) { return perDay[d] || 0; }),
                                            borderColor: C.line, backgroundColor: C.line, pointRadius: 3 }] },
      options: { scales: { x: { ticks: { callback: function (v) { return this.getLabelForValue(v).slice(5); } } },
                           y: HW.charts.bytesAxis() },
                 plugins: { legend: { display: false }, tooltip: HW.charts.tooltip() } }
    });
  }

  function load() {
    clearTimeout(timer);
    timer = setTimeout(load, REFRESH_MS);
    $.when(HW.api.request("usageCap"), HW.api.request("usage", { period: "month", by: "owner" }))
      .done(function (cap, owners) {
        $(".load-error").text("");
        showCap(cap[0]);
        showOwners(owners[0]);
        showDays(owners[0]);
        $("#usage").attr("data-loaded", String(Date.now()));   // tests wait for a completed load
      })
      .fail(function (xhr) {
        if (xhr.status === 401) return;             // HW.api shows the log-in form
        $(".load-error").text(xhr.status === 503 ? "Usage needs the router's usage component." : HW.api.errorText(xhr));
      });
  }

  function start() {
    $("#usage a.csv").attr("href", HW.routes.url("usageCsv"));
    load();
  }

  $("#cap-form").on("input", function () { $(this).data("edited", true); });
  $("#cap-form").on("submit", function (e) {
    e.preventDefault();
    var f = this, body = {};
    if (f.elements.cap.value.trim()) body.cap = f.elements.cap.value.trim();
    if (f.elements.billing_day.value) body.billing_day = Number(f.elements.billing_day.value);
    HW.api.request("setUsageCap", null, body).done(function () {
      $(f).data("edited", false).find(".error").text("");
      load();
    }).fail(function (xhr) { $(f).find(".error").text(HW.api.errorText(xhr)); });
  });

  HW.shell.page({ main: "#usage", start: start, stop: stop });
});
