(function () {
  "use strict";
  var errors = [];
  function flush() { if (document.body) document.body.setAttribute("data-errors", errors.join(" | ")); }
  function record(msg) { errors.push(String(msg).slice(0, 300)); flush(); }
  window.addEventListener("error", function (e) {
    if (e.target && e.target !== window && e.target.tagName) {
      record("failed to load a " + e.target.tagName.toLowerCase() + " element");
    } else {
      record((e.message || "error") + (e.filename ? " at " + e.filename + ":" + e.lineno : ""));
    }
  }, true);
  window.addEventListener("unhandledrejection", function (e) { record("unhandled rejection: " + e.reason); });
  document.addEventListener("securitypolicyviolation", function (e) {
    record("blocked by the page's policy: " + e.violatedDirective + " " + (e.blockedURI || ""));
  });
  document.addEventListener("DOMContentLoaded", flush);
})();
