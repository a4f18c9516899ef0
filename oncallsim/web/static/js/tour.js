// The tutorial's tour: a pointer at each panel in turn (status, diagram, charts, controls, event log), then the
// clock starts; at the end of the run, a last pointer at the debrief.
(function () {
  "use strict";
  const t = (k, p) => window.i18n.t(k, p);
  const $ = (id) => document.getElementById(id);
  const STEPS = [
    ["#status-table", "tour.status"],
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
    // the box never covers what it describes: beside the target where there is room (right, then left), else below
    // or above it, else at the screen's bottom edge
    const r = target.getBoundingClientRect();
    const w = box.offsetWidth, h = box.offsetHeight, gap = 12, W = window.innerWidth, H = window.innerHeight;
    const top = Math.min(Math.max(8, r.top), H - h - 8);
    const clampLeft = (x) => Math.min(Math.max(8, x), W - w - 8);
    let place;
    if (r.right + gap + w <= W - 8) place = { left: r.right + gap, top };
    else if (r.left - gap - w >= 8) place = { left: r.left - gap - w, top };
    else if (r.bottom + gap + h <= H - 8) place = { left: clampLeft(r.left), top: r.bottom + gap };
    else if (r.top - gap - h >= 8) place = { left: clampLeft(r.left), top: r.top - gap - h };
    else place = { left: clampLeft(r.left), top: H - h - 8 };
    box.style.left = place.left + "px";
    box.style.top = place.top + "px";
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
