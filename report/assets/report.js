// wsplan HTML report: draws the charts that report/html_charts.go computed
// (window.WSPLAN_CHARTS). Bars are SVG; percentile spectra and per-second
// timelines are uPlot line charts. What was drawn is written as JSON into
// #wsplan-drawn and every error into #wsplan-errors, so a headless browser's
// --dump-dom shows both (the report's browser test reads them).
(function () {
  "use strict";
  var errors = [];
  var drawn = [];
  function put(id, v) {
    var el = document.getElementById(id);
    if (el) el.textContent = JSON.stringify(v);
  }
  function fail(msg) {
    errors.push(String(msg));
    put("wsplan-errors", errors);
  }
  // Capturing, so a resource that fails to load (an <img>, a <link>) is
  // caught too: those error events do not bubble.
  window.addEventListener("error", function (e) {
    if (e.target && e.target !== window && e.target.tagName) {
      fail("failed to load a " + e.target.tagName.toLowerCase() + ": " + (e.target.src || e.target.href || ""));
      return;
    }
    fail((e.message || "error") + (e.filename ? " at " + e.filename + ":" + e.lineno : ""));
  }, true);
  window.addEventListener("unhandledrejection", function (e) { fail("unhandled rejection: " + e.reason); });
  var consoleError = console.error;
  console.error = function () {
    fail(Array.prototype.join.call(arguments, " "));
    return consoleError.apply(console, arguments);
  };

  // Distinct colours: a fixed palette, then golden-angle hues.
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#e6550d", "#31a354", "#843c39", "#7b4173", "#3182bd"];
  function color(i) {
    if (i < PALETTE.length) return PALETTE[i];
    return "hsl(" + Math.round((i * 137.508) % 360) + ",60%,45%)";
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  var SVG = "http://www.w3.org/2000/svg"; // an XML namespace name, not a resource
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }

  function fmt(v) {
    if (v == null || isNaN(v)) return "-";
    var a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 1 : 2) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    return v.toPrecision(2);
  }

  // niceMax rounds up to 1, 2, 2.5 or 5 times a power of ten.
  function niceMax(m) {
    if (!(m > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(m)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= m) return steps[i] * p;
    return 10 * p;
  }

  function legend(names) {
    var lg = el("div", { "class": "legend" });
    names.forEach(function (n, i) {
      var s = el("span");
      var sw = el("i");
      sw.style.background = color(i);
      s.appendChild(sw);
      s.appendChild(document.createTextNode(n));
      lg.appendChild(s);
    });
    return lg;
  }

  // Horizontal grouped bars: a row per category, a bar per series.
  function drawBars(box, c) {
    var ns = c.series.length;
    var width = Math.max(320, box.clientWidth - 4);
    var labelW = 120, valueW = 64, top = 18;
    var barH = ns > 1 ? 11 : 16, gap = 8;
    var rowH = ns * barH + gap;
    var height = top + c.categories.length * rowH + 4;
    var plotW = width - labelW - valueW;
    var max = 0;
    c.series.forEach(function (s) { s.values.forEach(function (v) { if (v != null && v > max) max = v; }); });
    max = niceMax(max);
    if (ns > 1) box.appendChild(legend(c.series.map(function (s) { return s.name; })));
    var root = svg("svg", { "class": "bars", width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": c.title });
    // 4 ticks when max starts with 2 (steps of 0.5), else 5 (0.2, 0.5, 1).
    var lead = max / Math.pow(10, Math.floor(Math.log10(max)));
    var nt = Math.abs(lead - 2) < 1e-9 ? 4 : 5;
    for (var t = 0; t <= nt; t++) {
      var x = labelW + plotW * t / nt;
      root.appendChild(svg("line", { "class": "axis", x1: x, x2: x, y1: top - 4, y2: height }));
      root.appendChild(svg("text", { "class": "tick", x: x, y: 11, "text-anchor": "middle" }, fmt(max * t / nt)));
    }
    var bars = 0;
    c.categories.forEach(function (cat, j) {
      var y0 = top + j * rowH;
      root.appendChild(svg("text", { x: labelW - 6, y: y0 + (ns * barH) / 2 + 4, "text-anchor": "end" }, cat));
      c.series.forEach(function (s, i) {
        var v = s.values[j];
        var y = y0 + i * barH;
        if (v == null) {
          root.appendChild(svg("text", { "class": "tick", x: labelW + 4, y: y + barH - 2 }, "n/a"));
          return;
        }
        var w = Math.max(1, plotW * v / max);
        var r = svg("rect", { x: labelW, y: y, width: w, height: barH - 1, fill: color(i) });
        r.appendChild(svg("title", {}, s.name + ": " + fmt(v) + " " + c.unit));
        root.appendChild(r);
        root.appendChild(svg("text", { x: labelW + w + 4, y: y + barH - 2 }, fmt(v)));
        bars++;
      });
    });
    box.appendChild(root);
    return { series: ns, points: bars };
  }

  // The percentile axis: x = log10(1 / (1 - p)), so 90% is 1, 99% is 2,
  // 99.9% is 3: each "nine" gets the same width, as in HdrHistogram's plots.
  function pctX(p) { return Math.log10(1 / (1 - p / 100)); }
  function pctLabel(x) {
    var p = 100 * (1 - Math.pow(10, -x));
    return (Math.round(p * 1000) / 1000) + "%";
  }

  // aligned builds uPlot's data from series of (x, y) points.
  function aligned(series, mapX) {
    var xs = [];
    var seen = {};
    series.forEach(function (s) {
      s.points.forEach(function (p) {
        var x = mapX(p[0]);
        if (!seen[x]) { seen[x] = true; xs.push(x); }
      });
    });
    xs.sort(function (a, b) { return a - b; });
    var index = {};
    xs.forEach(function (x, i) { index[x] = i; });
    var data = [xs];
    var points = 0;
    series.forEach(function (s) {
      var ys = xs.map(function () { return null; });
      s.points.forEach(function (p) { ys[index[mapX(p[0])]] = p[1]; points++; });
      data.push(ys);
    });
    return { data: data, points: points };
  }

  function drawLines(box, c, onDraw) {
    var pct = c.type === "percentiles";
    var byvar = c.type === "byvar"; // x: the index of a matrix var's value
    var steps = c.type === "steps"; // x: a search step's target rate
    var a = aligned(c.series, pct ? pctX : function (x) { return x; });
    var width = Math.max(320, box.clientWidth - 4);
    var catLabel = function (v) { return v == null ? "-" : (c.categories[Math.round(v)] || ""); };
    var series = [{ label: pct ? "percentile" : (byvar || steps ? c.xlabel : "second"),
      value: function (u, v) { return v == null ? "-" : (pct ? pctLabel(v) : (byvar ? catLabel(v) : (steps ? fmt(v) : v + " s"))); } }];
    var DASHES = [null, [6, 4], [2, 3], [10, 3, 2, 3]];
    c.series.forEach(function (s, i) {
      var o = {
        label: s.name, stroke: color(s.color != null ? s.color : i), width: 1.5, spanGaps: true,
        dash: s.dash ? DASHES[s.dash % DASHES.length] : undefined,
        points: { show: pct || byvar || steps || a.data[0].length < 40, size: byvar ? 6 : 4 },
        value: function (u, v) { return v == null ? "-" : fmt(v) + " " + c.unit; }
      };
      if (s.points_only) {
        // marks only: a step that did not pass, drawn over its line
        o.paths = function () { return null; };
        o.points = { show: true, size: 11, width: 2, fill: "#fff" };
      }
      series.push(o);
    });
    var xAxis = { label: pct ? "percentile" : "seconds since the phase started" };
    var xScale = { time: false };
    if (pct) {
      // 99.9% maps to 3.0000000000000004: round before taking the ceiling.
      var lastX = a.data[0][a.data[0].length - 1] || 3;
      var maxX = Math.ceil(Math.max(3, lastX) - 1e-9);
      // The range must hold the last point itself (3.0000000000000004 for
      // 99.9%): uPlot fits the y axis to the points inside the x range.
      xScale.range = function () { return [pctX(50), Math.max(maxX, lastX)]; };
      xAxis.splits = function () {
        var s = [pctX(50), pctX(90)];
        for (var k = 2; k <= maxX; k++) s.push(k);
        return s;
      };
      xAxis.values = function (u, splits) { return splits.map(pctLabel); };
    } else if (steps) {
      xAxis.label = c.xlabel;
      xAxis.values = function (u, splits) { return splits.map(fmt); };
    } else if (byvar) {
      xAxis.label = c.xlabel;
      xScale.range = function () { return [-0.25, c.categories.length - 0.75]; };
      xAxis.splits = function () { return c.categories.map(function (_, i) { return i; }); };
      xAxis.values = function (u, splits) { return splits.map(catLabel); };
    } else {
      xAxis.incrs = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
    }
    // Values spanning more than two decades (one server 1000 times slower)
    // go on a log scale, or the fast ones lie flat on the axis.
    var lo = Infinity, hi = 0;
    for (var i = 1; i < a.data.length; i++) a.data[i].forEach(function (v) {
      if (v != null && v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    });
    var logY = c.unit === "ms" && hi > 0 && hi / lo > 100;
    var yScale = logY ? { distr: 3, log: 10 } : { range: function (u, min, max) { return [0, niceMax(max)]; } };
    if (logY) {
      // a log scale cannot show 0: those seconds are gaps
      for (var j = 1; j < a.data.length; j++) a.data[j] = a.data[j].map(function (v) { return v > 0 ? v : null; });
    }
    var opts = {
      width: width, height: 260,
      scales: { x: xScale, y: yScale },
      series: series,
      axes: [xAxis, { label: c.unit + (logY ? " (log scale)" : ""), size: 60, values: function (u, splits) { return splits.map(fmt); } }],
      legend: { live: true },
      hooks: { draw: [function () { onDraw(); }] }
    };
    new uPlot(opts, a.data, box);
    return { series: c.series.length, points: a.points };
  }

  function draw() {
    var sections = window.WSPLAN_CHARTS || [];
    var root = document.getElementById("charts-root");
    var toc = document.getElementById("toc");
    if (typeof uPlot === "undefined") fail("uPlot did not load");
    sections.forEach(function (sec, si) {
      var h = el("h3", { id: "phase-" + si }, sec.title);
      root.appendChild(h);
      toc.appendChild(el("a", { href: "#phase-" + si }, sec.title));
      var grid = el("div", { "class": "phase-charts" });
      root.appendChild(grid);
      if (sec.charts.length === 0) {
        grid.appendChild(el("p", { "class": "empty" }, "No chart for this phase: its results carry no figure these charts show; see its table."));
      }
      sec.charts.forEach(function (c) {
        var box = el("div", { "class": "chart", id: c.id, "data-type": c.type });
        box.appendChild(el("h4", {}, c.title + " (" + c.unit + ")"));
        if (c.note) box.appendChild(el("p", { "class": "cnote" }, c.note));
        grid.appendChild(box);
        var rec = { id: c.id, type: c.type, title: c.title, series: 0, points: 0, drawn: false };
        drawn.push(rec);
        try {
          var got;
          if (c.type === "bars") {
            got = drawBars(box, c);
            rec.drawn = true;
          } else {
            got = drawLines(box, c, function () { rec.drawn = true; put("wsplan-drawn", summary()); });
          }
          rec.series = got.series;
          rec.points = got.points;
        } catch (e) {
          fail(c.id + ": " + (e && e.stack || e));
        }
      });
    });
    toc.appendChild(el("a", { href: "#run-0" }, "Tables"));
    put("wsplan-drawn", summary());
  }

  // summary is what #wsplan-drawn holds: the charts drawn and every
  // resource the page loaded (none: everything is inline).
  function summary() {
    var res = [];
    if (window.performance && performance.getEntriesByType) {
      res = performance.getEntriesByType("resource").map(function (e) { return e.name; });
    }
    return { charts: drawn, resources: res };
  }

  function colourVerdicts() {
    var cells = document.querySelectorAll("td:last-child");
    for (var i = 0; i < cells.length; i++) {
      var t = cells[i].textContent;
      if (/^FAIL/.test(t)) cells[i].className = "fail";
      else if (/client-bound/.test(t)) cells[i].className = "bound";
    }
  }

  // Resources finish loading after DOMContentLoaded: list them again then.
  window.addEventListener("load", function () { put("wsplan-drawn", summary()); });

  document.addEventListener("DOMContentLoaded", function () {
    try {
      draw();
      colourVerdicts();
    } catch (e) {
      fail(e && e.stack || e);
    }
  });
})();
