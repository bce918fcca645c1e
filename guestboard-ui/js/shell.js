/* The page shell every page of the Guest Board shares: the header with the page's title,
   the navigation between the pages, the log-out button, the log-in form, and the one way a
   page starts once logged in. A page's HTML holds only its own content:

     <body data-page="usage" data-title="Usage" data-login="Log in to see the household's usage">
       <main id="usage" hidden> ... </main>
     </body>

   Elements marked data-header (the board's live mark and notifications button) move into
   the header. The page's script calls HW.shell.page({main: "#usage", start: fn, stop: fn}):
   `start` runs once logged in (at load if the browser has a session, after a log-in
   otherwise), `stop` when the session ends. */
window.HW = window.HW || {};
HW.shell = (function ($) {
  "use strict";
  var PAGES = [
    { page: "board", href: "./", id: "board-link", text: "Guest Board" },
    { page: "usage", href: "usage.html", id: "usage-link", text: "Usage",
      title: "This month against the cap, per person and per day" },
    { page: "priorities", href: "priorities.html", id: "priorities-link", text: "Priorities",
      title: "Who and what goes first when the line is busy" },
    { page: "openports", href: "openports.html", id: "open-ports-link", text: "Open ports",
      title: "Every port open from the internet, per device" },
    { page: "querylog", href: "querylog.html", id: "querylog-link", text: "DNS queries",
      title: "Recent DNS queries per device; block or allow a name" },
    { page: "settings", href: "settings.html", id: "settings-link", text: "Settings",
      title: "Wi-Fi, admin password, time zone, updates, backup, notifications, factory reset" }
  ];
  var built = false;

  function build() {
    if (built) return;
    built = true;
    var body = document.body, here = body.dataset.page || "";
    var title = body.dataset.title || "";
    document.title = "Homework · " + title;
    var $header = $("<header>").append(
      $("<h1>").append("Homework ", $("<span>").text(title)));
    $("[data-header]").each(function () { $header.append(this); });
    var $nav = $('<nav aria-label="Pages">');
    PAGES.forEach(function (p) {
      var $a = $("<a>", { href: p.href, id: p.id }).text(p.text);
      if (p.title) $a.attr("title", p.title);
      if (p.page === here) $a.attr("aria-current", "page");
      $nav.append($a);
    });
    $header.append($nav, $('<button id="logout" type="button" class="secondary" hidden>').text("Log out"));
    var $login = $('<form id="login" class="card" hidden>').append(
      $("<h2>").text(body.dataset.login || "Log in"),
      $("<label>").append("Admin password ",
        $('<input type="password" name="password" autocomplete="current-password" required>')),
      $('<button type="submit">').text("Log in"),
      $('<p class="error" role="alert">'));
    $(body).prepend($('<a class="skip-link" href="#main-content">').text("Skip to the page"), $header, $login);
  }

  /* Start the page: `opts.main` is shown once logged in, with `opts.start()`; on log-out
     or an ended session it is hidden, `opts.stop()` runs and the log-in form comes back. */
  function page(opts) {
    build();
    var $main = $(opts.main);
    $(".skip-link").attr("href", "#" + $main.attr("id"));

    function showLogin(message) {
      if (opts.stop) opts.stop();
      if (HW.panelMode && HW.panelMode.unpaired()) return;      // a panel's session ended (panelmode.js)
      $main.prop("hidden", true);
      $("#logout, [data-logged-in]").prop("hidden", true);
      $("#login").prop("hidden", false).find(".error").text(message || "");
      $("#login input[name=password]").val("").trigger("focus");
    }

    function start(session) {
      $("#login").prop("hidden", true);
      $main.prop("hidden", false);
      $("#logout, [data-logged-in]").prop("hidden", false);
      opts.start(session);
    }

    HW.api.bindLogin(start, showLogin);
    HW.api.session().done(start).fail(function () { showLogin(); });
    return { showLogin: showLogin };
  }

  return { page: page, build: build, PAGES: PAGES };
})(jQuery);
