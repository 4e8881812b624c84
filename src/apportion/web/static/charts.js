/* apportion's line charts on uPlot, for the dashboard and the simulator's report alike: every
   <div data-chart="line" data-config='json'> that apportion.web.charts wrote is drawn, on load and
   again whenever htmx swaps in fresh content. Colours are the shared palette's CSS variables
   (--c-allocated, ...). The numbers are always in a table beside the chart too: the charts add a
   picture, never information only they hold. */
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

  // time ticks as every time on the pages reads: 24-hour UTC, the date only when the chart spans days
  function timeTicks(u, splits) {
    var span = u.scales.x.max - u.scales.x.min;
    var f = uPlot.fmtDate(span > 86400 ? "{YYYY}-{MM}-{DD} {HH}:{mm}" : span > 600 ? "{HH}:{mm}" : "{HH}:{mm}:{ss}");
    return splits.map(function (v) { return f(utc(v)); });
  }

  function stepped() {
    return uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
  }

  function line(el, c) {
    var k = c.time ? 1 : (c.xScale || 1);
    var data = [c.x.map(function (v) { return v / k; })];
    var series = [c.time ? { label: "time (UTC)", value: "{YYYY}-{MM}-{DD} {HH}:{mm}:{ss}" } : { label: c.xUnit }];
    c.series.forEach(function (s) {
      data.push(s.values);
      var col = colour(s.colour);
      series.push({
        label: s.label, stroke: col, width: s.width, dash: s.dash && s.dash.length ? s.dash : undefined,
        fill: s.fill ? col + "40" : undefined, paths: s.step ? stepped() : undefined, points: { show: false }
      });
    });
    var top = c.yMax;
    return new uPlot({
      width: width(el), height: c.height || 200, tzDate: utc, cursor: { points: { show: false } },
      series: series,
      axes: [c.time ? { label: "time (UTC)", values: timeTicks, space: 90 } : { label: c.xUnit }, { label: c.yLabel, size: 64 }],
      scales: {
        x: { time: !!c.time },
        y: { range: function (u, min, max) { return [0, top ? top : Math.max(max, 1) * 1.1]; } }
      }
    }, data, el);
  }

  function draw(root) {
    if (typeof uPlot === "undefined" || !root || !root.querySelectorAll) { return; }
    charts = charts.filter(function (c) { return document.body.contains(c.root); });
    var els = root.matches && root.matches("[data-chart]") ? [root] : [];
    els = els.concat(Array.prototype.slice.call(root.querySelectorAll("[data-chart]")));
    els.forEach(function (el) {
      if (el.dataset.drawn) { return; }
      el.dataset.drawn = "1";
      var c = JSON.parse(el.dataset.config || "{}");
      if (!c.x || c.x.length < 2) {
        var p = document.createElement("p");
        p.className = "muted";
        p.textContent = "Not enough samples yet for a chart.";
        el.appendChild(p);
        return;
      }
      charts.push(line(el, c));
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { draw(document); });
  } else {
    draw(document);
  }
  document.addEventListener("htmx:load", function (e) { draw(e.detail.elt); });
  window.addEventListener("resize", function () {
    charts.forEach(function (u) {
      var box = u.root.parentNode;
      if (box) { u.setSize({ width: width(box), height: u.height }); }
    });
  });
}());
