/* The first hour (nox-modules/homework/components/api/setup.py): on a router nobody has
   set up yet, the waiting page offers "This is my router: set it up". The device chooses
   the router's password and is let in; the board then opens with a one-time ticket, so
   nobody types the password twice. Plain JS: the captive server serves no libraries. */
(function () {
  "use strict";
  var API = "/ws.v1/setup";

  function $(id) { return document.getElementById(id); }

  function say(text, isError) {
    var el = $("setup-message");
    el.textContent = text || "";
    el.className = isError ? "error" : "status";
  }

  function request(method, body) {
    return fetch(API, {
      method: method, cache: "no-store", credentials: "omit",
      headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) { return { status: r.status, data: data }; });
    });
  }

  function offer(s) {
    if (!s.open || !s.device) return;
    $("setup").hidden = false;
    if (s.needs !== "nothing") {
      $("setup-proof").hidden = false;
      $("setup-proof").querySelector("input").required = true;
    }
    $("setup-start").addEventListener("click", function () {
      $("setup-start").hidden = true;
      $("setup-form").hidden = false;
      $("setup-form").elements.password.focus();
    });
    $("setup-form").addEventListener("submit", function (e) {
      e.preventDefault();
      var f = e.target;
      if (f.elements.password.value !== f.elements.again.value) {
        say("The two passwords differ: type the same one twice.", true);
        return;
      }
      var body = { password: f.elements.password.value };
      if (!$("setup-proof").hidden) body.proof = f.elements.proof.value.trim();
      f.querySelector("button").disabled = true;
      say("Setting the router up…");
      request("POST", body).then(function (r) {
        if (r.status !== 200) {
          f.querySelector("button").disabled = false;
          say(r.data.error || ("The router answered " + r.status + "."), true);
          return;
        }
        f.hidden = true;
        var link = r.data.board + "#setup-ticket=" + encodeURIComponent(r.data.ticket);
        $("setup-done").hidden = false;
        $("setup-board").href = link;
        $("setup-board").textContent = r.data.board;
        if (r.data.tls_sha256) $("setup-fingerprint").textContent = r.data.tls_sha256;
        $("setup-fingerprint-row").hidden = !r.data.tls_sha256;
        say("");
        setTimeout(function () { window.location.href = link; }, 1500);
      }).catch(function () {
        f.querySelector("button").disabled = false;
        say("The router did not answer. Try again in a moment.", true);
      });
    });
  }

  request("GET").then(function (r) { if (r.status === 200) offer(r.data); }).catch(function () {});
})();
