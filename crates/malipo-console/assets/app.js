// Malipo console enhancements. Every page works without this file; it only makes things quicker.
(function () {
  "use strict";
  // The "Test mode" switch applies as soon as it is flipped (without script: its Apply button).
  document.querySelectorAll("form.mode").forEach(function (form) {
    var input = form.querySelector("input[type=checkbox]");
    var apply = form.querySelector(".apply");
    if (apply) apply.hidden = true;
    if (input) input.addEventListener("change", function () { form.submit(); });
  });
  // A submitted form's buttons wait for the answer (the one-time key makes a second post
  // harmless; this saves the trip).
  document.querySelectorAll("form[method=post]").forEach(function (form) {
    form.addEventListener("submit", function () {
      setTimeout(function () {
        form.querySelectorAll("button[type=submit]").forEach(function (b) { b.disabled = true; });
      }, 0);
    });
  });
  // "Copy link" (and the like): copies the text of the element named by data-copy. Without
  // script the button stays hidden and the text is selected by hand.
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(source.textContent.trim()).then(function () { button.textContent = "Copied"; });
    });
  });
  // Live regions: an element with data-live="URL" is refreshed from URL (an HTML fragment)
  // every few seconds until the fragment says it is final (data-final on its first element).
  document.querySelectorAll("[data-live]").forEach(function (region) {
    var url = region.getAttribute("data-live");
    var tick = function () {
      if (region.querySelector("[data-final]")) return;
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        // A redirect (the session ended: the sign-in page) is no fragment: stop.
        .then(function (r) { return r.ok && !r.redirected ? r.text() : undefined; })
        .then(function (html) {
          if (html === undefined) return;
          region.innerHTML = html;
          if (!region.querySelector("[data-final]")) setTimeout(tick, 2000);
          // A region marked data-live-reload reloads its page once final (a charge's page then
          // shows its final fields and, once completed, "Refund").
          else if (region.hasAttribute("data-live-reload")) window.location.reload();
        })
        .catch(function () { setTimeout(tick, 5000); });
    };
    setTimeout(tick, 2000);
  });
  // "Print" on a receipt (without script the browser's own print prints it the same).
  document.querySelectorAll("button[data-print]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () { window.print(); });
  });
})();
