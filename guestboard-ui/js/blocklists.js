/* The settings page's "Filters" section: blocklist subscriptions (names, blocked
   queries, last fetch and error; add by URL, refresh, remove) and the safe-search switch.
   GET/POST /ws.v1/blocklists..., /ws.v1/dns/safe-search. Runs whenever the settings become
   visible (after login, js/settings.js), so it needs nothing from that file. Text only. */
(function ($) {
  "use strict";

  function when(at) { return at ? new Date(at * 1000).toLocaleString() : "never"; }

  function cell(text, cls) { return $("<td>", cls ? { "class": cls } : {}).text(text); }

  function say(which, text) { $("#filters ." + which).text(text || ""); }

  function render(data) {
    $("#filters input[name=safe_search]").prop("checked", !!data.safe_search);
    var $tbody = $("#filters tbody").empty();
    if (!data.blocklists.length) {
      $("<tr>").append(cell("No blocklists yet.", "empty").attr("colspan", 6)).appendTo($tbody);
    }
    data.blocklists.forEach(function (b) {
      var $refresh = $("<button>", { type: "button", "class": "refresh-list secondary" }).text("Refresh")
        .on("click", function () { refreshList(b); });
      var $remove = $("<button>", { type: "button", "class": "remove secondary" }).text("Remove")
        .on("click", function () { removeList(b); });
      var $url = cell(b.url, "url");
      if (b.error) $url.append($("<div>", { "class": "error" }).text(b.error));
      $("<tr>", { "data-id": b.id }).append(
        $url, cell(b.owner === "household" ? "everyone" : b.owner), cell(String(b.rules), "rules"),
        cell(String(b.blocked_queries), "blocked"), cell(when(b.fetched)), $("<td>").append($refresh, $remove)
      ).appendTo($tbody);
    });
  }

  function load() {
    return HW.api.call("GET", "blocklists").done(render)
      .fail(function (xhr) { say("error", HW.api.errorText(xhr)); });
  }

  function add(e) {
    e.preventDefault();
    var url = $.trim(this.elements.url.value), owner = $.trim(this.elements.owner.value);
    var $button = $(this).find("button").prop("disabled", true);
    say("error", "");
    say("status", "Fetching " + url + " …");
    var body = owner ? { url: url, owner: owner } : { url: url };
    if (this.elements.allow_local && this.elements.allow_local.checked) body.allow_local = true;
    HW.api.call("POST", "blocklists", body).done(function (b) {
      $("#blocklist-add")[0].reset();
      say("status", "Added: " + b.rules + " names.");
      load();
    }).fail(function (xhr) {
      say("status", "");
      say("error", HW.api.errorText(xhr));
    }).always(function () { $button.prop("disabled", false); });
  }

  function refreshList(b) {
    say("error", "");
    say("status", "Fetching " + b.url + " …");
    HW.api.call("POST", "blocklists/" + encodeURIComponent(b.id) + "/refresh")
      .done(function (r) { say("status", "Refreshed: " + r.rules + " names."); })
      .fail(function (xhr) { say("status", ""); say("error", HW.api.errorText(xhr)); })
      .always(load);
  }

  function removeList(b) {
    if (!window.confirm("Stop blocking the names of " + b.url + "?")) return;
    HW.api.call("POST", "blocklists/" + encodeURIComponent(b.id) + "/remove")
      .done(function () { say("status", "Removed."); load(); })
      .fail(function (xhr) { say("error", HW.api.errorText(xhr)); });
  }

  function setSafeSearch() {
    var on = this.checked;
    say("error", "");
    HW.api.call("POST", "dns/safe-search", { enabled: on })
      .done(function (r) { say("status", "Safe-search is " + (r.enabled ? "on." : "off.")); })
      .fail(function (xhr) { say("error", HW.api.errorText(xhr)); load(); });
  }

  $(function () {
    var settings = document.getElementById("settings");
    if (!settings) return;
    $("#blocklist-add").on("submit", add);
    $("#filters .refresh").on("click", load);
    $("#filters input[name=safe_search]").on("change", setSafeSearch);
    // Logged in: js/settings.js shows #settings; load then (and again after a new login).
    new MutationObserver(function () { if (!settings.hidden) load(); })
      .observe(settings, { attributes: true, attributeFilter: ["hidden"] });
    if (!settings.hidden) load();
  });
})(jQuery);
