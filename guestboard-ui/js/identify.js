/* What a device is, as the router guesses it from what the device says about itself (the
   identify component's `identity` in the device view): an icon and the guess on the
   board's label, and in the panel the guess, how sure, why ("calls itself “Toms-iPhone”;
   asked for an address as iOS 15 and later do"), and the household's correction. A guess
   never lets anything in: the Let in / Refuse decision stays the household's. A device back
   with a new private address that looks like one already let in is labelled so, and the
   panel offers to let it in as that device: a person's tap, never the router's. */
window.HW = window.HW || {};
HW.identify = (function ($) {
  "use strict";
  var mac = null;
  var ICONS = { phone: "📱", tablet: "📱", laptop: "💻", TV: "📺", console: "🎮", speaker: "🔊",
                printer: "🖨", camera: "📷", IoT: "💡" };
  var TYPES = ["phone", "laptop", "tablet", "TV", "console", "speaker", "printer", "camera", "IoT"];
  var LEVELS = { sure: "", likely: "", maybe: "?" };

  function icon(type) { return ICONS[type] || "❔"; }

  /* The label's line: "📱 iPhone (iOS 15 or later)", "?" when the router is unsure; "" without a guess. */
  function text(d) {
    var id = d.identity;
    if (id && id.looks_like) return icon(id.type) + " " + id.looks_like.text;
    if (!id || !id.label) return "";
    return icon(id.type) + " " + (id.corrected ? "" : "looks like ") + id.label + (id.corrected ? "" : LEVELS[id.level] || "");
  }

  function levelText(id) {
    if (id.corrected) return "as the household said";
    return { sure: "the router is fairly sure", likely: "the router's best guess", maybe: "the router is not sure" }[id.level] || "";
  }

  function add() {
    if ($("#panel .identity").length) return;
    var $type = $('<select name="type" aria-label="What kind of device">').append($('<option value="">').text("kind…"));
    TYPES.forEach(function (t) { $type.append($("<option>").val(t).text(icon(t) + " " + t)); });
    var $box = $('<section class="identity" aria-label="What it is">').append(
      $("<h3>").text("What it is"),
      $('<p class="identity-guess">').append($('<span class="identity-label">'), " ", $('<span class="identity-level hint">')),
      $('<p class="identity-why">'),
      $('<p class="identity-twin" hidden>').append(
        $('<span class="identity-twin-text">'), " ",
        $('<button type="button" class="identity-join">')),
      $('<form class="identity-form">').append(
        $type,
        $('<input name="label" maxlength="60" aria-label="What it is, in your words">').attr("placeholder", "what it is, e.g. Tom's laptop"),
        $('<button type="submit">').text("Correct"),
        $('<button type="button" class="secondary identity-clear">').text("Use the router's guess")),
      $('<p class="identity-error" role="alert">'));
    /* in the first column, below what the device is doing now: the panel's head stays one
       line, so the columns (Pause, priority, websites) keep the panel's height */
    $("#panel .col.now").append($box);
    $box.on("submit", ".identity-form", function (e) {
      e.preventDefault();
      var body = {};
      if (this.elements.type.value) body.type = this.elements.type.value;
      if (this.elements.label.value.trim()) body.label = this.elements.label.value.trim();
      var f = this;
      call("correctIdentity", body, function () { f.reset(); });
    });
    /* Only this tap makes the two addresses one device: the router never does it by itself. */
    $box.on("click", ".identity-join", function () {
      call("joinIdentity", { as: this.dataset.twin });
    });
    $box.on("click", ".identity-clear", function () {
      call("clearIdentity");
    });
  }

  /* A change to the shown device (route `name` of HW.routes), then the panel and the board's
     label read the device again. */
  function call(name, body, done) {
    var shown = mac, $error = $("#panel .identity-error").text("");
    HW.api.request(name, { mac: shown }, body).done(function () {
      if (done) done();
      HW.api.request("device", { mac: shown }).done(function (d) {
        HW.board.upsert(d);
        if (mac === shown) fill(d);
      });
    }).fail(function (xhr) { $error.text(HW.api.errorText(xhr)); });
  }

  function fill(d) {
    var $box = $("#panel .identity");
    if (d.mac !== mac) $box.find(".identity-error").text("");
    mac = d.mac;
    var id = d.identity;
    $box.prop("hidden", id === undefined || d.state === "unknown");
    if (id === undefined) return;
    $box.find(".identity-label").text(id && id.label ? icon(id.type) + " " + id.label : "Not known yet: it has said nothing the router recognises.");
    $box.find(".identity-level").text(id && id.label ? "(" + levelText(id) + ")" : "");
    $box.find(".identity-why").text(id && id.why && id.why.length ? "Why: " + id.why.join("; ") + "." : "");
    $box.find(".identity-clear").prop("hidden", !(id && id.corrected));
    var twin = id && id.looks_like;
    $box.find(".identity-twin").prop("hidden", !twin);
    $box.find(".identity-twin-text").text(twin ? "It " + twin.text + "." : "");
    $box.find(".identity-join").text(twin ? "Let it in as " + twin.name : "").attr("data-twin", twin ? twin.mac : "");
  }

  /* Its story (GET identity/<mac>/story): first seen, who let it in and when, where it has
     been plugged in or connected, the names it looked up most today, what it moved today
     and this week, its alerts, and the newest events; the whole timeline downloads as CSV.
     Asked again when another device is shown or after STORY_MS, not on every live update. */
  var STORY_MS = 30000, STORY_SHOWN = 20;
  var story = { mac: null, at: 0 };

  function addStory() {
    if ($("#panel .story").length) return;
    var $box = $('<section class="story" aria-label="Its story">').append(
      $("<h3>").text("Its story"),
      $('<ul class="story-facts">'),
      $('<ol class="story-events" reversed>'),
      $('<p>').append($('<a class="story-csv" download>').text("Download its story as CSV")),
      $('<p class="story-error" role="alert">'));
    $("#panel .identity").after($box);
  }

  function when(at) { return new Date(at * 1000).toLocaleString(); }

  function showStory(s) {
    var $box = $("#panel .story"), $facts = $box.find(".story-facts").empty();
    function fact(head, words) { $facts.append($("<li>").append($("<strong>").text(head + ": "), document.createTextNode(words))); }
    fact("First seen", s.first_seen ? when(s.first_seen) : "not yet");
    fact("Let in", s.approved ? when(s.approved.at) + (s.approved.by ? " by " + s.approved.by : "") : "not yet");
    fact("Where", s.places.length ? s.places.join(", ") : "not seen on a port yet");
    fact("Looked up most today", s.names_today === null ? s.names_note
      : s.names_today.length ? s.names_today.map(function (n) { return n.name + " (" + n.count + ")"; }).join(", ") : "nothing");
    if (s.usage) {
      fact("Today", s.usage.today.words);
      fact("This week", s.usage.week.words);
    }
    fact("Alerts", s.alerts.length ? s.alerts.length + ", the newest: " + s.alerts[s.alerts.length - 1].title : "none");
    var $events = $box.find(".story-events").empty();
    s.events.slice(-STORY_SHOWN).reverse().forEach(function (e) {
      $events.append($("<li>").attr("data-kind", e.kind).append(
        $('<span class="story-when hint">').text(when(e.at)), " ", $('<span class="story-words">').text(e.words)));
    });
  }

  function fillStory(d) {
    var $box = $("#panel .story");
    $box.prop("hidden", d.identity === undefined || d.state === "unknown");
    if (d.identity === undefined || d.state === "unknown") return;
    $box.find(".story-csv").attr("href", HW.routes.url("story", { mac: d.mac, format: "csv" }));
    if (story.mac === d.mac && Date.now() - story.at < STORY_MS) return;
    if (story.mac !== d.mac) $box.find(".story-facts, .story-events").empty();
    story = { mac: d.mac, at: Date.now() };
    var shown = d.mac, $error = $box.find(".story-error").text("");
    HW.api.request("story", { mac: d.mac }).done(function (s) {
      if (mac === shown) showStory(s);
    }).fail(function (xhr) { story.at = 0; $error.text(HW.api.errorText(xhr)); });
  }

  return { add: function () { add(); addStory(); story.at = 0; },     // opening the panel asks again
           fill: function (d) { fill(d); fillStory(d); }, text: text, icon: icon };
})(jQuery);
