"""Formula metadata: each formula of the minute model in LaTeX, with its source and the code that computes it.

The model reference page renders these (as MathML) beside the parameter table, so the page is generated
from the model itself; a test checks that every ``code`` path names a real function. Constants are not
written in: ``⟪name⟫`` stands for a parameter and is filled with the value in force (``--set`` or a
scenario may change it), ``⟪name%⟫`` for a fraction shown as a percentage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from oncallsim.model.placeholders import fill

__all__ = ["FORMULAS", "SOURCES", "Formula"]


class Formula(NamedTuple):
    key: str
    title: str
    latex: str  # a template: see the module's docstring
    sources: tuple[int, ...]
    code: str
    note: str = ""  # a template too (and the translation catalog's message id)

    def render(self, params: Any, gettext: Callable[[str], str] = str) -> tuple[str, str]:
        """(LaTeX, note) with the parameters in force; the note translated before it is filled."""
        return fill(self.latex, params, latex=True), fill(gettext(self.note), params) if self.note else ""


SOURCES: dict[int, str] = {
    1: "Beyer, Jones, Petoff, Murphy (eds.), Site Reliability Engineering, O'Reilly 2016 — ch. 3 Embracing Risk, "
    "ch. 4 Service Level Objectives.",
    2: "Beyer, Murphy, Rensin, Kawahara, Thorne (eds.), The Site Reliability Workbook, O'Reilly 2018 — ch. 5 "
    "Alerting on SLOs.",
    3: "ITU-D SG2 Q16/2 (V. B. Iversen), Teletraffic Engineering Handbook, 2005 — Erlang C; waiting-time "
    "distribution for M/M/n FCFS.",
    4: 'J. D. C. Little, "A Proof for the Queuing Formula: L = λW", Operations Research 9(3):383–387, 1961.',
    5: 'J. Jung, A. W. Berger, H. Balakrishnan, "Modeling TTL-based Internet Caches", IEEE INFOCOM 2003.',
    6: "M. Harchol-Balter, Performance Modeling and Design of Computer Systems: Queueing Theory in Action, "
    "Cambridge University Press 2013.",
    7: 'N. Bronson, A. Aghayev, A. Charapko, T. Zhu, "Metastable Failures in Distributed Systems", HotOS 2021; '
    'L. Huang et al., "Metastable Failures in the Wild", OSDI 2022.',
    8: 'P. Alvaro, R. Isaacs, R. Majumdar, K.-K. Muniswamy-Reddy, M. Salamati, S. Soudjani, "Formal Analysis of '
    'Metastable Failures in Software Systems", arXiv:2510.03551, 2025 (the Metafor tool).',
}

FORMULAS: tuple[Formula, ...] = (
    Formula(
        "traffic",
        "Traffic",
        r"\lambda(t) = ⟪base_requests_per_s⟫\left(1 + ⟪diurnal_amplitude⟫ \sin\frac{2\pi (t + \mathrm{clock} - "
        r"(⟪diurnal_peak_hour⟫ - 6)\,\mathrm{h})}{24\,\mathrm{h}}"
        r"\right) \cdot \mathrm{surge}(t)",
        (6,),
        "oncallsim.model.traffic.diurnal_rate",
        "Peak at ⟪diurnal_peak_hour⟫ h. Per-minute count ≈ N(60λ, √(60λ))·(1 + N(0, ⟪traffic_noise_cv⟫)); the "
        "observed rate is count/60.",
    ),
    Formula(
        "shedding",
        "Load shedding",
        r"\lambda_a = \lambda \,(1 - ⟪low_priority_share⟫\, s)",
        (1,),
        "oncallsim.model.stages.minute",
        "A share s of the ⟪low_priority_share%⟫ low-priority traffic is rejected with “retry later”; it does not "
        "burn the budget.",
    ),
    Formula(
        "cache",
        "Cache hit ratio",
        r"\mathrm{hit} = \mathrm{warm} \cdot \frac{rT}{1 + rT}, \quad r = \frac{\lambda_a}{⟪hot_objects⟫}",
        (5,),
        "oncallsim.model.cache.hit_ratio",
        "T = TTL; mean age of a cached answer ≈ T/2.",
    ),
    Formula(
        "refill",
        "Cache refill",
        r"\mathrm{warm} \leftarrow \mathrm{warm} + (1 - \mathrm{warm})\left(1 - e^{-1/\tau}\right) f_{db}, \quad "
        r"f_{db} = \min\left(1, \frac{\mathrm{capacity}}{\mathrm{demand}}\right)",
        (6,),
        "oncallsim.model.cache.refill",
        "τ = ⟪cache_refill_tau_min⟫ min; the warm-up job adds ⟪warmup_step%⟫·f_db a minute for ⟪warmup_minutes⟫ "
        "minutes.",
    ),
    Formula(
        "database",
        "Database",
        r"\rho_{db} = \frac{\lambda_a q (1 - \mathrm{hit})}{⟪db_capacity_qps⟫}, \quad "
        r"t_q = \min\left(⟪db_max_query_ms⟫\,\mathrm{ms}, \frac{⟪db_base_query_ms⟫\,\mathrm{ms}}{1 - "
        r"\rho_{db}}\right)",
        (6,),
        "oncallsim.model.database.query_time_ms",
        "q = ⟪queries_per_request⟫ queries per request (+⟪feature_queries_per_request⟫ with recommendations); "
        "⟪db_max_query_ms⟫ ms when ρ ≥ 1.",
    ),
    Formula(
        "service",
        "Service time",
        r"S = S_{app}(1 + (⟪bad_build_cpu_factor⟫ - 1)\, b) + (1 - \mathrm{hit})\, q\, t_q",
        (6,),
        "oncallsim.model.stages.minute",
        "S_app = ⟪app_time_ms⟫ ms (+⟪feature_app_time_ms⟫ ms with recommendations); b = share of traffic on the "
        "bad build.",
    ),
    Formula(
        "erlang",
        "Erlang C",
        r"C(a, N) = \frac{B}{1 - \frac{a}{N}(1 - B)}, \quad a = \lambda_a S, \quad N = ⟪workers_per_instance⟫ \cdot "
        r"\mathrm{instances}",
        (3, 6),
        "oncallsim.model.queueing.erlang_c",
        "B = Erlang B, from the Poisson closed form or the stable recursion — never factorials.",
    ),
    Formula(
        "timeouts",
        "Waiting tail and timeouts",
        r"P(W > t) = C\, e^{-(N/S - \lambda_a)\, t}, \quad \mathrm{timeouts} = P(W > ⟪timeout_s⟫\,\mathrm{s})",
        (3,),
        "oncallsim.model.queueing.queue_minute",
        "When a ≥ N the excess fails: failed share = 1 − N/a.",
    ),
    Formula(
        "p99",
        "p99 latency",
        r"p_{99} \approx S \ln 100 + \frac{\ln(C / 0.01)}{N/S - \lambda_a}",
        (3, 6),
        "oncallsim.model.queueing.queue_minute",
        "Adding the service and waiting quantiles is an approximation (it can be a little high or low); "
        "capped at the ⟪timeout_s⟫ s timeout.",
    ),
    Formula(
        "little",
        "Utilization (Little's law)",
        r"L = \lambda_a S \;\Rightarrow\; \mathrm{utilization} = \min\left(1, \frac{\lambda_a S}{N}\right)",
        (4,),
        "oncallsim.model.queueing.queue_minute",
        "What the autoscaler and the dashboard see.",
    ),
    Formula(
        "errors",
        "Error rate",
        r"e = 1 - (1 - o)(1 - t_o)(1 - ⟪bad_build_error_rate⟫\, b)",
        (1,),
        "oncallsim.model.slo.split_errors",
        "o = overload share, t_o = timeout share; the causes combine as independent.",
    ),
    Formula(
        "budget",
        "Error budget and burn rate",
        r"\mathrm{burn} = \frac{e}{⟪error_budget%⟫}, \quad \Delta\mathrm{budget} = "
        r"-\frac{\mathrm{burn}}{⟪budget_period_min⟫}"
        r"\ \text{per minute}",
        (1, 2),
        "oncallsim.model.stages.minute",
        "burn(1 h) = mean error rate over the last ⟪burn_long_window_min⟫ minutes / ⟪error_budget%⟫ (window "
        "pre-filled with the opening minute).",
    ),
    Formula(
        "page",
        "Multiwindow burn-rate page",
        r"\mathrm{page} \iff \mathrm{burn}_{1h} \ge ⟪page_burn_threshold⟫ \ \wedge\ \mathrm{burn}_{5m} \ge "
        r"⟪page_burn_threshold⟫",
        (2,),
        "oncallsim.model.slo.page_state",
        "⟪page_burn_threshold⟫× over the long window pages; the page clears when burn over the short window < "
        "⟪page_burn_threshold⟫ (by default 14.4× over an hour: 2 % of a 30-day budget).",
    ),
    Formula(
        "autoscaler",
        "Autoscaler",
        r"\mathrm{desired} = \left\lceil \frac{\mathrm{serving} \cdot \mathrm{utilization}}{\mathrm{target}}"
        r" \right\rceil",
        (6,),
        "oncallsim.model.fleet.desired_fleet",
        "Utilization saturates at 100 %, so a saturated fleet grows step by step; no scale-out while instances "
        "boot; scale-in by at most ⟪scale_in_max_share%⟫ after ⟪scale_in_quiet_minutes⟫ quiet minutes; within "
        "[floor, ⟪max_fleet⟫].",
    ),
    Formula(
        "cliff",
        "Distance to the cliff",
        r"\frac{\lambda_a A}{N/S}, \quad A = 1 + \min(N_r, b)",
        (7, 8),
        "oncallsim.cliff.zone.position",
        "Request engine: N_r retries, b the retry budget (none: A = N_r + 1). Every attempt times out in the bad "
        "mode, so each request costs A attempts; past 1× that bad mode sustains itself. The map of it: "
        "oncallsim cliff.",
    ),
    Formula(
        "cost",
        "Cost",
        r"\mathrm{cost/h} = ⟪instance_price_per_hour⟫\,\$ \cdot (\mathrm{serving} + \mathrm{booting}) \cdot "
        r"(⟪rollback_cost_factor⟫ \text{ during a rollback})",
        (6,),
        "oncallsim.model.cost.cost_per_hour",
    ),
)
