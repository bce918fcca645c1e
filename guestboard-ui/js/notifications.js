/* The notification list: a header button with the unread count opens a list of
   what the router wanted the household to know (new devices asking to join, blacklists,
   alerts), newest first, unread in bold. "Mark all read" and "Send a test notification"
   call the API. Polls GET /ws.v1/notifications while logged in (and when opened);
   standalone (board.js does not know about it). Text only, never HTML. */
(function ($) {
  "use strict";
  var POLL_MS = 10000;
  var $button, $panel, $list, $status;

  function when(at) {
    var d = new Date(at * 1000);
    return d.toLocaleString();
  }

  function render(data) {
    var unread = data.unread || 0;
    $button.prop("hidden", false).toggleClass("has-unread", unread > 0)
      .text(unread ? "Notifications (" + unread + ")" : "Notifications");
    $list.empty();
    if (!data.notifications.length) {
      $("<li>", { "class": "empty" }).text("Nothing yet.").appendTo($list);
    }
    data.notifications.forEach(function (n) {
      var $li = $("<li>", { "class": n.read ? "read" : "unread", "data-id": n.id });
      $("<span>", { "class": "title" }).text(n.title).appendTo($li);
      $("<span>", { "class": "when" }).text(when(n.at)).appendTo($li);
      if (n.detail) $("<span>", { "class": "detail" }).text(n.detail).appendTo($li);
      $li.appendTo($list);
    });
  }

  function refresh() {
    return $.ajax({ url: "/ws.v1/notifications?limit=50", dataType: "json" })
      .done(render)
      .fail(function () { $button.prop("hidden", true); $panel.prop("hidden", true); });
  }

  function poll() {
    refresh().always(function () { setTimeout(poll, POLL_MS); });
  }

  function say(text) { $status.text(text); }

  $(function () {
    $button = $("#notifications-button");
    $panel = $("#notifications");
    $list = $panel.find("ol");
    $status = $panel.find(".status");
    if (!$button.length) return;
    $button.on("click", function () {
      $panel.prop("hidden", !$panel.prop("hidden"));
      if (!$panel.prop("hidden")) refresh();
    });
    $panel.find(".mark-read").on("click", function () {
      HW.api.call("POST", "notifications/read", {}).done(refresh)
        .fail(function (xhr) { say(HW.api.errorText(xhr)); });
    });
    $panel.find(".send-test").on("click", function () {
      HW.api.call("POST", "notifications/test").done(function () { say("Test notification sent."); refresh(); })
        .fail(function (xhr) { say(HW.api.errorText(xhr)); });
    });
    $panel.find(".close").on("click", function () { $panel.prop("hidden", true); });
    poll();
  });
})(jQuery);
