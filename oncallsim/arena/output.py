"""The arena's table as text cells, JSON and an offline HTML page (no script, no CDN: inline CSS, escaped text)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from oncallsim.arena.agent import plain
from oncallsim.arena.play import ArenaPlan, aggregate, scenario_detail

__all__ = ["LEGEND", "TABLE_COLUMNS", "TIME_COLUMNS", "arena_html", "arena_json", "table_cells", "time_cells"]

# (heading, how a contestant's aggregate row shows it): the ranking table, the same for the same contestants
TABLE_COLUMNS = (
    "contestant",
    "runs",
    "score",
    "min",
    "budget burned",
    "cost $",
    "objectives",
    "passed",
    "mitigated",
    "TTM",
    "gap",
)
LEGEND = (
    "score: mean over the runs (min: the lowest); budget burned: mean share of the error budget; objectives: met "
    "of all; passed: runs that met every objective; mitigated: runs back within the SLO (burn ≤ 1 for 10 minutes); "
    "TTM: median minutes from the incident's start to mitigation; gap: the best counterfactual's score minus the "
    "contestant's, mean (docs/arena.md)"
)
# the decisions' wall-clock: varies run to run, so it is a table of its own
TIME_COLUMNS = ("contestant", "spec", "decisions", "mean ms", "max ms", "failures")


def _opt(value: float | None, fmt: str, none: str = "—") -> str:
    return none if value is None else format(value, fmt)


def table_cells(line: dict[str, Any]) -> list[str]:
    """One contestant's row of the ranking table, as text."""
    return [
        line["contestant"],
        str(line["runs"]),
        f"{line['score_mean']:.1f}",
        str(line["score_min"]),
        f"{line['budget_spent_mean']:.2%}",
        f"{line['cost_mean']:.2f}",
        f"{line['objectives_passed']}/{line['objectives_total']}",
        f"{line['runs_passed']}/{line['runs']}",
        f"{line['mitigated']}/{line['runs']}",
        _opt(line["time_to_mitigate_median_min"], ".1f")
        + (" min" if line["time_to_mitigate_median_min"] is not None else ""),
        _opt(line["gap_mean"], "+.1f"),
    ]


def time_cells(line: dict[str, Any]) -> list[str]:
    return [
        line["contestant"],
        line["spec"],
        str(line["decisions"]),
        _opt(line["decision_ms_mean"], ".3f"),
        _opt(line["decision_ms_max"], ".3f"),
        str(line["failures"]),
    ]


def arena_json(plan: ArenaPlan, rows: Sequence[dict[str, Any]]) -> str:
    """The whole arena: its settings, the table (``contestants``), per scenario (``by_scenario``) and every run."""
    document = {
        "format": "oncallsim-arena",
        "version": 1,
        "scenarios": list(plan.scenarios),
        "seeds": list(plan.seeds),
        "engine": plan.engine,
        "difficulty": plan.settings.difficulty,
        "time_limit_s": plan.settings.time_limit_s,
        "contestants": aggregate(rows),
        "by_scenario": scenario_detail(rows),
        "runs": list(rows),
    }
    return json.dumps(plain(document), indent=2) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;background:#fff}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
caption{text-align:left;font-weight:bold;margin-bottom:.4em}p.note{color:#555;max-width:60em}
"""


def _table(caption: str, heads: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in heads)
    rows = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in body)
    return f"<table><caption>{e(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def arena_html(plan: ArenaPlan, rows: Sequence[dict[str, Any]], title: str = "oncallsim arena") -> str:
    """One page, readable offline: the ranking, the decision times, a table per scenario, every run."""
    e = html.escape
    summary = aggregate(rows)
    seeds = ", ".join(str(s) for s in plan.seeds)
    parts = [
        f"<h1>{e(title)}</h1>",
        f"<p class=note>Scenarios {e(', '.join(plan.scenarios))}; held-out seeds {e(seeds)}; engine "
        f"{e(plan.engine or 'each scenario’s own')}; difficulty {e(plan.settings.difficulty)}. Sorted by the mean "
        f"score. {e(LEGEND)}.</p>",
        _table("Ranking", TABLE_COLUMNS, [table_cells(line) for line in summary]),
        _table("Decisions (wall-clock)", TIME_COLUMNS, [time_cells(line) for line in summary]),
    ]
    detail = scenario_detail(rows)
    for scenario in dict.fromkeys(r["scenario"] for r in rows):
        lines = [line for line in detail if line["scenario"] == scenario]
        parts.append(_table(f"Scenario {scenario}", TABLE_COLUMNS, [table_cells(line) for line in lines]))
    run_heads = (
        "contestant",
        "scenario",
        "seed",
        "score",
        "budget",
        "cost $",
        "objectives",
        "mitigate min",
        "best counterfactual",
        "gap",
        "failure",
    )
    run_rows = [
        [
            r["contestant"],
            r["scenario"],
            str(r["seed"]),
            str(r["score"]),
            f"{r['budget_spent']:.2%}",
            f"{r['cost']:.2f}",
            f"{r['objectives_passed']}/{r['objectives_total']}",
            _opt(r["time_to_mitigate_min"], "d", "not mitigated"),
            f"{r['best_counterfactual'] or '—'} ({_opt(r['best_counterfactual_score'], 'd')})",
            _opt(r["gap"], "+d"),
            r["failure"] or "",
        ]
        for r in rows
    ]
    parts.append(_table("Every run", run_heads, run_rows))
    body = "\n".join(parts)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{_CSS}</style></head><body>\n{body}\n</body></html>\n"
    )
