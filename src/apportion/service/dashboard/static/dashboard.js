/* The dashboard's own behaviour on top of htmx: a live refresh swaps the page's live region, and a
   <details> the reader opened (the tables behind a chart) stays open across the swap. */
(function () {
  "use strict";
  var open = [];
  document.addEventListener("htmx:beforeSwap", function () {
    open = Array.prototype.map.call(document.querySelectorAll("details[open][id]"), function (d) { return d.id; });
  });
  document.addEventListener("htmx:afterSettle", function () {
    open.forEach(function (id) {
      var d = document.getElementById(id);
      if (d) { d.open = true; }
    });
  });
}());
