"""``oncallsim alerts RULES.yml RUNFILE…``: a team's Prometheus rules over simulated runs, by the real promtool.

For every alert: when it went pending and firing, against the incident's start and the built-in page; the
incidents it missed; and how often it fired on runs where nothing went wrong (free-play days, a sweep of seeds),
per simulated week. docs/alerts.md has a worked example.
"""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from oncallsim.alerting.history import DEFAULT_HISTORY_MIN, MAX_HISTORY_MIN
from oncallsim.cli_common import (
    check_choices,
    err,
    load_run_file,
    notice_after,
    prepare_engine,
    print_trimmed,
    scenario_arg,
    stdout_console,
    write_whole,
)
from oncallsim.metrics.service import DEFAULT_SERVICE, check_service
from oncallsim.model import InvalidInput

if TYPE_CHECKING:  # the command's own imports are in its body: `oncallsim --help` loads no engine
    from oncallsim.alerting.evaluate import AlertSummary, RunAlerts
    from oncallsim.alerting.pagerduty import PagerConfig
    from oncallsim.simulation import Simulation

__all__ = ["MAX_SWEEP_SEEDS", "alerts"]

# Runs are kept in memory while promtool evaluates them (a day's records are ~2 MB); a simulated day takes ~6 s of
# CPU with the shipped rules (docs/alerts.md): 100 days, ~10 minutes on two cores.
MAX_SWEEP_SEEDS = 100
DETAIL_RUNS = 10  # more runs than this: the summary alone


def alerts(
    rules: Annotated[Path, typer.Argument(help="A Prometheus rule file (recording and alerting rules).")],
    run_files: Annotated[
        list[Path] | None, typer.Argument(help="Run files saved with --save-run (or by the console).")
    ] = None,
    scenario: Annotated[
        str | None, typer.Option(help="Also play this scenario hands-off, once per seed (see --seeds).")
    ] = None,
    seeds: Annotated[int, typer.Option(help=f"With --scenario: how many seeds, 1 to {MAX_SWEEP_SEEDS}.")] = 1,
    first_seed: Annotated[int, typer.Option(help="With --scenario: the first seed (then +1 each).")] = 0,
    engine: Annotated[str | None, typer.Option(help="With --scenario: minute or request.")] = None,
    minutes: Annotated[int | None, typer.Option(help="With --scenario: minutes of each run.")] = None,
    service: Annotated[str, typer.Option(help="The service label the runs' series carry.")] = DEFAULT_SERVICE,
    history: Annotated[
        int,
        typer.Option(
            metavar="MINUTES",
            help=f"Minutes before each run like its opening minute, 0 to {MAX_HISTORY_MIN} (default: a page's "
            "longest window, 6 h; a ticket's 3 d window needs 4320, and takes longer).",
        ),
    ] = DEFAULT_HISTORY_MIN,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write every episode as JSON here.")] = None,
    keep_test: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Also write the promtool unit-test file made for the runs.")
    ] = None,
    pagerduty_url: Annotated[
        str | None,
        typer.Option(help="Also send your rules' pages here as PagerDuty Events v2 (only when given on the line)."),
    ] = None,
    pagerduty_routing_key: Annotated[str | None, typer.Option(help="The PagerDuty integration's key.")] = None,
) -> None:
    """Evaluate a Prometheus rule file over simulated runs with the real promtool: when each alert went pending
    and firing against the incident and the built-in page, missed incidents, false pages per simulated week."""
    from oncallsim.alerting.evaluate import alert_rules, evaluate, summarize
    from oncallsim.alerting.pagerduty import PagerConfig
    from oncallsim.alerting.promtool import check_rules
    from oncallsim.simulation import MAX_SEED, Simulation
    from oncallsim.store.runfiles import vet_run_file

    check_service(service)
    if scenario is None and (seeds != 1 or first_seed != 0 or engine is not None or minutes is not None):
        raise InvalidInput("--scenario", "--seeds, --first-seed, --engine and --minutes need --scenario")
    if not run_files and scenario is None:
        raise InvalidInput("RUNFILE", "name at least one run file, or a scenario to sweep with --scenario")
    if not 1 <= seeds <= MAX_SWEEP_SEEDS:
        raise InvalidInput("--seeds", f"must be from 1 to {MAX_SWEEP_SEEDS}, got {seeds}")
    if not 0 <= first_seed <= MAX_SEED - seeds + 1:
        raise InvalidInput("--first-seed", f"must be from 0 to {MAX_SEED - seeds + 1}, got {first_seed}")
    if not 0 <= history <= MAX_HISTORY_MIN:
        raise InvalidInput("--history", f"must be from 0 to {MAX_HISTORY_MIN} minutes, got {history}")
    check_choices(None, engine)
    pagerduty = PagerConfig.checked(pagerduty_url, pagerduty_routing_key)
    check_rules(rules)  # a bad rule file: promtool's message, one line, before any run is played
    sims: list[Simulation] = []
    labels: list[str] = []
    for path in run_files or []:
        run = load_run_file(path)
        sim = vet_run_file(run, str(path), until=0)
        prepare_engine(sim.engine, graph=sim.plan.graph is not None)
        with notice_after(1.0, f"replaying {path}…"):
            sims.append(vet_run_file(run, str(path)))
        labels.append(f"{path.name}: {sim.scenario.id} seed {sim.seed}")
    if scenario is not None:
        first = Simulation(scenario_arg(scenario), seed=first_seed, engine=engine, minutes=minutes)
        prepare_engine(first.engine, graph=first.plan.graph is not None)
        with notice_after(1.0, f"playing {seeds} run(s) of {first.scenario.id} hands-off…"):
            for seed in range(first_seed, first_seed + seeds):
                sim = first if seed == first_seed else Simulation(first.scenario, seed, engine=engine, minutes=minutes)
                sim.run()
                sims.append(sim)
                labels.append(f"{sim.scenario.id} seed {seed}")
    with notice_after(1.0, f"promtool evaluates the rules over {sum(len(s.timeline) for s in sims):,} minutes…"):
        runs = evaluate(rules, sims, labels, service, history, keep=keep_test)
    summary = summarize(runs, alert_rules(rules))
    out = stdout_console()
    if len(runs) <= DETAIL_RUNS:
        for one in runs:
            print_run(one, out)
    print_summary(summary, runs, out)
    if json_out is not None:
        write_whole(json_out, json.dumps(as_json(runs, summary), indent=1) + "\n")
    if pagerduty is not None:
        send_pages(pagerduty, runs)


