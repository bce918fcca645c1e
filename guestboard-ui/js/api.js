/* Talking to /ws.v1/: every call names a route of HW.routes (which builds its URL) and its
   answer reaches the caller through HW.model (which keeps the fields the board declares);
   changes carry the session's CSRF token. The live event stream's events go through
   HW.model the same way. */
window.HW = window.HW || {};
HW.api = (function ($) {
  "use strict";
  var csrf = null;
  var onUnauthorized = function () {};
  var EVENTS = { snapshot: "SnapshotEvent", device: "DeviceEvent", lease: "LeaseEvent", link: "LinkEvent",
                 bandwidth: "BandwidthEvent", alert: "AlertEvent", restart: "RestartEvent" };

  /* Route `name` with `params` (its {path} parameters and query parameters) and a JSON
     `body`: a promise of (the answer as HW.model reads it, the jqXHR); a failure gets the
     jqXHR. ($.when of several gives each as [answer, jqXHR].) `opts.quiet`: a poll that
     runs logged out too, so a 401 does not bring the log-in form. */
  function request(name, params, body, opts) {
    var route = HW.routes.get(name);
    return $.ajax({
      url: HW.routes.url(name, params), method: route.method, dataType: "json",
      contentType: body !== undefined ? "application/json" : undefined,
      data: body !== undefined ? JSON.stringify(body) : (route.method === "POST" ? "" : undefined),
      headers: csrf && route.method !== "GET" ? { "X-CSRF-Token": csrf } : {}
    }).then(function (data, status, xhr) {
      return $.Deferred().resolve(HW.model.read(route.answer, data), xhr).promise();
    }, function (xhr) {
      if (xhr.status === 401 && !(opts && opts.quiet) && name !== "login" && name !== "session" &&
          name !== "setupSession") onUnauthorized();
      return $.Deferred().reject(xhr).promise();
    });
  }

  /* A call by method and path, for the tests' page-side helpers: the path must be one of
     HW.routes' (its parameters filled in), so nothing reaches the API around them. */
  function call(method, path, body) {
    var bare = path.split("?")[0], query = path.indexOf("?") >= 0 ? path.slice(path.indexOf("?") + 1) : "";
    var found = null;
    Object.keys(HW.routes.ROUTES).some(function (name) {
      var route = HW.routes.ROUTES[name], keys = [];
      if (route.method !== method) return false;
      var pattern = new RegExp("^" + route.path.replace(/[.]/g, "\\.").replace(/\{(\w+)\}/g, function (_, k) {
        keys.push(k);
        return "([^/]+)";
      }) + "$");
      var m = pattern.exec(bare);
      if (!m) return false;
      var params = {};
      keys.forEach(function (k, i) { params[k] = decodeURIComponent(m[i + 1]); });
      query.split("&").filter(Boolean).forEach(function (kv) {
        var pair = kv.split("=");
        params[decodeURIComponent(pair[0])] = decodeURIComponent(pair[1] || "");
      });
      found = { name: name, params: params };
      return true;
    });
    if (!found) throw new Error("HW.api.call: " + method + " " + path + " is no route of HW.routes");
    return request(found.name, found.params, body);
  }

  function errorText(xhr) {
    return (xhr && xhr.responseJSON && xhr.responseJSON.error) || ("error " + (xhr ? xhr.status : ""));
  }

  /* The session, if this browser has one: keeps its CSRF token for the changes. */
  function session() {
    var ticket = setupTicket(), panelCode = fromAddress("panel-code");
    var check = function () {
      return request("session").done(function (s) { csrf = s.csrf || null; });
    };
    if (panelCode) {
      // A panel's pairing code (a wall tablet's QR code, the router's screen's kiosk): a panel session.
      return request("panelSession", null, { code: panelCode })
        .then(function (s) { csrf = s.csrf; return s; }, check);
    }
    if (!ticket) return check();
    // Just set up from the waiting page: its one-time ticket opens the household's session.
    return request("setupSession", null, { ticket: ticket })
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
    return request("login", null, { password: password }).done(function (s) { csrf = s.csrf; });
  }

  function logout() {
    return request("logout").always(function () { csrf = null; });
  }

  /* EventSource reconnects by itself; `handlers.closed` runs when it gives up (e.g. 401). */
  function stream(handlers) {
    var es = new EventSource(HW.routes.url("events"));
    Object.keys(EVENTS).forEach(function (name) {
      es.addEventListener(name, function (ev) {
        var data;
        try { data = JSON.parse(ev.data); } catch (e) { return; }
        if (handlers[name]) handlers[name](HW.model.read(EVENTS[name], data));
      });
    });
    es.addEventListener("open", function () { if (handlers.state) handlers.state(true); });
    es.addEventListener("error", function () {
      if (handlers.state) handlers.state(false);
      if (es.readyState === EventSource.CLOSED && handlers.closed) handlers.closed();
    });
    es.addEventListener("end", function () { es.close(); if (handlers.closed) handlers.closed(); });
    return es;
  }

  /* The page's #login form and #logout button (the page shell's): `start` runs once logged
     in, `showLogin(message)` when a call finds the session gone or on logout. */
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

  /* An upload with the session's token (a file as the body, not JSON): the route's answer,
     as request gives it. */
  function upload(name, params, file, progress) {
    var route = HW.routes.get(name);
    return $.ajax({
      url: HW.routes.url(name, params), method: route.method, dataType: "json", data: file,
      processData: false, contentType: "application/octet-stream",
      headers: csrf ? { "X-CSRF-Token": csrf } : {},
      xhr: function () {
        var x = $.ajaxSettings.xhr();
        if (progress && x.upload) x.upload.addEventListener("progress", progress);
        return x;
      }
    }).then(function (data, status, xhr) {
      return $.Deferred().resolve(HW.model.read(route.answer, data), xhr).promise();
    });
  }

  return {
    request: request, call: call, upload: upload, errorText: errorText, session: session, login: login, logout: logout,
    stream: stream, bindLogin: bindLogin, EVENTS: EVENTS,
    onUnauthorized: function (fn) { onUnauthorized = fn; }
  };
})(jQuery);
