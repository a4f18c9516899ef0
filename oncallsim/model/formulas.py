"""Formula metadata: each formula of the minute model in LaTeX, with its source and the code that computes it.

The model reference page renders these (as MathML) beside the parameter table, so the page is generated
from the model itself; a test checks that every ``code`` path names a real function.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["FORMULAS", "SOURCES", "Formula"]


class Formula(NamedTuple):
    key: str
    title: str
    latex: str
    sources: tuple[int, ...]
    code: str
    note: str = ""


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
}

FORMULAS: tuple[Formula, ...] = (
    Formula(
        "traffic",
        "Traffic",
        r"\lambda(t) = \mathrm{base}\left(1 + 0.25 \sin\frac{2\pi (t + \mathrm{clock} - 6\,\mathrm{h})}{24\,\mathrm{h}}"
        r"\right) \cdot \mathrm{surge}(t)",
        (6,),
        "oncallsim.model.traffic.diurnal_rate",
        "Peak at 12:00. Per-minute count ≈ N(60λ, √(60λ))·(1 + N(0, 0.02)); the observed rate is count/60.",
    ),
    Formula(
        "shedding",
        "Load shedding",
        r"\lambda_a = \lambda \,(1 - 0.3\, s)",
        (1,),
        "oncallsim.model.step.step",
        "A share s of the 30 % low-priority traffic is rejected with “retry later”; it does not burn the budget.",
    ),
    Formula(
        "cache",
        "Cache hit ratio",
        r"\mathrm{hit} = \mathrm{warm} \cdot \frac{rT}{1 + rT}, \quad r = \frac{\lambda_a}{20\,000}",
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
        "τ = 30 min; the warm-up job adds 12 %·f_db a minute for 6 minutes.",
    ),
    Formula(
        "database",
        "Database",
        r"\rho_{db} = \frac{\lambda_a q (1 - \mathrm{hit})}{4000}, \quad "
        r"t_q = \min\left(250\,\mathrm{ms}, \frac{5\,\mathrm{ms}}{1 - \rho_{db}}\right)",
        (6,),
        "oncallsim.model.database.query_time_ms",
        "q = 2 queries per request (+1 with recommendations); 250 ms when ρ ≥ 1.",
    ),
    Formula(
        "service",
        "Service time",
        r"S = S_{app}(1 + 0.25\, b) + (1 - \mathrm{hit})\, q\, t_q",
        (6,),
        "oncallsim.model.step.step",
        "S_app = 50 ms (+20 ms with recommendations); b = share of traffic on the bad build.",
    ),
    Formula(
        "erlang",
        "Erlang C",
        r"C(a, N) = \frac{B}{1 - \frac{a}{N}(1 - B)}, \quad a = \lambda_a S, \quad N = 16 \cdot \mathrm{instances}",
        (3, 6),
        "oncallsim.model.queueing.erlang_c",
        "B = Erlang B, from the Poisson closed form or the stable recursion — never factorials.",
    ),
    Formula(
        "timeouts",
        "Waiting tail and timeouts",
        r"P(W > t) = C\, e^{-(N/S - \lambda_a)\, t}, \quad \mathrm{timeouts} = P(W > 2\,\mathrm{s})",
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
        "capped at the 2 s timeout.",
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
        r"e = 1 - (1 - o)(1 - t_o)(1 - 0.05\, b)",
        (1,),
        "oncallsim.model.slo.split_errors",
        "o = overload share, t_o = timeout share; the causes combine as independent.",
    ),
    Formula(
        "budget",
        "Error budget and burn rate",
        r"\mathrm{burn} = \frac{e}{0.1\,\%}, \quad \Delta\mathrm{budget} = -\frac{\mathrm{burn}}{43\,200}"
        r"\ \text{per minute}",
        (1, 2),
        "oncallsim.model.step.step",
        "burn(1 h) = mean error rate over the last 60 minutes / 0.1 % (window pre-filled with the opening minute).",
    ),
    Formula(
        "page",
        "Multiwindow burn-rate page",
        r"\mathrm{page} \iff \mathrm{burn}_{1h} \ge 14.4 \ \wedge\ \mathrm{burn}_{5m} \ge 14.4",
        (2,),
        "oncallsim.model.slo.page_state",
        "14.4× over an hour spends 2 % of a 30-day budget; the page clears when burn(5 min) < 14.4.",
    ),
    Formula(
        "autoscaler",
        "Autoscaler",
        r"\mathrm{desired} = \left\lceil \frac{\mathrm{serving} \cdot \mathrm{utilization}}{\mathrm{target}}"
        r" \right\rceil",
        (6,),
        "oncallsim.model.fleet.desired_fleet",
        "Utilization saturates at 100 %, so a saturated fleet grows step by step; no scale-out while instances "
        "boot; scale-in by at most 20 % after 10 quiet minutes; within [floor, 40].",
    ),
    Formula(
        "cost",
        "Cost",
        r"\mathrm{cost/h} = 0.40\,\$ \cdot (\mathrm{serving} + \mathrm{booting}) \cdot (2 \text{ during a rollback})",
        (6,),
        "oncallsim.model.step.step",
    ),
)
