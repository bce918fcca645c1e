/* The settings page's "Backup" section: download a backup of the settings
   (POST /ws.v1/backup, secrets encrypted with the passphrase typed here) and restore one
   (POST /ws.v1/restore with the chosen file's JSON). The passphrase is only sent, never
   kept. Runs on its own: the section is inside #settings, shown after login (js/settings.js). */
(function ($) {
  "use strict";

  function say($form, which, text) { $form.find("." + which).text(text || ""); }

  function saveFile(name, doc) {
    var blob = new Blob([JSON.stringify(doc, null, 1)], { type: "application/json" });
    var link = $("<a>", { href: URL.createObjectURL(blob), download: name }).appendTo("body");
    link[0].click();
    setTimeout(function () { URL.revokeObjectURL(link.attr("href")); link.remove(); }, 1000);
  }

  function fileName(xhr) {
    var found = /filename="([^"]+)"/.exec(xhr.getResponseHeader("Content-Disposition") || "");
    return found ? found[1] : "homework-backup.hwbak";
  }

  function download(e) {
    e.preventDefault();
    var $form = $(this), passphrase = this.elements.passphrase.value;
    say($form, "error", "");
    say($form, "status", "Making the backup …");
    var $button = $form.find("button").prop("disabled", true);
    HW.api.call("POST", "backup", { passphrase: passphrase }).done(function (doc, _, xhr) {
      saveFile(fileName(xhr), doc);
      say($form, "status", "Backup downloaded: " + fileName(xhr) + ". Keep the passphrase: it is needed to restore.");
      $form[0].reset();
    }).fail(function (xhr) {
      say($form, "status", "");
      say($form, "error", HW.api.errorText(xhr));
    }).always(function () { $button.prop("disabled", false); });
  }

  function restore(e) {
    e.preventDefault();
    var $form = $(this), file = this.elements.file.files[0], passphrase = this.elements.passphrase.value;
    say($form, "error", "");
    say($form, "status", "");
    if (!file) { say($form, "error", "Choose a backup file first."); return; }
    if (!window.confirm("Replace every setting of this router with the backup's?")) return;
    var reader = new FileReader();
    reader.onload = function () {
      var doc;
      try { doc = JSON.parse(reader.result); } catch (err) {
        say($form, "error", "This file is not a Homework backup (not JSON).");
        return;
      }
      var $button = $form.find("button").prop("disabled", true);
      say($form, "status", "Checking and restoring …");
      HW.api.call("POST", "restore", { passphrase: passphrase, backup: doc }).done(function (r) {
        var parts = $.map(r.restored, function (n, table) { return n ? table.replace(/_/g, " ") + ": " + n : null; });
        var what = "the backup of " + r.created + " (" + (parts.join(", ") || "nothing") + ")";
        var problems = (r.problems || []).join(" ");
        $form[0].reset();
        if (!r.restarting) {
          say($form, "status", "Wrote " + what + ". " + (r.note || "") + " " + problems);
          $button.prop("disabled", false);
          return;
        }
        /* "Restored" only once the restarted router has every setting in force. */
        say($form, "status", "Applying " + what + ": the router restarts and is back in " +
            (r.back_in ? "about " + r.back_in + " s" : "a few seconds") + " …");
        /* the banner counts down; this form says "Restored" once the router is back */
        HW.restart.show("settings restored", r.back_in, { stay: true });
        var deadline = Date.now() + Math.max(180, 3 * (r.back_in || 0)) * 1000;
        (function poll() {
          $.ajax({ url: "ws.v1/restore/status", dataType: "json", cache: false }).done(function (s) {
            var done = s.restore && s.restore.applied && s.restore.at === r.at;
            if (done) {
              var told = (s.restore.problems || []).join(" ");
              say($form, "status", "Restored " + what + ": every setting is in force." + (told ? " " + told : "") +
                  " Log in again if the board asks.");
              $button.prop("disabled", false);
            } else if (Date.now() < deadline) {
              setTimeout(poll, 1000);
            } else {
              say($form, "error", "The router has not said the restored settings are in force yet.");
              $button.prop("disabled", false);
            }
          }).fail(function () {
            if (Date.now() < deadline) setTimeout(poll, 1000);
            else { say($form, "error", "The router did not come back after the restore."); $button.prop("disabled", false); }
          });
        })();
      }).fail(function (xhr) {
        say($form, "status", "");
        say($form, "error", HW.api.errorText(xhr));
        $button.prop("disabled", false);
      });
    };
    reader.onerror = function () { say($form, "error", "The file could not be read."); };
    reader.readAsText(file);
  }

  $(function () {
    $("#backup-download").on("submit", download);
    $("#backup-restore").on("submit", restore);
  });
})(jQuery);
