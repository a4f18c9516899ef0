// The debrief page's chart: the figure the core built, drawn with the locally served plotly.js.
(function () {
  "use strict";
  const figure = JSON.parse(document.getElementById("figure").textContent);
  const chart = document.getElementById("debrief-chart");
  // On a phone the panels' legends (beside each panel) took half the width and the time labels piled up: there the
  // legends give way to the plots (a tap on a plot names each series with its value) and the time axis keeps six
  // labels.
  if (chart.clientWidth < 700) {
    figure.layout.showlegend = false;
    for (const key of Object.keys(figure.layout)) {
      if (/^xaxis\d*$/.test(key)) figure.layout[key].nticks = 6;
    }
    figure.layout.margin = { l: 44, r: 8, t: 40, b: 30 };
  }
  Plotly.newPlot(chart, figure.data, figure.layout, { displaylogo: false, responsive: true });
})();
