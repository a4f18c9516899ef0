// Formatting of the core's numbers for display, in the page's language (no model value is computed here).
(function () {
  "use strict";
  const { t, number, percent, money } = window.i18n;
  const pct = (x, digits) => percent(x, digits);
  const fmt = {
    burn_1h: (r) => t("unit.times", { n: number(r.burn_1h, 1) }),
    requests_per_s: (r) => t("unit.req_per_s", { n: number(Math.round(r.requests_per_s)) }),
    serving: (r) => number(r.serving),
    booting: (r) => number(r.booting),
    cache_hit: (r) => pct(r.cache_hit),
    db_utilization: (r) => pct(r.db_utilization),
    shed_share: (r) => pct(r.shed_per_s / Math.max(r.requests_per_s, 1e-9)),
    cost_per_hour: (r) => t("unit.per_hour", { amount: money(r.cost_per_hour) }),
    cost_so_far: (r) => money(r.cost_so_far),
    mean_age_s: (r) => t("unit.seconds", { n: number(Math.round(r.mean_age_s)) }),
    bad_build_share: (r) => pct(r.bad_build_share),
    recommendations_available: (r) => pct(r.recommendations_available),
    p99_ms: (r) => t("unit.ms", { n: number(Math.round(r.p99_ms)) }),
    error_rate: (r) => pct(r.error_rate, 2),
    budget_left: (r) => pct(r.budget_left, 1),
    // the requests × the attempts each makes when every attempt fails, over the capacity (cliff/zone.py)
    cliff: (r) => (r.cliff ? t("unit.times", { n: number(r.cliff.amplified, 2) }) : "—"),
  };
  // each zone of the gauge (cliff/zone.py): its flag's level and word
  const ZONES = {
    safe: ["", t("zone.safe")],
    vulnerable: ["warn", t("zone.vulnerable")],
    overloaded: ["bad", t("zone.overloaded")],
    protected: ["info", t("zone.protected")],
  };
  // A word beside a value, so that colour is never the only carrier of meaning.
  // latencyTarget: the scenario's p99 target in ms, if it has one (the fan-out's 120 ms): a p99 past it is flagged
  function flag(key, r, page, latencyTarget) {
    // "paging" follows the alert itself (it clears on its own rule), not the 1 h burn alone
    if (key === "burn_1h" && r.page_firing) return ["bad", t("flag.paging")];
    if (key === "burn_1h" && r.burn_1h > 1) return ["warn", t("flag.burning")];
    if (key === "db_utilization" && r.db_utilization >= 1) return ["bad", t("flag.saturated")];
    if (key === "db_utilization" && r.db_utilization >= 0.8) return ["warn", t("flag.high")];
    if (key === "error_rate" && r.error_rate > 0.01) return ["bad", t("flag.high")];
    if (key === "error_rate" && r.error_rate > 0.001) return ["warn", t("flag.over_slo")];
    if (key === "p99_ms" && r.p99_ms >= 2000) return ["bad", t("flag.timeouts")];
    if (key === "p99_ms" && latencyTarget > 0 && r.p99_ms > latencyTarget) return ["warn", t("flag.over_target")];
    if (key === "booting" && r.booting > 0) return ["info", t("flag.booting")];
    if (key === "bad_build_share" && r.bad_build_share > 0) return ["warn", t("flag.live")];
    if (key === "budget_left" && r.budget_left <= 0) return ["bad", t("flag.exhausted")];
    if (key === "cliff" && r.cliff) return ZONES[r.cliff.zone];
    return ["", ""];
  }
  window.fmt = { fmt, flag, pct };
})();
