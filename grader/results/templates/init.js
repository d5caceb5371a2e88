(function () {
  "use strict";
  var doc = document, body = doc.body;
  var dataEl = doc.getElementById("report-data");
  window.perfgradeReport = dataEl ? JSON.parse(dataEl.textContent) : null;

  function cellValue(row, idx, type) {
    var cell = row.cells[idx];
    var raw = cell ? cell.getAttribute("data-v") : null;
    if (raw === null) raw = cell ? cell.textContent : "";
    if (type === "num") { var x = parseFloat(raw); return isNaN(x) ? null : x; }
    return raw === "" ? null : raw.toLowerCase();
  }
  function makeSortable(table) {
    var current = { key: null, dir: 1 };
    function sortTable(key, dir) {
      if (!table.tHead) return false;
      var ths = table.tHead.rows[0].cells, idx = -1, type = "text", i;
      for (i = 0; i < ths.length; i++) {
        if (ths[i].getAttribute("data-key") === key) { idx = i; type = ths[i].getAttribute("data-type") || "text"; }
      }
      if (idx < 0) return false;
      var tbody = table.tBodies[0];
      var rows = Array.prototype.slice.call(tbody.rows).filter(function (r) { return r.hasAttribute("data-i"); });
      rows.sort(function (a, b) {
        var ia = +a.getAttribute("data-i"), ib = +b.getAttribute("data-i");
        var x = cellValue(a, idx, type), y = cellValue(b, idx, type);
        if (x === null || y === null) { return x === y ? ia - ib : (x === null ? 1 : -1); }
        var c = type === "num" ? x - y : (x < y ? -1 : x > y ? 1 : 0);
        return c === 0 ? ia - ib : c * dir;
      });
      rows.forEach(function (r) { tbody.appendChild(r); });
      for (i = 0; i < ths.length; i++) {
        if (ths[i].hasAttribute("data-key")) {
          ths[i].setAttribute("aria-sort", i === idx ? (dir > 0 ? "ascending" : "descending") : "none");
        }
      }
      current.key = key; current.dir = dir;
      table.setAttribute("data-sorted", (dir < 0 ? "-" : "") + key);
      return true;
    }
    if (table.tHead) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
        var btn = th.querySelector("button.sort");
        if (!btn) return;
        btn.addEventListener("click", function () {
          var key = th.getAttribute("data-key");
          sortTable(key, current.key === key ? -current.dir : 1);
        });
      });
    }
    return sortTable;
  }
  var sortables = Array.prototype.slice.call(doc.querySelectorAll("table.sortable"));
  var sorters = sortables.map(makeSortable);
  var mainIdx = -1;
  sortables.forEach(function (t, i) { if (mainIdx < 0 && t.id === "problems") mainIdx = i; });
  if (mainIdx < 0 && sortables.length) mainIdx = 0;

  var samples = Array.prototype.slice.call(doc.querySelectorAll("details.sample"));
  var vchips = Array.prototype.slice.call(doc.querySelectorAll("button[data-filter]"));
  var mchips = Array.prototype.slice.call(doc.querySelectorAll("button[data-mode-filter]"));
  var state = { verdict: "", mode: "" };
  function applyFilters() {
    samples.forEach(function (d) {
      d.hidden = (!!state.verdict && d.getAttribute("data-verdict") !== state.verdict) ||
                 (!!state.mode && d.getAttribute("data-mode") !== state.mode);
    });
    vchips.forEach(function (c) { c.setAttribute("aria-pressed", String(c.getAttribute("data-filter") === state.verdict)); });
    mchips.forEach(function (c) { c.setAttribute("aria-pressed", String(c.getAttribute("data-mode-filter") === state.mode)); });
    var section = doc.getElementById("failing");
    if (section) { section.setAttribute("data-filter", state.verdict); section.setAttribute("data-mode", state.mode); }
  }
  vchips.forEach(function (c) {
    c.addEventListener("click", function () { state.verdict = c.getAttribute("data-filter") || ""; applyFilters(); });
  });
  mchips.forEach(function (c) {
    c.addEventListener("click", function () { state.mode = c.getAttribute("data-mode-filter") || ""; applyFilters(); });
  });
  Array.prototype.forEach.call(doc.querySelectorAll("[data-action]"), function (b) {
    b.addEventListener("click", function () {
      var open = b.getAttribute("data-action") === "expand";
      samples.forEach(function (d) { if (!d.hidden) d.open = open; });
    });
  });

  function fromHash() {
    var hash = location.hash || "";
    var m = /(?:^#|[&;])sort=(-?)([A-Za-z0-9_]+)/.exec(hash);
    if (m && mainIdx >= 0) sorters[mainIdx](m[2], m[1] ? -1 : 1);
    var f = /(?:^#|[&;])filter=([A-Za-z0-9_]*)/.exec(hash);
    var md = /(?:^#|[&;])mode=([A-Za-z0-9_]*)/.exec(hash);
    if (f) state.verdict = f[1];
    if (md) state.mode = md[1];
    if (f || md) applyFilters();
    var s = /^#(sample-[0-9]+)$/.exec(hash);
    if (s) {
      var el = doc.getElementById(s[1]);
      if (el && el.tagName === "DETAILS") { el.hidden = false; el.open = true; }
    }
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();

  body.setAttribute("data-ready", "1");
})();
