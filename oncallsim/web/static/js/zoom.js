// Zoom into a minute: the Zoom button opens the last minute played; a click on any chart opens the minute
// clicked. The zoomed minute (re-simulated request by request on the server; a chain's replayed, its requests
// followed across hops) opens in a new tab, so the console keeps running, or stays paused, as it was.
(function () {
  "use strict";
  const root = document.querySelector("main.console");
  if (!root) return;
  const runId = root.dataset.run;
  const CHART_IDS = [
    "chart-traffic", "chart-p99", "chart-burn", "chart-errors", "chart-cache", "chart-fleet", "chart-goodput", "chart-attempts",
    "chart-services", // a chain's: each service's p99 (its zoom follows requests across hops)
  ];
  // the zoomed minute in the console's language (as the pages' links keep it: web/pages.py with_lang)
  const lang = document.documentElement.lang;
  const urlOf = (minute) =>
    "/runs/" + encodeURIComponent(runId) + "/zoom?minute=" + minute + (lang && lang !== "en" ? "&lang=" + encodeURIComponent(lang) : "");
  const open = (minute) => window.open(urlOf(minute), "_blank", "noopener");

  // minutes played: the length of the first chart's first series (the charts hold every minute from 0)
  function played() {
    const chart = document.getElementById(CHART_IDS[0]);
    return chart && chart.data && chart.data[0] ? chart.data[0].x.length : 0;
  }

  const button = document.getElementById("zoom");
  if (button) {
    button.addEventListener("click", () => {
      const n = played();
      if (n > 0) open(n - 1);
    });
  }

  // Plotly adds its click events to a chart once it is drawn: attach when it is.
  for (const id of CHART_IDS) {
    const el = document.getElementById(id);
    if (!el) continue;
    const attach = () => {
      if (typeof el.on !== "function" || el.dataset.zoomable) return false;
      el.dataset.zoomable = "true";
      el.on("plotly_click", (event) => {
        const point = event.points.find((p) => p.curveNumber === 0) || event.points[0];
        if (point && Number.isInteger(point.pointIndex)) open(point.pointIndex);
      });
      return true;
    };
    if (!attach()) {
      const watcher = new MutationObserver(() => { if (attach()) watcher.disconnect(); });
      watcher.observe(el, { childList: true, subtree: false });
    }
  }
})();
