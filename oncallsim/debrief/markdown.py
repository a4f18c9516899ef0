"""The debrief as Markdown: a postmortem document to paste into a wiki or a ticket (English)."""

from __future__ import annotations

from oncallsim.debrief.html import CAUSE_LABELS, COMPARISONS, fmt, fmt_objective, fmt_part
from oncallsim.debrief.report import COUNTERFACTUAL_LABELS, REQUEST_COMPARISONS, Report

__all__ = ["render_markdown"]

ORIGINS_NOTE = (
    "Each failed request is counted at the service where its failure began, not where it was seen: the clients see "
    "every failure at the entry, the service they call."
)
NO_CONTRADICTIONS = "None: no timeout works against another's, nor against the clients' deadline."


def _cell(text: object) -> str:
    """A table cell: a pipe or a line break in a user's scenario title must not break the table."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(r: Report) -> str:
    verdict = "all objectives met" if r.passed else "objectives missed"
    lines = [
        f"# Postmortem — {_cell(r.scenario_title)} (seed {r.seed})",
        "",
        f"{r.minutes} minutes · {verdict} · score {r.score} / 100",
        "",
        *[f"> {line}" for line in r.headline],
        "",
        "## Timeline",
        "",
        "| time | what |",
        "|---|---|",
        *[f"| {e.clock} | {_cell(e.template % e.args if e.args else e.template)} |" for e in r.incident_timeline],
        "",
        "## Objectives",
        "",
        "| objective | result | measured |",
        "|---|---|---|",
        *[f"| {_cell(o.name)} | {'passed' if o.passed else 'failed'} | {fmt_objective(o)} |" for o in r.objectives],
        "",
        "## Compared with hands-off and the playbook",
        "",
        "| | you | " + " | ".join(COUNTERFACTUAL_LABELS.get(name, name) for name in r.counterfactuals) + " |",
        "|---|---|" + "---|" * len(r.counterfactuals),
        f"| score | {r.score} | " + " | ".join(str(c.score) for c in r.counterfactuals.values()) + " |",
    ]
    for label, key, kind in COMPARISONS:
        others = " | ".join(fmt(getattr(c, key), kind) for c in r.counterfactuals.values())
        lines.append(f"| {label} | {fmt(getattr(r, key), kind)} | {others} |")
    if r.attempts_per_request is not None:  # a request-engine run: its retries and its wasted work
        for label, key, kind in REQUEST_COMPARISONS:
            others = " | ".join(fmt(getattr(c, key), kind) for c in r.counterfactuals.values())
            if key == "attempts_per_request" and r.failure_origins is not None:  # a chain: every service's
                label = "attempts per request, at every service (its calls, retries and hedges)"
            lines.append(f"| {label} | {fmt(getattr(r, key), kind)} | {others} |")
    lines += ["", "## Where the error budget went", ""]
    lines += [f"- {CAUSE_LABELS[c]}: {fmt(v, 'pct')}" for c, v in r.budget_spent_by_cause.items()]
    lines += _origins(r)
    lines += ["", "## Score", ""]
    lines += [
        f"- {p.name.replace('_', ' ')}: {fmt_part(p.name, p.amount)} → −{p.lost:.1f} of {p.cap:.0f}"
        + (f" (all lost at {fmt_part(p.name, p.full)})" if p.full else "")
        for p in r.score_parts
    ]
    return "\n".join(lines) + "\n"


def _origins(r: Report) -> list[str]:
    """A chain's "Where the failures began": per service, the failed requests begun there, their share and the
    error budget they burned, the share seen there; then the graph's contradictions."""
    o = r.failure_origins
    if o is None:
        return []
    lines = ["", "## Where the failures began", "", ORIGINS_NOTE, ""]
    lines += ["| service | failed requests begun there | share | budget spent | seen there |", "|---|---|---|---|---|"]
    lines += [
        f"| {_cell(row.service)} | {fmt(row.failed, 'int')} | {fmt(row.share, 'pct')} | {fmt(row.budget_spent, 'pct')} "
        f"| {fmt(row.seen_share, 'pct')} |"
        for row in o.services
    ]
    lines += ["", "### Contradictions in the graph", ""]
    lines += [f"- {template % args}" for template, args in o.contradictions] or [NO_CONTRADICTIONS]
    return lines