def send_pages(config: PagerConfig, runs: list[RunAlerts]) -> None:
    """Your rules' pages, run after run, each run's in simulated order, so your PagerDuty service (its routing,
    escalation, schedules) is rehearsed on the incident too; the built-in page is not sent (``serve`` sends it)."""
    from oncallsim.alerting.pagerduty import Pager, rule_page_events

    now = datetime.now(UTC)
    events = [event for n, run in enumerate(runs) for _, event in rule_page_events(config.routing_key, n, run, now)]
    pager = Pager(config)
    try:
        futures = pager.post(events)
    finally:
        pager.close()  # every queued event posted (or tried three times)
    failed = sum(not f.result() for f in futures)
    err.print(f"sent {len(futures) - failed} of {len(futures)} PagerDuty event(s) to {config.url}", soft_wrap=True)
    if failed:
        raise typer.Exit(1)


def _signed(minutes: int | None) -> str:
    if minutes is None:
        return "—"
    return "same minute" if minutes == 0 else f"{minutes:+d} min"


def print_run(run: RunAlerts, out: Any) -> None:
    sim = run.sim
    start = run.incident_start
    fired = [e.firing for e in run.builtin if e.firing is not None and (start is None or e.firing >= start)]
    builtin = fired[0] if fired else None
    said = f"incident at {run.clock(start)}" if start is not None else "no scripted incident"
    page = f"built-in page {run.clock(builtin)}" if builtin is not None else "no built-in page"
    out.print(
        f"\n[bold]{run.label}[/] ({sim.engine.name} engine, {sim.plan.clock(0)}, {run.minutes} min): {said}; {page}",
        soft_wrap=True,
    )
    if not run.episodes:
        out.print("  no alert went pending")
        return
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col in ("alert", "page", "pending", "firing", "resolved", "after the incident", "after the built-in page"):
        table.add_column(col, justify="left" if col == "alert" else "right")
    for e in run.episodes:
        table.add_row(
            e.rule,
            "yes" if e.page else "no",
            run.clock(e.pending),
            run.clock(e.firing),
            run.clock(e.resolved) if e.resolved is not None else "(firing at the end)" if e.firing is not None else "—",
            _signed(None if start is None or e.firing is None else e.firing - start),
            _signed(None if builtin is None or e.firing is None else e.firing - builtin),
        )
    print_trimmed(out, table)


