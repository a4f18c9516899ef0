// The zoomed minute's page: the figure the core built, drawn with the locally served plotly.js, and the console's
// own diagram (diagram.js) for the minute, then second by second. The data come as JSON (a script element of type
// application/json, a data attribute): the Content Security Policy runs no inline script.
(function () {
  "use strict";
  const figure = document.getElementById("zoom-figure");
  if (figure) {
    // the offline file draws its chart with plotly's own script
    const fig = JSON.parse(figure.textContent);
    Plotly.newPlot("zoom-chart", fig.data, fig.layout, { displaylogo: false, responsive: true });
  }

  const svg = document.getElementById("diagram");
  if (!svg || !window.diagram) return;
  const data = JSON.parse(svg.dataset.diagram);
  const slider = document.getElementById("zoom-second");
  const clock = document.getElementById("zoom-second-clock");
  const whole = document.getElementById("zoom-whole-minute");

  function showMinute() {
    window.diagram.show(svg, data.minute);
    svg.dataset.showing = "minute";
    clock.textContent = data.clock;
    whole.setAttribute("aria-pressed", "true");
  }

  function showSecond(s) {
    window.diagram.show(svg, data.seconds[s]);
    svg.dataset.showing = String(s);
    clock.textContent = data.clock + ":" + String(s).padStart(2, "0");
    whole.setAttribute("aria-pressed", "false");
  }

  slider.addEventListener("input", () => showSecond(Number(slider.value)));
  whole.addEventListener("click", showMinute);
  showMinute();
})();
