/* The notification settings page: webhooks (list, add, remove; a new webhook's
   secret is shown once, as the API answers it, and never fetched again), "Send a test
   notification", the delivery log, and the MQTT and WAN status the API exposes (both polled)
   (GET /ws.v1/notify/status; MQTT is set in the config file, so it is read-only here).
   Logs in with the board's session (js/api.js). Text only, never HTML. */
window.HW = window.HW || {};
/* The page's sections load once the page has logged in (start() below shows #settings):
   HW.settings.whenShown(load) calls load each time #settings goes from hidden to shown.
   `load` returns its request: one that fails for want of the network (a dropped
   connection, the controller restarting) is made again a few seconds later, so a section
   is never left empty by one lost answer; a 401 brings the log-in form instead. */
HW.settings = {
  RETRY_MS: 3000,
  whenShown: function (load) {
    "use strict";
    var loaded = false, busy = false, retryAt = 0;
    setInterval(function () {
      if (jQuery("#settings").prop("hidden")) { loaded = false; return; }
      if (loaded || busy || Date.now() < retryAt) return;
      var request = load();
      if (!request || !request.done) { loaded = true; return; }
      busy = true;
      request.done(function () { loaded = true; })
        .fail(function (xhr) {
          if (xhr.status === 401) loaded = true;           // shown again after the log-in
          else retryAt = Date.now() + HW.settings.RETRY_MS;
        })
        .always(function () { busy = false; });
    }, 300);
  }
};

