// quickfdb console: refreshes the live parts of a page (elements with
// data-live and an id) by fetching the page again, every data-refresh ms.
// No library; works without it (pages are complete server-rendered HTML).
(function () {
  "use strict";
  var period = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  var btn = document.getElementById("live-toggle");
  var paused = sessionStorage.getItem("quickfdb-paused") === "1";
  function show() {
    if (!btn) return;
    btn.textContent = paused ? "❚❚ paused" : "● live";
    btn.classList.toggle("off", paused);
  }
  if (btn) {
    btn.addEventListener("click", function () {
      paused = !paused;
      sessionStorage.setItem("quickfdb-paused", paused ? "1" : "0");
      show();
    });
  }
  show();
  if (!period) return;
  var busy = false;
  function tick() {
    if (paused || busy || document.hidden) return;
    // Do not swap content under a person typing in a form.
    var a = document.activeElement;
    if (a && (a.tagName === "INPUT" || a.tagName === "SELECT" || a.tagName === "TEXTAREA")) return;
    busy = true;
    fetch(location.href, { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (el) {
          var fresh = doc.getElementById(el.id);
          if (fresh && fresh.innerHTML !== el.innerHTML) el.innerHTML = fresh.innerHTML;
        });
        document.body.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () {})
      .then(function () { busy = false; });
  }
  setInterval(tick, period);
})();
