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

  /* Decimal units, as ISPs bill (the cap is set in them too). */
  function size(n) {
    n = n || 0;
    if (n < 1000) return Math.round(n) + " B";
    var units = ["kB", "MB", "GB", "TB"], i = -1;
    do { n /= 1000; i++; } while (n >= 1000 && i < units.length - 1);
    return n.toFixed(n < 10 ? 1 : 0) + " " + units[i];
  }

  function bytesAxis(extra) {
    return $.extend({ beginAtZero: true, ticks: { callback: function (v) { return size(v); } } }, extra || {});
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

  return { load: load, size: size, bytesAxis: bytesAxis, tooltip: tooltip, draw: draw, COLOURS: COLOURS };
})(jQuery);
