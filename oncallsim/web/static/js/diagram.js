// The service as a live diagram: load balancer → fleet → cache → database. Each arrow's width follows the
// traffic it carries, each stage's colour its saturation (fleet utilization, cache misses, database ρ), and
// each stage says its number in words: colour never carries the meaning alone. Values only shown, never computed
// beyond a ratio of the record's own fields.
(function () {
  "use strict";
  const { t, number, percent } = window.i18n;
  const pct = (x) => percent(x);

  // saturation 0 … 1+ → calm, warm, hot
  function level(x) {
    if (x >= 1) return "hot";
    if (x >= 0.8) return "warm";
    return "calm";
  }

  function width(perS, scale) {
    return Math.max(1.5, Math.min(14, (14 * perS) / Math.max(scale, 1)));
  }

  function show(svg, r) {
    if (svg.dataset.graph) { // a chain of services: services.js draws it
      if (window.services && typeof window.services.show === "function") window.services.show(r);
      return;
    }
    const $ = (k) => svg.querySelector('[data-part="' + k + '"]');
    const scale = Math.max(r.requests_per_s, r.capacity_per_s);
    const misses = (1 - r.cache_hit) * r.admitted_per_s;
    $("lb-fleet").setAttribute("stroke-width", String(width(r.admitted_per_s, scale)));
    $("shed").setAttribute("stroke-width", String(r.shed_per_s > 0 ? width(r.shed_per_s, scale) : 0));
    $("fleet-cache").setAttribute("stroke-width", String(width(r.admitted_per_s, scale)));
    $("cache-db").setAttribute("stroke-width", String(width(misses, scale)));
    $("lb").dataset.level = level(r.requests_per_s / Math.max(r.capacity_per_s, 1e-9));
    $("fleet").dataset.level = level(r.utilization);
    $("cache").dataset.level = level(1 - r.cache_hit + (r.cache_hit < 0.5 ? 0.5 : 0));
    $("db").dataset.level = level(r.db_utilization);
    $("lb-text").textContent = t("diagram.lb", { n: number(Math.round(r.requests_per_s)) });
    $("shed-text").textContent = r.shed_per_s > 0 ? t("diagram.shed", { n: number(Math.round(r.shed_per_s)) }) : "";
    $("fleet-text").textContent = t("diagram.fleet", { serving: number(r.serving), booting: number(r.booting) });
    $("fleet-sub").textContent = t("diagram.utilization", { x: pct(r.utilization) });
    $("cache-text").textContent = t("diagram.cache", { x: pct(r.cache_hit) });
    $("db-text").textContent = t("diagram.db", { x: pct(r.db_utilization) });
  }

  window.diagram = { show };
})();
