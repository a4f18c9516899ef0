// The debrief page's chart: the figure the core built, drawn with the locally served plotly.js.
(function () {
  "use strict";
  const figure = JSON.parse(document.getElementById("figure").textContent);
  Plotly.newPlot("debrief-chart", figure.data, figure.layout, { displaylogo: false, responsive: true });
})();
