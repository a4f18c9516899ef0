// The tutorial's tour: a pointer at each panel in turn (status, diagram, charts, controls, event log), then the
// clock starts; at the end of the run, a last pointer at the debrief.
(function () {
  "use strict";
  const t = (k, p) => window.i18n.t(k, p);
  const $ = (id) => document.getElementById(id);
  const STEPS = [
    ["#status-title", "tour.status"],
    ["#diagram", "tour.diagram"],
    ["#chart-burn", "tour.charts"],
    ["#controls", "tour.controls"],
    ["#events", "tour.events"],
  ];
  const TEXTS = {
    "tour.status": t("tour.status"), "tour.diagram": t("tour.diagram"), "tour.charts": t("tour.charts"),
    "tour.controls": t("tour.controls"), "tour.events": t("tour.events"),
  };
  let step = -1;
  let onDone = () => {};

  function pointAt(selector, text) {
    for (const el of document.querySelectorAll(".toured")) el.classList.remove("toured");
    const target = document.querySelector(selector);
    const box = $("tour");
    $("tour-text").textContent = text;
    box.hidden = false;
    if (!target) return;
    target.classList.add("toured");
    target.scrollIntoView({ block: "nearest" });
    const r = target.getBoundingClientRect();
    const left = Math.min(Math.max(8, r.left), window.innerWidth - box.offsetWidth - 8);
    const below = r.bottom + box.offsetHeight + 12 < window.innerHeight;
    box.style.left = left + "px";
    box.style.top = (below ? r.bottom + 8 : Math.max(8, r.top - box.offsetHeight - 8)) + "px";
  }

  function end(resume) {
    for (const el of document.querySelectorAll(".toured")) el.classList.remove("toured");
    $("tour").hidden = true;
    document.querySelector("main.console").dataset.toured = "true";
    if (resume) onDone();
  }

  function show(i) {
    step = i;
    if (i >= STEPS.length) { end(true); return; }
    pointAt(STEPS[i][0], TEXTS[STEPS[i][1]]);
    $("tour-next").textContent = i === STEPS.length - 1 ? t("tour.start") : t("tour.next");
  }

  // after the last step: the pointer at the debrief, closed by its button
  function last() {
    step = STEPS.length;
    pointAt("#debrief-link", t("tour.debrief"));
    $("tour-next").textContent = t("tour.done");
  }

  $("tour-next").addEventListener("click", () => (step === STEPS.length ? end(false) : show(step + 1)));
  $("tour-skip").addEventListener("click", () => end(step < STEPS.length));

  window.tour = { start: (done) => { onDone = done; show(0); }, last };
})();
