// The zoomed minute's charts: the figure the core built, drawn with the locally served plotly.js.
(function () {
  "use strict";
  const figure = JSON.parse(document.getElementById("zoom-figure").textContent);
  Plotly.newPlot("zoom-chart", figure.data, figure.layout, { displaylogo: false, responsive: true });
})();
