"""The debrief in a terminal (Rich): the summary the CLI prints after a run or for a run file."""

from __future__ import annotations

from typing import Literal, overload

from rich.console import Console
from rich.table import Table

from oncallsim.debrief import Report, make_report
from oncallsim.debrief.html import CAUSE_LABELS, COMPARISONS, fmt, fmt_objective
from oncallsim.policies import counterfactuals
from oncallsim.simulation import Simulation

__all__ = ["make_debrief", "print_debrief"]


@overload
def make_debrief(sim: Simulation, with_runs: Literal[False] = False) -> Report: ...
@overload
def make_debrief(sim: Simulation, with_runs: Literal[True]) -> tuple[Report, dict[str, Simulation]]: ...
def make_debrief(sim: Simulation, with_runs: bool = False) -> Report | tuple[Report, dict[str, Simulation]]:
    others = counterfactuals(sim)
    report = make_report(sim, others)
    return (report, others) if with_runs else report


def print_debrief(report: Report, console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    verdict = "[green]all objectives met[/]" if report.passed else "[red]objectives missed[/]"
    console.print(f"\n[bold]Debrief — {report.scenario_title}[/] (seed {report.seed}, {report.minutes} min): {verdict}")
    for line in report.headline:
        console.print("  " + line)
    if report.objectives:
        card = Table(title="Score card", title_justify="left")
        card.add_column("objective")
        card.add_column("result")
        card.add_column("measured", justify="right")
        for o in report.objectives:
            card.add_row(o.name, "[green]passed[/]" if o.passed else "[red]failed[/]", fmt_objective(o))
        console.print(card)
    compare = Table(title="You and the counterfactuals", title_justify="left")
    compare.add_column("")
    compare.add_column("you", justify="right")
    for name in report.counterfactuals:
        compare.add_column(name, justify="right")
    for label, key, kind in COMPARISONS:
        compare.add_row(
            label,
            fmt(getattr(report, key), kind),
            *(fmt(getattr(c, key), kind) for c in report.counterfactuals.values()),
        )
    console.print(compare)
    causes = ", ".join(f"{CAUSE_LABELS[k]} {v:.2%}" for k, v in report.budget_spent_by_cause.items())
    console.print(f"Budget spent by cause: {causes}")
    split = report.cost_split
    console.print(
        f"Cost: base fleet ${split.base_fleet:.2f}, extra instances ${split.extra_instances:.2f}, "
        f"rollback double billing ${split.rollback_double_billing:.2f}"
    )
    for d in report.decisions:
        console.print(
            f"  {d.clock}  {', '.join(d.actions)}: errors {d.before['error_rate']:.2%} → "
            f"{d.after['error_rate']:.2%}, p99 {d.before['p99_ms']:.0f} → {d.after['p99_ms']:.0f} ms"
        )
