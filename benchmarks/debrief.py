"""The debrief's cost against the number of minutes with an action: a full free-play day (1,440 minutes) with 0,
40, 400 and 1,440 action minutes (the target utilization set at evenly spaced minutes, alternating 55 % / 65 %).

Measured, each as the median of repeats: the debrief (the counterfactuals and the report), its charts as the web
keeps them (the figure's JSON, what an import computes with the report) and the self-contained HTML report
(the charts again, in the page). Printed as ratios against the run with no action: linear in the action minutes,
where the charts used to add a shape and a label per decision (plotly re-validating all of them each time, a
cost in the square of the action minutes: 40 action minutes took 44 s to import).

    python benchmarks/debrief.py [--repeats 3] [--counts 0,40,400,1440]
"""

from __future__ import annotations

import argparse
import statistics
import time

from oncallsim import Simulation
from oncallsim.debrief import make_report
from oncallsim.debrief.charts import debrief_figure
from oncallsim.debrief.html import render_html
from oncallsim.policies import counterfactuals


def played(action_minutes: int, minutes: int = 1440) -> Simulation:
    """A day of free play with the target utilization set at ``action_minutes`` evenly spaced minutes."""
    sim = Simulation("free-play", seed=1)
    at = {round(i * minutes / action_minutes) for i in range(action_minutes)} if action_minutes else set()
    for minute in range(minutes):
        sim.step([("target_utilization", 0.55 if len(sim.actions) % 2 else 0.65)] if minute in at else [])
    assert len({a.minute for a in sim.actions}) == action_minutes
    return sim


def debrief_times(sim: Simulation) -> tuple[float, float, float]:
    """Seconds for the report (with its counterfactuals), the figure's JSON, and the HTML report."""
    start = time.perf_counter()
    others = counterfactuals(sim)
    report = make_report(sim, others)
    timelines = {name: o.timeline for name, o in others.items()}
    reported = time.perf_counter()
    debrief_figure(sim.timeline, sim.params, sim.actions, report.latency_target_ms, timelines).to_json()
    charted = time.perf_counter()
    render_html(report, sim.timeline, sim.plan, sim.params, sim.actions, timelines)
    return reported - start, charted - reported, time.perf_counter() - charted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--counts", default="0,40,400,1440", help="action minutes, comma-separated (0 first)")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    debrief_times(played(counts[0]))  # warm: imports, catalogs, templates
    rows = []
    for count in counts:
        sim = played(count)
        runs = [debrief_times(sim) for _ in range(args.repeats)]
        medians = tuple(statistics.median(run[i] for run in runs) for i in range(3))
        rows.append((count, medians, sum(medians)))
    base = rows[0][2]
    print(
        f"debrief of a 1,440-minute free-play day, median of {args.repeats} (ratios against {counts[0]} action minutes)"
    )
    print(f"{'action minutes':>14} {'report s':>9} {'figure s':>9} {'HTML s':>8} {'total s':>8} {'ratio':>7}")
    for count, (report_s, figure_s, html_s), total in rows:
        print(f"{count:>14} {report_s:>9.2f} {figure_s:>9.2f} {html_s:>8.2f} {total:>8.2f} {total / base:>6.2f}×")


if __name__ == "__main__":
    main()