(function ($) {
  "use strict";
  var POLL_MS = 3000;
  var timer = null;
  var kinds = {};     // notification id -> kind, for the delivery log

  function when(at) { return at ? new Date(at * 1000).toLocaleString() : ""; }

  function cell(text, cls) { return $("<td>", cls ? { "class": cls } : {}).text(text); }

  function emptyRow($tbody, cols, text) {
    $("<tr>").append(cell(text, "empty").attr("colspan", cols)).appendTo($tbody);
  }

  function renderWebhooks(hooks) {
    var $tbody = $("#webhooks tbody").empty();
    if (!hooks.length) emptyRow($tbody, 3, "No webhooks yet.");
    hooks.forEach(function (h) {
      var $remove = $("<button>", { type: "button", "class": "remove secondary" }).text("Remove")
        .on("click", function () { removeWebhook(h); });
      $("<tr>", { "data-id": h.id }).append(cell(h.url + (h.allow_local ? " (local addresses allowed)" : ""), "url"),
                                            cell(when(h.created)), $("<td>").append($remove))
        .appendTo($tbody);
    });
  }

  function renderDeliveries(rows) {
    var $tbody = $("#deliveries tbody").empty();
    if (!rows.length) emptyRow($tbody, 5, "Nothing delivered yet.");
    rows.forEach(function (d) {
      var what = "#" + d.notification + (kinds[d.notification] ? " " + kinds[d.notification] : "");
      $("<tr>", { "class": d.ok ? "ok" : "failed", "data-notification": d.notification })
        .append(cell(when(d.at)), cell(d.webhook), cell(what), cell(String(d.attempt)),
                cell(d.ok ? d.status + " ok" : d.status))
        .appendTo($tbody);
    });
  }

  function renderFacts($dl, facts) {
    $dl.empty();
    facts.forEach(function (f) { $dl.append($("<dt>").text(f[0]), $("<dd>").text(f[1])); });
  }

  function renderStatus(s) {
    var m = s.mqtt;
    renderFacts($("#mqtt dl"), m.host ? [
      ["Broker", m.host + ":" + m.port],
      ["Status", !m.loaded ? "the mqtt component is not loaded" : m.connected ? "connected" : "not connected"],
      ["User", m.username ? m.username + (m.password_set ? " (password set)" : "") : "anonymous"],
      ["Topics", m.topic_prefix + "/…, discovery under " + m.discovery_prefix + "/…"],
      ["Commands", m.accept_commands ? "permit/deny accepted (broker ACL: admin user only)" : "off"]
    ] : [["Broker", "none configured (mqtt.host)"]]);
    var w = s.wan;
    renderFacts($("#wan dl"), w ? [
      ["Interface", w.interface], ["State", w.state + (w.since ? " since " + when(w.since) : "")],
      ["Last look", w.reason || "none yet"]
    ] : [["Watch", "not running (add \"wanwatch\" to [controller] components)"]]);
  }

  function say($where, text) { $where.text(text || ""); }

  function refreshDeliveries() {
    return $.when(HW.api.request("notifications", { limit: 100 }), HW.api.request("deliveries", { limit: 50 }))
      .done(function (notes, log) {
        notes[0].notifications.forEach(function (n) { kinds[n.id] = n.kind; });
        renderDeliveries(log[0]);
      });
  }

  function refreshStatus() {
    return HW.api.request("notifyStatus").done(renderStatus);
  }

  function refreshAll() {
    HW.api.request("webhooks").done(renderWebhooks)
      .fail(function (xhr) { say($("#webhooks .error"), HW.api.errorText(xhr)); });
    refreshStatus();
    refreshDeliveries();
  }

  function addWebhook(e) {
    e.preventDefault();
    var $err = $("#webhooks .error");
    var url = $.trim(this.elements.url.value);
    say($err, "");
    $("#webhook-secret").prop("hidden", true);
    var body = { url: url };
    if (this.elements.allow_local.checked) body.allow_local = true;
    HW.api.request("addWebhook", null, body).done(function (hook) {
      $("#webhook-add")[0].reset();
      var $s = $("#webhook-secret");
      $s.find(".url").text(hook.url);
      $s.find(".value").text(hook.secret);
      $s.prop("hidden", false);
      HW.api.request("webhooks").done(renderWebhooks);
    }).fail(function (xhr) { say($err, HW.api.errorText(xhr)); });
  }

  function removeWebhook(h) {
    if (!window.confirm("Stop sending notifications to " + h.url + "?")) return;
    HW.api.request("removeWebhook", { hook_id: h.id })
      .done(function () { HW.api.request("webhooks").done(renderWebhooks); })
      .fail(function (xhr) { say($("#webhooks .error"), HW.api.errorText(xhr)); });
  }

  function start() {
    refreshAll();
    // The log and the MQTT/WAN status change by themselves: poll them.
    if (!timer) timer = setInterval(function () { refreshDeliveries(); refreshStatus(); }, POLL_MS);
  }

  function stop() {
    if (timer) { clearInterval(timer); timer = null; }
    // The secret must not linger on screen for the next person.
    $("#webhook-secret").prop("hidden", true).find(".value").text("");
  }

  /* The sections' index, made from the sections themselves (each top-level section's id and
     its heading's own words, not its buttons'): a new section is one place in settings.html. */
  function buildIndex() {
    var $ol = $("#settings .section-index ol").empty();
    $("#settings .sections > section[id]").each(function () {
      var $heading = $(this).children("h2").first().clone();
      $heading.children().remove();
      $("<li>").append($("<a>", { href: "#" + this.id }).text($.trim($heading.text()))).appendTo($ol);
    });
  }

  $(function () {
    buildIndex();
    $("#webhook-add").on("submit", addWebhook);
    $("#webhook-secret .dismiss").on("click", function () {
      $("#webhook-secret").prop("hidden", true).find(".value").text("");
    });
    $("#test .send-test").on("click", function () {
      var $st = $("#test .status");
      HW.api.request("testNotification").done(function (n) {
        kinds[n.id] = n.kind;
        say($st, "Test notification #" + n.id + " sent.");
        refreshDeliveries();
      }).fail(function (xhr) { say($st, HW.api.errorText(xhr)); });
    });
    $("#deliveries .refresh").on("click", refreshDeliveries);
    HW.shell.page({ main: "#settings", start: start, stop: stop });
  });
})(jQuery);