def _median(values: list[int]) -> str:
    return "—" if not values else _signed(round(statistics.median(values)))


def print_summary(rows: list[AlertSummary], runs: list[RunAlerts], out: Any) -> None:
    from oncallsim.alerting.evaluate import BUILTIN

    incidents = sum(run.incident_start is not None for run in runs)
    quiet = [run for run in runs if run.quiet]
    days = sum(run.minutes for run in quiet) / 1440
    out.print(
        f"\n[bold]Over {len(runs)} run(s)[/]: {incidents} with an incident, {len(quiet)} where nothing went wrong "
        f"({days:.1f} simulated days), {len(runs) - incidents - len(quiet)} unscripted trouble (the built-in page "
        "fired)",
        soft_wrap=True,
    )
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    columns = ("alert", "page", "caught", "missed", "after the incident", "after the built-in page", "false/week",
               "unpaged/week")  # fmt: skip
    for col in columns:
        table.add_column(col, justify="left" if col == "alert" else "right")
    for row in rows:
        per_week = row.per_week
        table.add_row(
            row.alert,
            "yes" if row.page else "no",
            f"{row.caught}/{row.incidents}" if row.incidents else "—",
            str(row.missed) if row.incidents else "—",
            _median(row.after_start),
            "—" if row.alert == BUILTIN else _median(row.after_builtin),
            "—" if per_week is None else f"{per_week:.1f}",
            "—" if row.unpaged_per_week is None else f"{row.unpaged_per_week:.1f}",
        )
    print_trimmed(out, table)
    err.print(
        "times are medians over the incidents caught; false/week: firings on the runs where nothing went wrong, "
        "per 7 simulated days; unpaged/week: firings on the runs the built-in page never fired on",
        soft_wrap=True,
    )


def as_json(runs: list[RunAlerts], rows: list[AlertSummary]) -> dict[str, Any]:
    def episode(run: RunAlerts, e: Any) -> dict[str, Any]:
        return {
            "rule": e.rule,
            "alert": e.alert,
            "labels": e.labels,
            "page": e.page,
            "pending": e.pending,
            "firing": e.firing,
            "resolved": e.resolved,
            "pending_clock": run.clock(e.pending),
            "firing_clock": run.clock(e.firing),
        }

    return {
        "runs": [
            {
                "label": run.label,
                "scenario": run.sim.scenario.id,
                "seed": run.sim.seed,
                "engine": run.sim.engine.name,
                "minutes": run.minutes,
                "incident_start": run.incident_start,
                "quiet": run.quiet,
                "builtin": [episode(run, e) for e in run.builtin],
                "alerts": [episode(run, e) for e in run.episodes],
            }
            for run in runs
        ],
        "summary": [
            {
                "rule": row.alert,
                "page": row.page,
                "incidents": row.incidents,
                "caught": row.caught,
                "missed": row.missed,
                "after_start": row.after_start,
                "after_builtin": row.after_builtin,
                "quiet_minutes": row.quiet_minutes,
                "quiet_firings": row.quiet_firings,
                "per_week": row.per_week,
                "unpaged_minutes": row.unpaged_minutes,
                "unpaged_firings": row.unpaged_firings,
                "unpaged_per_week": row.unpaged_per_week,
            }
            for row in rows
        ],
    }
