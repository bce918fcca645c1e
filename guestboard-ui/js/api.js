/* Talking to /ws.v1/: JSON calls with the session's CSRF token, and the live event stream. */
window.HW = window.HW || {};
HW.api = (function ($) {
  "use strict";
  var BASE = "/ws.v1/";
  var csrf = null;
  var onUnauthorized = function () {};

  function call(method, path, body) {
    return $.ajax({
      url: BASE + path, method: method, dataType: "json",
      contentType: body !== undefined ? "application/json" : undefined,
      data: body !== undefined ? JSON.stringify(body) : (method === "POST" ? "" : undefined),
      headers: csrf && method !== "GET" ? { "X-CSRF-Token": csrf } : {}
    }).fail(function (xhr) {
      if (xhr.status === 401) onUnauthorized();
    });
  }

  function errorText(xhr) {
    return (xhr.responseJSON && xhr.responseJSON.error) || ("error " + xhr.status);
  }

  function session() {
    var ticket = setupTicket(), panelCode = fromAddress("panel-code");
    var check = function () {
      return $.ajax({ url: BASE + "session", dataType: "json" }).done(function (s) { csrf = s.csrf || null; });
    };
    if (panelCode) {
      // A panel's pairing code (a wall tablet's QR code, the router's screen's kiosk): a panel session.
      return $.ajax({ url: BASE + "panels/session", method: "POST", dataType: "json", contentType: "application/json",
                      data: JSON.stringify({ code: panelCode }) })
        .then(function (s) { csrf = s.csrf; return s; }, check);
    }
    if (!ticket) return check();
    // Just set up from the waiting page: its one-time ticket opens the household's session.
    return $.ajax({ url: BASE + "setup/session", method: "POST", dataType: "json", contentType: "application/json",
                    data: JSON.stringify({ ticket: ticket }) })
      .then(function (s) { csrf = s.csrf; return s; }, check);
  }

  /* The ticket the waiting page's set-up passes in the address (#setup-ticket=...), taken
     out of it at once so it is never bookmarked or shared. */
  function setupTicket() { return fromAddress("setup-ticket"); }

  function fromAddress(name) {
    var m = new RegExp("(?:^#|&)" + name + "=([^&]+)").exec(window.location.hash);
    if (!m) return null;
    window.history.replaceState(null, "", window.location.pathname + window.location.search);
    return decodeURIComponent(m[1]);
  }

  function login(password) {
    return $.ajax({ url: BASE + "login", method: "POST", dataType: "json", contentType: "application/json",
                    data: JSON.stringify({ password: password }) })
      .done(function (s) { csrf = s.csrf; });
  }

  function logout() {
    return call("POST", "logout").always(function () { csrf = null; });
  }

  /* EventSource reconnects by itself; `handlers.closed` runs when it gives up (e.g. 401). */
  function stream(handlers) {
    var es = new EventSource(BASE + "events");
    ["snapshot", "device", "lease", "link", "bandwidth", "alert", "restart"].forEach(function (name) {
      es.addEventListener(name, function (ev) {
        var data;
        try { data = JSON.parse(ev.data); } catch (e) { return; }
        if (handlers[name]) handlers[name](data);
      });
    });
    es.addEventListener("open", function () { handlers.state && handlers.state(true); });
    es.addEventListener("error", function () {
      handlers.state && handlers.state(false);
      if (es.readyState === EventSource.CLOSED && handlers.closed) handlers.closed();
    });
    es.addEventListener("end", function () { es.close(); handlers.closed && handlers.closed(); });
    return es;
  }

  function mac(m) { return encodeURIComponent(m); }

  /* The page's #login form and #logout button, the same on every page: `start` runs once
     logged in, `showLogin(message)` when a call finds the session gone or on logout. */
  function bindLogin(start, showLogin) {
    onUnauthorized = function () { showLogin("Please log in."); };
    $("#login").on("submit", function (e) {
      e.preventDefault();
      var $f = $(this);
      login(this.elements.password.value).done(start).fail(function (xhr) {
        $f.find(".error").text(xhr.status === 401 ? "Wrong password." : errorText(xhr));
      });
    });
    $("#logout").on("click", function () { logout().always(function () { showLogin(); }); });
  }

  return {
    call: call, errorText: errorText, session: session, login: login, logout: logout, stream: stream,
    permit: function (m) { return call("POST", "permit/" + mac(m)); },
    deny: function (m) { return call("POST", "deny/" + mac(m)); },
    blacklist: function (m) { return call("POST", "blacklist/" + mac(m)); },
    whitelist: function (m) { return call("POST", "whitelist/" + mac(m)); },
    forget: function (m) { return call("POST", "forget/" + mac(m)); },
    meta: function (m, fields) { return call("POST", "meta/" + mac(m), fields); },
    device: function (m) { return call("GET", "devices/" + mac(m)); },
    dnsRule: function (action, m, domain) {
      return call("POST", action + "-dns/" + mac(m) + "/" + encodeURIComponent(domain));
    },
    removeDnsRule: function (m, domain) {
      return call("POST", "remove-dns-rule/" + mac(m) + "/" + encodeURIComponent(domain));
    },
    onUnauthorized: function (fn) { onUnauthorized = fn; },
    bindLogin: bindLogin
  };
})(jQuery);
