/* Shared by the device panel's traffic chart and the usage page: Debian's Chart.js
   (libjs-chart.js, served by lighttpd at /lib/chart.js/), byte formatting and colours. */
window.HW = window.HW || {};
HW.charts = (function ($) {
  "use strict";
  var CHART_JS = "/lib/chart.js/chart.min.js";
  var loading = null;
  var COLOURS = { down: "#2c6e49", up: "#e8a317", line: "#3b6ea8", cap: "#b3261e", projected: "#9bbfa9" };

  /* Chart.js once, only when a chart is first shown: the board itself does not need it. */
  function load() {
    if (window.Chart) return $.Deferred().resolve(window.Chart).promise();
    if (!loading) {
      var d = $.Deferred();
      var s = document.createElement("script");
      s.src = CHART_JS;
      s.onload = function () { d.resolve(window.Chart); };
      s.onerror = function () { loading = null; d.reject("the chart library (" + CHART_JS + ") did not load"); };
      document.head.appendChild(s);
      loading = d.promise();
    }
    return loading;
  }

  /* Bytes as every view of the board writes them (labels.js). */
  function size(n) { return HW.labels.bytes(n); }

  /* A bytes axis whose ticks say different things: steps of whole bytes (an idle chart no
     longer reads "1 B, 1 B, 0 B"), at least a kilobyte tall, and each tick written with the
     decimals its step needs. */
  var MIN_TOP = 1000;
  function bytesAxis(extra) {
    return $.extend(true, {
      beginAtZero: true, suggestedMax: MIN_TOP,
      ticks: { precision: 0, callback: function (v, i, ticks) { return tick(v, ticks); } }
    }, extra || {});
  }

  function tick(v, ticks) {
    var step = ticks && ticks.length > 1 ? Math.abs(ticks[1].value - ticks[0].value) : 0;
    if (v < 1000 || !step) return size(v);
    var units = ["kB", "MB", "GB", "TB"], n = v, s = step, i = -1;
    do { n /= 1000; s /= 1000; i++; } while (n >= 1000 && i < units.length - 1);
    var decimals = s >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(s)));
    return n.toFixed(decimals) + " " + units[i];
  }

  /* Tooltips in bytes too ("Down: 5.2 MB"). */
  function tooltip() {
    return { callbacks: { label: function (c) {
      var value = c.chart.options.indexAxis === "y" ? c.parsed.x : c.parsed.y;
      return (c.dataset.label || c.label) + ": " + size(value);
    } } };
  }

  /* Create the chart on first use, then only swap its data (no flicker, one instance per canvas). */
  function draw(canvas, config) {
    var chart = window.Chart.getChart(canvas);
    if (chart) {
      chart.data = config.data;
      chart.update();
      return chart;
    }
    config.options = $.extend(true, { animation: false, responsive: true, maintainAspectRatio: false }, config.options);
    return new window.Chart(canvas, config);
  }

  return { load: load, size: size, bytesAxis: bytesAxis, tick: tick, tooltip: tooltip, draw: draw, COLOURS: COLOURS };
})(jQuery);
