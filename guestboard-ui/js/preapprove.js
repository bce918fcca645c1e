/* "Add a device by MAC": permit or blacklist a MAC before it is first seen (a new
   console the family knows is coming). The API pre-approves it (POST /ws.v1/permit/{mac} on
   a MAC never seen); its first DHCP request then meets the decision at once. Below the form:
   the devices decided on but not seen yet (last_seen 0 in /ws.v1/devices). */
jQuery(function ($) {
  "use strict";
  var $form = $("#preapprove");
  if (!$form.length) return;
  var $list = $form.find("ul.expected");

  function render(views) {
    var waiting = views.filter(function (v) { return v.state !== "unknown" && !v.last_seen; });
    $list.empty();
    waiting.forEach(function (v) {
      $("<li>").attr("data-mac", v.mac).addClass(v.state)
        .append($("<code>").text(v.mac), " ", $("<span>").addClass("state").text(v.state),
                " ", $("<small>").text("known, not yet seen"))
        .appendTo($list);
    });
    $list.prop("hidden", waiting.length === 0);
  }

  function refresh() {
    var loggedIn = !$("#board").prop("hidden");
    $form.prop("hidden", !loggedIn);       // shown with the board (main.js shows it on login)
    if (loggedIn) HW.api.call("GET", "devices").done(render);
  }

  $form.on("submit", function (e) {
    e.preventDefault();
    var mac = $.trim(this.elements.mac.value), decision = this.elements.decision.value;
    var $status = $form.find(".status").removeClass("error").text("");
    HW.api[decision](mac).done(function (view) {
      $status.text(view.mac + (view.last_seen ? " is now " + view.state
                                              : " is " + view.state + " (pre-approved: not seen yet)"));
      $form[0].elements.mac.value = "";
      refresh();
    }).fail(function (xhr) {
      $status.addClass("error").text(HW.api.errorText(xhr));
    });
  });

  new MutationObserver(refresh).observe($("#board")[0], { attributes: true, attributeFilter: ["hidden"] });
  refresh();
  setInterval(refresh, 5000);
});
