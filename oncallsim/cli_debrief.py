"""The debrief in a terminal (Rich): the summary the CLI prints after a run or for a run file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, overload

import typer

from oncallsim.cli_common import load_run_file, trimmed_console, write_whole
from oncallsim.model.errors import InvalidInput

if TYPE_CHECKING:  # imported where used: the command line's help never imports the debrief or the engines
    from rich.console import Console

    from oncallsim.debrief import Report
    from oncallsim.simulation import Simulation

__all__ = ["check_language", "debrief", "make_debrief", "print_debrief", "print_debrief_in", "write_html_report"]


@overload
def make_debrief(sim: Simulation, with_runs: Literal[False] = False) -> Report: ...
@overload
def make_debrief(sim: Simulation, with_runs: Literal[True]) -> tuple[Report, dict[str, Simulation]]: ...
def make_debrief(sim: Simulation, with_runs: bool = False) -> Report | tuple[Report, dict[str, Simulation]]:
    from oncallsim.debrief import make_report
    from oncallsim.policies import counterfactuals

    others = counterfactuals(sim)
    report = make_report(sim, others)
    return (report, others) if with_runs else report


def print_debrief(report: Report, console: Console | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    from oncallsim.debrief.html import CAUSE_LABELS, COMPARISONS, fmt, fmt_objective

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
    for line in origin_lines(report):
        console.print(line, markup=False)
    split = report.cost_split
    console.print(
        f"Cost: base fleet ${split.base_fleet:.2f}, extra instances ${split.extra_instances:.2f}, "
        f"rollback double billing ${split.rollback_double_billing:.2f}"
        + (f", the other services' instances ${split.other_services:.2f}" if report.failure_origins else "")
        + f" (total ${report.cost:.2f})"
    )
    for d in report.decisions:  # over the 10 minutes from it: with the decision, and without it on the same draws
        without = f" (without it: {d.without['error_rate']:.2%}, {d.without['p99_ms']:.0f} ms)" if d.without else ""
        console.print(
            f"  {d.clock}  {', '.join(d.actions)}: errors {d.after['error_rate']:.2%}, p99 {d.after['p99_ms']:.0f} ms"
            + without
        )


def print_debrief_in(report: Report, title: str, language: str, console: Console | None = None) -> None:
    """The terminal's debrief in ``language``: the same sentences and labels as the web page's, from the catalog."""
    from rich.console import Console
    from rich.table import Table

    from oncallsim.debrief.html import CAUSE_LABELS, COMPARISONS, fmt, fmt_objective, sentence
    from oncallsim.i18n import DEFAULT_LANGUAGE, translations

    if language == DEFAULT_LANGUAGE:
        print_debrief(report, console)
        return
    console = console or Console(highlight=False)
    tr = translations(language)
    _ = tr.gettext
    verdict = f"[green]{_('✔ all objectives met')}[/]" if report.passed else f"[red]{_('✘ objectives missed')}[/]"
    length = tr.ngettext("%(n)s minute", "%(n)s minutes", report.minutes) % {"n": report.minutes}
    console.print(f"\n[bold]{_('Debrief')} — {title}[/] ({_('seed')} {report.seed}, {length}): {verdict}")
    for template, args in report.headline_parts:
        console.print("  " + sentence(template, args, language), markup=False)
    if report.objectives:
        card = Table(title=_("Score card"), title_justify="left")
        for column in (_("Objective"), _("Result")):
            card.add_column(column)
        card.add_column(_("Measured"), justify="right")
        for o in report.objectives:
            name = sentence(o.template, o.args, language) if o.template else o.name
            passed = f"[green]{_('✔ passed')}[/]" if o.passed else f"[red]{_('✘ failed')}[/]"
            card.add_row(name, passed, fmt_objective(o, language))
        console.print(card)
    compare = Table(title=_("Compared with what would have happened otherwise"), title_justify="left")
    compare.add_column("")
    compare.add_column(_("you"), justify="right")
    for name in report.counterfactuals:
        compare.add_column(_(name), justify="right")
    for label, key, kind in COMPARISONS:
        values = [fmt(getattr(c, key), kind, language) for c in report.counterfactuals.values()]
        compare.add_row(_(label), fmt(getattr(report, key), kind, language), *values)
    console.print(compare)
    causes = ", ".join(
        f"{_(CAUSE_LABELS.get(k, k))} {fmt(v, 'pct', language)}" for k, v in report.budget_spent_by_cause.items()
    )
    console.print(f"{_('Where the error budget went')}: {causes}", markup=False)
    for line in origin_lines(report, language):
        console.print(line, markup=False)
    split = report.cost_split
    parts = [
        (_("base fleet"), split.base_fleet),
        (_("extra instances"), split.extra_instances),
        (_("rollback's double billing"), split.rollback_double_billing),
    ]
    if report.failure_origins is not None:  # a chain: its other services' instances, so that the parts add up
        parts.append((_("the other services' instances"), split.other_services))
    parts.append((_("total"), report.cost))
    console.print(
        f"{_('What it cost')}: " + ", ".join(f"{k} {fmt(v, 'usd', language)}" for k, v in parts), markup=False
    )


def origin_lines(report: Report, language: str | None = None) -> list[str]:
    """A chain's "Where the failures began" in the terminal: each service's share of the failed requests begun
    there (the entry's: all seen there), then the graph's contradictions, in ``language`` (the catalog's)."""
    from oncallsim.debrief.html import fmt, sentence
    from oncallsim.debrief.markdown import NO_CONTRADICTIONS
    from oncallsim.i18n import DEFAULT_LANGUAGE, translations

    o = report.failure_origins
    if o is None:
        return []
    language = language or DEFAULT_LANGUAGE
    _ = translations(language).gettext
    shares = ", ".join(f"{row.service} {fmt(row.share, 'pct', language)}" for row in o.services)
    seen = f"{_('seen there')}: {o.entry} {fmt(1.0 if o.failed else 0.0, 'pct', language)}"
    lines = [f"{_('Where the failures began')}: {shares} ({seen})", f"{_('Contradictions in the graph')}:"]
    lines += [f"  - {sentence(t, a, language)}" for t, a in o.contradictions] or [f"  {_(NO_CONTRADICTIONS)}"]
    return lines


def check_language(language: str) -> str:
    """--lang: one of the languages the catalogs have (a clear error naming them, never a silent English)."""
    from oncallsim.i18n import LANGUAGE_NAMES, languages

    code = language.strip().lower()
    if code not in languages():
        known = ", ".join(f"{c} ({LANGUAGE_NAMES.get(c, c)})" for c in languages())
        raise InvalidInput("--lang", f"unknown language {language[:20]!r}; known: {known}")
    return code


def write_html_report(
    sim: Simulation, report: Report, others: dict[str, Simulation], path: Path, language: str
) -> None:
    """The self-contained HTML report in ``language`` (sentences, scenario texts and numbers)."""
    from oncallsim.debrief.html import render_html
    from oncallsim.scenarios.texts import scenario_text

    page = render_html(
        report,
        sim.timeline,
        sim.plan,
        sim.params,
        sim.actions,
        {name: o.timeline for name, o in others.items()},
        language,
        scenario_text(sim.scenario, "title", language),
    )
    write_whole(path, page)


def debrief(
    run_file: Annotated[Path, typer.Argument(help="A run file saved with --save-run (or by the console).")],
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML report here.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the JSON summary here.")] = None,
    lang: Annotated[str, typer.Option("--lang", help="Summary and report language: en, da, zu, hy or ar.")] = "en",
) -> None:
    """Replay a run file and debrief it: score card, budget by cause, decisions, counterfactuals."""
    from oncallsim.scenarios.texts import scenario_text
    from oncallsim.store.runfiles import vet_run_file

    language = check_language(lang)
    sim = vet_run_file(load_run_file(run_file), str(run_file))
    report, others = make_debrief(sim, with_runs=True)
    out = trimmed_console(sys.stdout)  # no trailing padding (a pipe, a diff)
    print_debrief_in(report, scenario_text(sim.scenario, "title", language), language, out)
    out.file.flush()
    if json_out is not None:
        write_whole(json_out, report.model_dump_json(indent=2) + "\n")
    if html is not None:
        write_html_report(sim, report, others, html, language)
