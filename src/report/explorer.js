// The explorer on top of report.html (compaction-sim, hand-written, no library): pick a
// setting, compare it with the recommended one and the baseline, move the budgets and see
// the recommendation move. It reads only the JSON island #explorer-data and writes the DOM
// with textContent, never markup from data. The recommendation rule is the CLI's
// (table::summary::pick): compacting settings within every budget set, cheapest first, then
// fewest broken references, then lowest setting id; never another framework's policy, one
// of the guide's alternatives (rows with `alt`, drawn as squares) or a setting whose summary
// re-fires compaction every turn (`thrash`, docs/pitfalls.md).
(function () {
  "use strict";
  var root = document.getElementById("explorer");
  var island = document.getElementById("explorer-data");
  if (!root || !island) return;
  var D = JSON.parse(island.textContent);
  // Every look-up by a key from the URL or the data goes through a map without a prototype
  // (dict()), so `#setting=__proto__` or a column named `constructor` finds nothing.
  function dict() { return Object.create(null); }
  var rows = D.rows.map(function (r, i) {
    var o = dict();
    o.index = i;
    D.cols.forEach(function (c, k) { o[c] = r[k]; });
    o.worst = D.worst[i] || [];
    return o;
  });
  if (!rows.length) return; // `report` refuses an empty run; nothing to explore anyway
  var NS = "http://www.w3.org/2000/svg";

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    return e;
  }
  function group(n) {
    return n.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function usd(v) {
    if (v === null || v === undefined) return "n/a";
    var t = Math.abs(v).toFixed(D.money_decimals).split(".");
    return (v < 0 ? "-$" : "$") + group(t[0]) + (t[1] ? "." + t[1] : "");
  }
  function pct(v) { return v === null || v === undefined ? "n/a" : (v * 100).toFixed(2) + " %"; }
  function secs(v) { return v === null || v === undefined ? "n/a" : v.toFixed(1) + " s"; }
  function int(v) { return v === null || v === undefined ? "n/a" : group(String(Math.round(v))); }
  function name(list, i) { return i === null || i === undefined ? "" : list[i]; }

  // --- the recommendation rule, as table::summary::pick ------------------------------------
  function meets(r, b) {
    return !r.baseline && !r.policy && !r.alt && !r.thrash &&
      (b.broken === null || r.broken <= b.broken) &&
      (b.detail === null || r.detail <= b.detail) &&
      (b.wait === null || r.wait <= b.wait);
  }
  function before(x, y) {
    if (x.cost !== y.cost) return x.cost < y.cost;
    if (x.broken !== y.broken) return x.broken < y.broken;
    return x.id < y.id;
  }
  function pick(b) {
    var best = null;
    rows.forEach(function (r) { if (meets(r, b) && (best === null || before(r, best))) best = r; });
    return best;
  }

  // --- state: from the run, then the URL hash (#setting=ID&broken=0.1&detail=&wait=) --------
  var budgets = { broken: D.budgets.broken_references, detail: D.budgets.detail_lost, wait: D.budgets.latency_s };
  var hash = dict();
  location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("=");
    if (i > 0) hash[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
  });
  function share(text) {
    // A share typed as it is passed to the CLI (0.107) parses to the same double.
    return text === "" || text === undefined ? null : parseFloat(text);
  }
  if ("broken" in hash) budgets.broken = share(hash.broken);
  if ("detail" in hash) budgets.detail = share(hash.detail);
  if ("wait" in hash) budgets.wait = share(hash.wait);
  var byId = dict();
  rows.forEach(function (r) { byId[String(r.id)] = r; });
  var reco = pick(budgets);
  var chosen = byId[hash.setting] || reco || rows.filter(function (r) { return !r.baseline && !r.alt; })[0] || rows[0];
  var showFrontier = true;

  // --- layout --------------------------------------------------------------------------------
  root.appendChild(el("h2", {}, "Explore the settings"));
  root.appendChild(el("p", {}, D.note));
  var controls = el("div", { "class": "ex-controls" });
  root.appendChild(controls);
  var fields = [
    ["kind", "trigger", function (r) { return r.kind; }],
    ["at", "after_tokens", function (r) { return r.at; }],
    ["keep", "keep_recent_events", function (r) { return r.keep; }],
    ["ai", "after_invocations", function (r) { return r.ai; }],
    ["ov", "overlap", function (r) { return r.ov; }],
    ["sum", "summarizer", function (r) { return r.sum; }],
    ["cli", "client mode", function (r) { return r.cli; }],
    ["model", "agent model", function (r) { return r.model; }],
    ["tok", "tokenizer", function (r) { return r.tok; }]
  ];
  var selects = dict();
  var compacting = rows.filter(function (r) { return !r.baseline && !r.alt; });
  fields.forEach(function (f) {
    var values = [];
    compacting.forEach(function (r) {
      var v = f[2](r);
      if (v !== null && values.indexOf(v) < 0) values.push(v);
    });
    values.sort(function (a, b) { return typeof a === "number" ? a - b : 0; });
    var label = el("label", {}, f[1] + " ");
    var s = el("select", { id: "ex-" + f[0], name: f[0] });
    s.appendChild(el("option", { value: "" }, "(not set)"));
    values.forEach(function (v) {
      var text = f[0] === "sum" ? name(D.summarizers, v) : f[0] === "cli" ? name(D.clients, v) :
        f[0] === "model" ? name(D.models, v) : f[0] === "tok" ? name(D.tokenizers, v) : String(v);
      s.appendChild(el("option", { value: String(v) }, text));
    });
    s.addEventListener("change", function () { fromControls(f[0]); });
    label.appendChild(s);
    if (values.length > 1 || f[0] === "kind") controls.appendChild(label);
    selects[f[0]] = s;
  });
  var budgetBox = el("div", { "class": "ex-controls" });
  root.appendChild(budgetBox);
  function budgetInput(key, text, unit, scale) {
    var label = el("label", {}, text + " ");
    var v = budgets[key];
    var input = el("input", { id: "ex-budget-" + key, type: "number", min: "0", step: "any", size: "7",
      value: v === null ? "" : String(+(v * scale).toPrecision(12)) });
    input.addEventListener("input", function () {
      // Percent typed, share compared: "10.7" becomes the double of 0.107, as the CLI's flag.
      budgets[key] = input.value === "" ? null : parseFloat(scale === 100 ? input.value + "e-2" : input.value);
      update();
    });
    label.appendChild(input);
    label.appendChild(document.createTextNode(" " + unit));
    budgetBox.appendChild(label);
  }
  budgetInput("broken", "broken references at most", "% (mean per session)", 100);
  budgetInput("detail", "history read only through summaries at most", "% (mean per session)", 100);
  budgetInput("wait", "longest summarizer wait at most", "s (p95 over sessions)", 1);
  var pickLine = el("p", { id: "explorer-pick" });
  root.appendChild(pickLine);
  var missing = el("p", { id: "explorer-missing", "class": "skipped" });
  root.appendChild(missing);
  var table = el("table", { id: "explorer-compare" });
  root.appendChild(el("div", { "class": "scroll" })).appendChild(table);
  root.appendChild(el("p", {}, "Paste this line into the agent's MANIFEST for the chosen setting:"));
  var paste = el("pre", { id: "explorer-paste" });
  root.appendChild(paste);
  var chartHead = el("p", {}, "Cost against broken references, one point per setting shown (hover for the setting, click to choose it; the chosen one is ringed in blue, the recommended one in red). ");
  var toggle = el("button", { type: "button", id: "ex-frontier" }, "hide the frontier");
  toggle.addEventListener("click", function () {
    showFrontier = !showFrontier;
    toggle.textContent = showFrontier ? "hide the frontier" : "show the frontier";
    draw();
  });
  chartHead.appendChild(toggle);
  root.appendChild(chartHead);
  var hover = el("p", { id: "explorer-hover", "class": "skipped" }, "\u00a0");
  var plot = svg("svg", { viewBox: "0 0 900 420", role: "img", id: "explorer-chart" });
  root.appendChild(plot);
  root.appendChild(hover);
  var drillHead = el("h3", { id: "explorer-drill-head" });
  root.appendChild(drillHead);
  var drill = el("table", { id: "explorer-drill" });
  root.appendChild(el("div", { "class": "scroll" })).appendChild(drill);

  // --- behaviour -------------------------------------------------------------------------------
  function fromControls(changed) {
    var want = dict();
    fields.forEach(function (f) { want[f[0]] = selects[f[0]].value; });
    var kind = want.kind;
    function fits(r, strict) {
      return fields.every(function (f) {
        var k = f[0];
        var v = f[2](r);
        if (k === "kind") return v === kind;
        var tokens = k === "at" || k === "keep", turns = k === "ai" || k === "ov";
        if ((tokens && kind === "invocations") || (turns && kind === "tokens")) return true;
        if (!strict && k !== changed && (tokens || turns)) return true;
        return String(v) === want[k];
      });
    }
    var exact = compacting.filter(function (r) { return fits(r, true); });
    var near = exact.length ? exact : compacting.filter(function (r) { return fits(r, false); });
    if (near.length) {
      chosen = near[0];
      missing.textContent = exact.length ? "" :
        "That combination is not " + (D.sampled ? "among the settings shown" : "in the grid") +
        "; showing the nearest one that keeps the field just changed.";
    } else {
      missing.textContent = "No setting shown has that combination.";
    }
    update();
  }
  function syncControls() {
    fields.forEach(function (f) {
      var v = chosen.baseline || chosen.alt ? null : f[2](chosen);
      selects[f[0]].value = v === null || v === undefined ? "" : String(v);
    });
  }
  function broken(r) {
    if (r.broken === null) return "n/a";
    var basis = name(D.bases, r.basis);
    var t = pct(r.broken);
    if (basis === "estimated") {
      t += " (estimated: " + int(r.low) + " to " + int(r.high) + " of " + int(r.refs) + " references, all sessions)";
    } else if (basis) {
      t += " (" + basis + ")";
    }
    return t;
  }
  var metrics = [
    ["setting", function (r) { return r.baseline ? "no compaction" : r.label; }],
    ["cost (USD, all sessions)", function (r) { return usd(r.cost); }],
    ["saved vs no compaction (USD, all sessions)", function (r) { return usd(r.saved); }],
    ["broken references (mean per session)", broken],
    ["history read only through summaries (mean per session)", function (r) { return pct(r.detail); }],
    ["critical events hidden (all sessions)", function (r) { return int(r.crit); }],
    ["longest end-of-run wait (s, p95 over sessions)", function (r) { return secs(r.eor); }],
    ["longest pre-request wait (s, p95 over sessions)", function (r) { return secs(r.pre); }],
    ["summarizer calls (all sessions)", function (r) { return int(r.calls); }]
  ];
  function update() {
    reco = pick(budgets);
    pickLine.textContent = "";
    pickLine.appendChild(document.createTextNode("Recommended under these budgets: "));
    pickLine.appendChild(el("code", { id: "explorer-pick-label" }, reco ? reco.label : "none: no setting meets them"));
    pickLine.setAttribute("data-setting-id", reco ? String(reco.id) : "");
    pickLine.appendChild(document.createTextNode(reco && reco.reco ? " (as in the report)" : reco ? " (the report's budgets recommend another)" : ""));
    syncControls();
    var base = chosen.base === null ? null : rows[chosen.base];
    var cols = [["chosen", chosen], ["recommended", reco], ["no compaction", base]];
    table.textContent = "";
    var head = el("tr");
    head.appendChild(el("th", {}, ""));
    cols.forEach(function (c) { head.appendChild(el("th", {}, c[0])); });
    table.appendChild(el("thead")).appendChild(head);
    var body = el("tbody");
    metrics.forEach(function (m, k) {
      var tr = el("tr");
      tr.appendChild(el("td", {}, m[0]));
      cols.forEach(function (c) {
        var td = el("td", { "class": k ? "num" : "" }, c[1] ? m[1](c[1]) : "n/a");
        if (k === 0) td.setAttribute("data-setting-id", c[1] ? String(c[1].id) : "");
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    table.appendChild(body);
    table.setAttribute("data-chosen", String(chosen.id));
    paste.textContent = chosen.baseline ? "(no compaction: leave compaction unset)" :
      chosen.alt ? "(" + chosen.alt + ": one of the guide's alternatives, an action rather than a manifest line; the report's Alternatives section says what to do)" :
      (chosen.label.indexOf("compaction=") === 0 ? chosen.label : "compaction=" + chosen.label);
    drawDrill();
    draw();
  }
  function drawDrill() {
    drillHead.textContent = "Sessions that lose most under the chosen setting (at most " + D.worst_per_setting +
      " per setting, by broken references, then history read only through summaries)";
    drill.textContent = "";
    var head = el("tr");
    ["session", "source", "broken references", "history read only through summaries", "critical events hidden",
      "cost (USD)", "model requests"].forEach(function (h) { head.appendChild(el("th", {}, h)); });
    drill.appendChild(el("thead")).appendChild(head);
    var body = el("tbody");
    chosen.worst.forEach(function (w) {
      var tr = el("tr");
      var s = D.sessions[w[0]];
      tr.appendChild(el("td", {}, s[0]));
      tr.appendChild(el("td", {}, s[1]));
      [pct(w[1]), pct(w[2]), int(w[3]), usd(w[4]), int(w[5])].forEach(function (v) {
        tr.appendChild(el("td", { "class": "num" }, v));
      });
      body.appendChild(tr);
    });
    if (!chosen.worst.length) {
      var tr = el("tr");
      tr.appendChild(el("td", { colspan: "7" }, "No session rows for this setting."));
      body.appendChild(tr);
    }
    drill.appendChild(body);
  }
  var COLORS = Object.assign(dict(), { tokens: "#1f77b4", invocations: "#2ca02c", both: "#9467bd", none: "#000000" });
  var ALT_COLOR = "#8c564b";
  function draw() {
    plot.textContent = "";
    var pts = rows.filter(function (r) { return r.cost !== null && r.broken !== null; });
    if (!pts.length) return;
    var W = 900, H = 420, L = 80, R = 20, T = 15, B = 45;
    var xs = pts.map(function (r) { return r.broken * 100; }), ys = pts.map(function (r) { return r.cost; });
    var x0 = 0, x1 = Math.max.apply(null, xs) * 1.05 || 1;
    var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
    var pad = (y1 - y0) * 0.05 || Math.abs(y1) * 0.05 || 1;
    y0 -= pad; y1 += pad;
    function X(v) { return L + (v - x0) / (x1 - x0) * (W - L - R); }
    function Y(v) { return H - B - (v - y0) / (y1 - y0) * (H - T - B); }
    plot.appendChild(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "#fff", stroke: "#ccc" }));
    [0, 0.5, 1].forEach(function (f) {
      var tx = svg("text", { x: X(x0 + f * (x1 - x0)), y: H - B + 18, "text-anchor": "middle", "font-size": "12" });
      tx.textContent = (x0 + f * (x1 - x0)).toFixed(1) + " %";
      plot.appendChild(tx);
      var ty = svg("text", { x: L - 6, y: Y(y0 + f * (y1 - y0)) + 4, "text-anchor": "end", "font-size": "12" });
      ty.textContent = usd(y0 + f * (y1 - y0));
      plot.appendChild(ty);
    });
    var xl = svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", "font-size": "12" });
    xl.textContent = "broken references (mean per session, %)";
    plot.appendChild(xl);
    var yl = svg("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", "font-size": "12", transform: "rotate(-90 14 " + (T + H - B) / 2 + ")" });
    yl.textContent = "cost (USD, all sessions)";
    plot.appendChild(yl);
    if (showFrontier) {
      var f = pts.filter(function (r) { return r.pareto; }).sort(function (a, b) { return a.cost - b.cost; });
      plot.appendChild(svg("polyline", { id: "explorer-frontier", fill: "none", stroke: "#ff7f0e", "stroke-width": "2",
        points: f.map(function (r) { return X(r.broken * 100) + "," + Y(r.cost); }).join(" ") }));
    }
    pts.forEach(function (r) {
      var at = { "fill-opacity": "0.75", "data-setting-id": String(r.id), style: "cursor:pointer" };
      var c;
      if (r.alt) {
        at.x = X(r.broken * 100) - 5; at.y = Y(r.cost) - 5; at.width = 10; at.height = 10; at.fill = ALT_COLOR;
        c = svg("rect", at);
      } else {
        at.cx = X(r.broken * 100); at.cy = Y(r.cost); at.r = 4.5; at.fill = COLORS[r.kind] || "#777";
        c = svg("circle", at);
      }
      var title = svg("title");
      title.textContent = (r.baseline ? "no compaction" : r.label) + ": " + usd(r.cost) + ", broken references " + pct(r.broken);
      c.appendChild(title);
      c.addEventListener("mouseover", function () { hover.textContent = title.textContent; });
      c.addEventListener("click", function () { chosen = r; missing.textContent = ""; update(); });
      plot.appendChild(c);
    });
    function ring(r, color, id) {
      if (!r || r.cost === null || r.broken === null) return;
      plot.appendChild(svg("circle", { id: id, cx: X(r.broken * 100), cy: Y(r.cost), r: 10, fill: "none",
        stroke: color, "stroke-width": "3", "pointer-events": "none" }));
    }
    ring(reco, "#d62728", "explorer-ring-recommended");
    ring(chosen, "#1f5fbf", "explorer-ring-chosen");
  }

  // --- self test: #selftest=KEY:VALUE,... drives the real controls (browser test) ----------------
  function selftest(spec) {
    var log = [];
    spec.split(",").forEach(function (step) {
      var i = step.indexOf(":");
      var key = step.slice(0, i), value = step.slice(i + 1);
      var input = document.getElementById("ex-budget-" + key) || document.getElementById("ex-" + key);
      if (!input) { log.push("no control " + key); return; }
      if (input.tagName === "SELECT") {
        // An option by its value or by the text it shows (a summarizer's name).
        for (var k = 0; k < input.options.length; k++) {
          if (input.options[k].textContent === value) value = input.options[k].value;
        }
      }
      input.value = value;
      input.dispatchEvent(new Event(input.tagName === "SELECT" ? "change" : "input", { bubbles: true }));
      log.push(key + "=" + input.value);
    });
    var out = el("pre", { id: "explorer-selftest" }, JSON.stringify({
      steps: log,
      chosen: chosen.id,
      chosen_cost: usd(chosen.cost),
      recommended: reco ? reco.id : null,
      shown_chosen: table.getAttribute("data-chosen"),
      shown_recommended: pickLine.getAttribute("data-setting-id")
    }));
    root.appendChild(out);
  }

  root.hidden = false;
  update();
  if (hash.selftest) selftest(hash.selftest);
  root.setAttribute("data-explorer", "ready");
})();
