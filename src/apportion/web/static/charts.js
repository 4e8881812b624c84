/* apportion's charts on uPlot: every <figure data-chart="..." data-series='json'> is drawn, on load
   and again whenever htmx swaps in fresh content. Colours are the shared palette's CSS variables
   (--c-allocated, ...), the same the simulator's report plots in. The numbers are always in a table
   of the same page too: the charts add a picture, never information only they hold. */
(function () {
  "use strict";
  var charts = [];

  function colour(name) {
    var v = getComputedStyle(document.documentElement).getPropertyValue("--c-" + name);
    return (v && v.trim()) || "#333";
  }

  function width(el) {
    return Math.max(260, Math.floor(el.getBoundingClientRect().width || 600));
  }

  // times in UTC, as every other time on the pages
  function utc(ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); }

  function stepped() {
    return uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
  }

  function history(el, d) {
    var k = d.scale || 1;
    var data = [d.t, d.allocated.map(function (v) { return v / k; }), d.deserved.map(function (v) { return v / k; })];
    return new uPlot({
      width: width(el), height: 200, tzDate: utc, cursor: { points: { show: false } },
      series: [
        {},
        { label: "allocated", stroke: colour("allocated"), width: 2, paths: stepped(), points: { show: false } },
        { label: "deserved", stroke: colour("deserved"), width: 2, dash: [6, 4], paths: stepped(), points: { show: false } }
      ],
      axes: [{}, { label: d.unit, size: 60 }],
      scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, Math.max(max, 1) * 1.1]; } } }
    }, data, el);
  }

  function plan(el, d) {
    var n = d.t.length;
    function flat(v) { var a = []; for (var i = 0; i < n; i++) { a.push(v); } return a; }
    var data = [d.t, d.memory, flat(d.capacity[0]), flat(d.instantaneous[0]), flat(d.average[0])];
    return new uPlot({
      width: width(el), height: 220, tzDate: utc,
      series: [
        {},
        { label: "committed (MB)", stroke: colour("reservation"), fill: colour("reservation") + "55", width: 2, paths: stepped() },
        { label: "capacity", stroke: colour("capacity"), width: 2, points: { show: false } },
        { label: "instantaneous limit", stroke: colour("limit"), width: 1.5, dash: [6, 4], points: { show: false } },
        { label: "average limit", stroke: colour("average"), width: 1.5, dash: [2, 3], points: { show: false } }
      ],
      axes: [{}, { label: "memory (MB)", size: 70 }],
      scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, Math.max(max, 1) * 1.1]; } } }
    }, data, el);
  }

  var kinds = { history: history, plan: plan };

  function draw(root) {
    if (typeof uPlot === "undefined" || !root || !root.querySelectorAll) { return; }
    charts = charts.filter(function (c) { return document.body.contains(c.root); });
    var els = root.matches && root.matches("[data-chart]") ? [root] : [];
    els = els.concat(Array.prototype.slice.call(root.querySelectorAll("[data-chart]")));
    els.forEach(function (el) {
      if (el.dataset.drawn) { return; }
      el.dataset.drawn = "1";
      var d = JSON.parse(el.dataset.series || "{}");
      if (!d.t || d.t.length < 2) {
        var p = document.createElement("p");
        p.className = "muted";
        p.textContent = "Not enough samples yet for a chart.";
        el.appendChild(p);
        return;
      }
      var u = kinds[el.dataset.chart](el, d);
      charts.push(u);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:load", function (e) { draw(e.detail.elt); });
  window.addEventListener("resize", function () {
    charts.forEach(function (u) {
      var fig = u.root.parentNode;
      if (fig) { u.setSize({ width: width(fig), height: u.height }); }
    });
  });
}());
