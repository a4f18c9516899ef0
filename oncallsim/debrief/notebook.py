"""A run in a notebook: ``Simulation._repr_html_`` shows the scenario, the minutes played, the score with the
objectives met, and a small chart of the error rate (the SLO's line, the page and the operator's actions
marked), as self-contained HTML (an inline SVG: no script, nothing fetched). Registered on the ``Simulation``
class when this module is imported (the package's front door imports it with ``Simulation``).

>>> from oncallsim import Simulation
>>> sim = Simulation("bad-deploy", seed=7, minutes=40)
>>> _ = sim.run()
>>> html = sim._repr_html_()
>>> "Bad deploy" in html and "score" in html and "<svg" in html
True
"""

from __future__ import annotations

from html import escape

from oncallsim.debrief.report import opening_fleet_cost, run_outcome
from oncallsim.debrief.score import run_score
from oncallsim.debrief.scorecard import score
from oncallsim.simulation import Simulation

__all__ = ["run_html"]

WIDTH, HEIGHT, PAD = 360, 90, 4


def run_html(sim: Simulation) -> str:
    """The notebook's view of ``sim`` (HTML)."""
    head = (
        f"<strong>{escape(sim.scenario.title)}</strong> · seed {sim.seed} · {escape(sim.engine.name)} engine · "
        f"{sim.minute} of {sim.length} minutes"
    )
    if not sim.timeline:
        return f"<div class='oncallsim-run'>{head}<br><em>not started: sim.run() or sim.step()</em></div>"
    outcome = run_outcome(sim)
    judged = score(sim.scenario, outcome)
    points = run_score(outcome, opening_fleet_cost(sim), sim.scenario.score)
    lost = ", ".join(f"{p.name} −{p.lost:.1f}" for p in points.parts if p.lost >= 0.05) or "nothing"
    met = f"{sum(o.passed for o in judged)} of {len(judged)} objectives met" if judged else "no objectives"
    facts = (
        f"score <strong>{points.score}</strong>/100 (lost on {escape(lost)}) · {met} · "
        f"error budget spent {outcome.budget_spent:.2%} · cost ${outcome.cost:.2f}"
    )
    return f"<div class='oncallsim-run'>{head}<br>{facts}<br>{error_chart(sim)}</div>"


def error_chart(sim: Simulation) -> str:
    """The error rate a minute as an SVG polyline, the SLO's error allowance dashed, the page (red) and the
    operator's actions (blue) as vertical lines; the axis from 0 to the worst minute (or twice the allowance)."""
    rates = [r.error_rate for r in sim.timeline]
    allowance = sim.params.error_budget
    top = max(max(rates), 2 * allowance)
    step = (WIDTH - 2 * PAD) / max(1, sim.length - 1)

    def x(minute: int) -> float:
        return PAD + minute * step

    def y(rate: float) -> float:
        return HEIGHT - PAD - (HEIGHT - 2 * PAD) * rate / top

    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(rates))
    marks = [
        f"<line x1='{x(r.minute):.1f}' x2='{x(r.minute):.1f}' y1='0' y2='{HEIGHT}' stroke='#b91c1c' "
        "stroke-dasharray='3 2'><title>page fired</title></line>"
        for r in sim.timeline
        if any(getattr(e, "code", "") == "page_fired" for e in r.events)
    ]
    marks += [
        f"<line x1='{x(a.minute):.1f}' x2='{x(a.minute):.1f}' y1='0' y2='{HEIGHT}' stroke='#1d4ed8' "
        f"stroke-dasharray='1 2'><title>{escape(a.control)}</title></line>"
        for a in sim.actions
    ]
    return (
        f"<svg width='{WIDTH}' height='{HEIGHT}' viewBox='0 0 {WIDTH} {HEIGHT}' role='img' "
        f"aria-label='error rate per minute, worst {top:.2%}'>"
        f"<rect width='{WIDTH}' height='{HEIGHT}' fill='#fff' stroke='#e5e7eb'/>"
        f"<line x1='0' x2='{WIDTH}' y1='{y(allowance):.1f}' y2='{y(allowance):.1f}' stroke='#111827' "
        f"stroke-dasharray='4 3'><title>SLO: {allowance:.2%} errors</title></line>"
        f"{''.join(marks)}<polyline points='{line}' fill='none' stroke='#b91c1c' stroke-width='1.5'/>"
        f"<text x='{WIDTH - PAD}' y='12' text-anchor='end' font-size='10' fill='#374151'>errors, max {top:.2%}</text>"
        "</svg>"
    )


Simulation.html_view = run_html
