"""The command line: a thin translation between a terminal and the core. Bad input → one line, exit 2.

Each command imports what it needs when it runs: ``oncallsim --help`` and ``oncallsim scenarios`` never import
numba, SciPy or the engines (docs/architecture.md, "The command line's start")."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from oncallsim.cli_common import (
    OneLineErrors,
    check_choices,
    checked_bind,
    did_you_mean,
    err,
    guarded,
    parse_sets,
    prepare_engine,
    print_trimmed,
    read_actions,
    scenario_arg,
    stdout_console,
    trimmed_console,
    write_whole,
)
from oncallsim.cli_debrief import debrief
from oncallsim.model.errors import InvalidInput

if TYPE_CHECKING:
    from oncallsim.model import MinuteRecord
    from oncallsim.simulation import Simulation

app = typer.Typer(
    cls=OneLineErrors,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: no padded boxes, flags without a <bool>
    help="oncallsim: an on-call simulator whose physics are textbook queueing models.",
)


class Format(StrEnum):
    table = "table"
    csv = "csv"
    jsonl = "jsonl"


@app.command()
@guarded
def scenarios(show: Annotated[str | None, typer.Option("--show", help="Print one scenario in full.")] = None) -> None:
    """List the built-in scenarios and the chains of services (or show one with its briefing)."""
    from rich.table import Table

    out = stdout_console()
    if show is not None:
        from oncallsim.scenarios import registered_scenarios

        known = registered_scenarios()
        if show not in known:
            raise InvalidInput(
                "--show", f"unknown scenario {show!r}{did_you_mean(show, known)}; known: {', '.join(known)}"
            )
        sc = known[show]
        out.print(f"[bold]{sc.title}[/] ({sc.id}, version {sc.version})")
        out.print(f"start {sc.start}, {sc.minutes} minutes, error budget at start {sc.budget_start:.0%}")
        out.print()
        out.print(sc.briefing.strip(), soft_wrap=True)
        if sc.params or sc.controls:
            out.print()
            out.print("[bold]Settings[/]")
            for name, value in {**sc.params, **sc.controls}.items():
                out.print(f"  {name} = {value:g}" if isinstance(value, float) else f"  {name} = {value}")
        if sc.objectives:
            out.print()
            out.print("[bold]Objectives[/]")
            for objective in sc.objectives:
                out.print(f"  • {objective.label()}")
        return
    from oncallsim.scenarios.files import listing

    table = Table(title="Scenarios")
    for col in ("id", "title", "start", "length", "summary"):
        table.add_column(col)
    for row in listing():
        table.add_row(row.id, row.title, row.start, _length(row.minutes), row.summary)
    print_trimmed(out, table)
    chains = Table(title="Chains of services (the request engine; docs/graphs.md)")
    for col in ("id", "title", "start", "length", "summary"):
        chains.add_column(col)
    for row in listing("graphs"):
        chains.add_row(row.id, row.title, row.start, _length(row.minutes), row.summary)
    print_trimmed(out, chains)


def _length(minutes: int) -> str:
    h, m = divmod(minutes, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


@app.command()
def params() -> None:
    """List every model parameter with its default, unit, range and source."""
    from rich.table import Table

    from oncallsim.model import CONTROL_SPECS, DEFAULT_PARAMS, param_info

    out = stdout_console()
    table = Table(title="Model parameters (--set NAME=VALUE)")
    for col in ("name", "default", "unit", "range", "source", "meaning"):
        table.add_column(col, no_wrap=col != "meaning")
    for p in param_info():
        table.add_row(p.name, f"{p.default:g}", p.unit, f"{p.min:g}–{p.max:g}", p.source, p.doc)
    print_trimmed(out, table)
    controls = Table(title="Controls (opening values with --set, changes with --actions)")
    for col in ("name", "default", "allowed", "effect"):
        controls.add_column(col, no_wrap=col == "name")
    for s in CONTROL_SPECS.values():
        controls.add_row(
            s.name, "" if s.default is None else str(s.default), s.describe_range(), s.help_text(DEFAULT_PARAMS)
        )
    print_trimmed(out, controls)
    for s in CONTROL_SPECS.values():  # every control whose choices are presets: what each sets
        if not s.presets:
            continue
        columns, rows = s.preset_table(DEFAULT_PARAMS)
        presets = Table(title=f"Presets of {s.name} (default {s.default})")
        for col in ("preset", *columns):
            presets.add_column(col, no_wrap=col == "preset")
        for row in rows:
            presets.add_row(*row)
        print_trimmed(out, presets)


# The table's columns: (header, how to show a record's value).
TABLE_COLUMNS: list[tuple[str, Callable[[MinuteRecord], str]]] = [
    ("clock", lambda r: r.clock),
    ("req/s", lambda r: f"{r.requests_per_s:.0f}"),
    ("serving", lambda r: str(r.serving)),
    ("booting", lambda r: str(r.booting)),
    ("hit", lambda r: f"{r.cache_hit:.0%}"),
    ("DB", lambda r: f"{r.db_utilization:.0%}"),
    ("p99", lambda r: f"{r.p99_ms:.0f} ms"),
    ("errors", lambda r: f"{r.error_rate:.2%}"),
    ("burn 1h", lambda r: f"{r.burn_1h:.1f}×"),
    ("budget", lambda r: f"{r.budget_left:.1%}"),
    ("$/h", lambda r: f"{r.cost_per_hour:.2f}"),
    ("events", lambda r: "; ".join(r.events)),
]


def write_records(records: list[MinuteRecord], fmt: Format, stream: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    from oncallsim.model import CSV_FIELDS

    if fmt is Format.jsonl:
        for r in records:
            stream.write(json.dumps(r.to_dict(), ensure_ascii=False) + "\n")
    elif fmt is Format.csv:
        writer = csv.DictWriter(stream, fieldnames=list(CSV_FIELDS), lineterminator="\n")
        writer.writeheader()
        for r in records:
            writer.writerow(r.to_row())
    else:
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        # a chain's cache and database are services of its graph: the one service's columns would read 0 %
        chain = bool(records) and isinstance(records[0].extras, dict) and "graph" in records[0].extras
        columns = [c for c in TABLE_COLUMNS if not (chain and c[0] in ("hit", "DB"))]
        for short, _ in columns:
            last = short == "events"
            table.add_column(short, justify="left" if short in ("clock", "events") else "right", no_wrap=not last)
        for r in records:
            table.add_row(*(fn(r) for _, fn in columns), style="red" if r.page_firing else None)
        tty = hasattr(stream, "isatty") and stream.isatty()
        print_trimmed(Console(file=stream, highlight=False, width=None if tty else 160), table)


@app.command()
@guarded
def run(
    scenario: Annotated[str, typer.Argument(help="A scenario id (see `oncallsim scenarios`) or a .toml file.")],
    seed: Annotated[int, typer.Option(help="The run's seed, 0 to 4294967295.")] = 0,
    minutes: Annotated[int | None, typer.Option(help="Run this many minutes instead of the scenario's length.")] = None,
    clock: Annotated[str | None, typer.Option(metavar="HH:MM", help="Start at this time of day.")] = None,
    no_noise: Annotated[bool, typer.Option("--no-noise", help="Expected traffic, no random noise.")] = False,
    set_: Annotated[
        list[str] | None, typer.Option("--set", metavar="NAME=VALUE", help="A parameter or opening control.")
    ] = None,
    actions: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="A JSON list of {minute, control, value}; a minute counts from the start (0) or is a time "
            'of day ("09:20").',
        ),
    ] = None,
    format: Annotated[Format, typer.Option(help="Output format.")] = Format.table,
    out_file: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Write the records here instead of stdout.")
    ] = None,
    save_run: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Save a run file that replays this run exactly.")
    ] = None,
    policy: Annotated[str | None, typer.Option(help="Let a policy play: hands-off, textbook, or module:attr.")] = None,
    debrief: Annotated[bool, typer.Option("--debrief", help="Print the debrief at the end.")] = False,
    engine: Annotated[
        str | None, typer.Option(help="minute (formulas) or request (every request); default: the scenario's.")
    ] = None,
) -> None:
    """Run a scenario headless and print its minute records, then a one-line summary."""
    from oncallsim.cli_debrief import make_debrief, print_debrief
    from oncallsim.policies import load_policy
    from oncallsim.simulation import Simulation

    overrides = parse_sets(set_ or [])
    check_choices(policy, engine)
    player = load_policy(policy) if policy is not None else None
    sim = Simulation(
        scenario_arg(scenario),
        seed=seed,
        overrides=overrides,
        noise=not no_noise,
        minutes=minutes,
        clock=clock,
        engine=engine,
    )
    action_list = read_actions(actions, sim.plan) if actions is not None else []
    prepare_engine(sim.engine, graph=sim.plan.graph is not None)
    records = sim.run(action_list, policy=player)
    if out_file is not None:
        buffer = io.StringIO()
        write_records(records, format, buffer)
        write_whole(out_file, buffer.getvalue())
    else:
        write_records(records, format, sys.stdout)
    if save_run is not None:
        write_whole(save_run, sim.run_file().model_dump_json(indent=2) + "\n")
    # the human-readable lines go to stdout unless machine-readable records are there
    human = trimmed_console(sys.stderr if out_file is None and format is not Format.table else sys.stdout)
    if debrief:
        print_debrief(make_debrief(sim), human)
    human.print(run_summary(sim), soft_wrap=True, markup=False)
    human.file.flush()


def run_summary(sim: Simulation) -> str:
    """One line at the end of a run: what it cost and whether it met its objectives."""
    from oncallsim.debrief import make_report

    report = make_report(sim, effects=False)
    page = "no page" if report.page_minute is None else f"paged at {sim.plan.clock(report.page_minute)}"
    met = sum(o.passed for o in report.objectives)
    objectives = f"objectives met {met}/{len(report.objectives)}" if report.objectives else "no objectives"
    return (
        f"{sim.scenario.id}, seed {sim.seed}, {len(sim.timeline)} min: budget spent {report.budget_spent:.1%}, "
        f"cost ${report.cost:.2f}, {page}, {objectives}, score {report.score}/100"
    )


# the debrief in the language asked for (--lang): cli_debrief.debrief, registered here like the other commands
app.command("debrief")(guarded(debrief))


@app.command("prepare")
@guarded
def prepare_command(
    engine: Annotated[
        list[str] | None,
        typer.Option(
            "--engine",
            help="What to prepare (repeatable): minute, request, or chain (the request engine's chains of "
            "services); default: both engines.",
        ),
    ] = None,
) -> None:
    """Compile the engines once on this machine (in a process of its own), with a progress line; a later
    start loads them from the cache in under a second. The chain of services is compiled by the first run of a
    graph (or the console's start, after both engines), or here with --engine chain."""
    from oncallsim.model.engine import ENGINES, check_part
    from oncallsim.readiness import ensure_ready, print_progress

    names = engine or list(ENGINES)
    for name in names:
        check_part(name)
    done = ensure_ready(names, print_progress(sys.stderr), retry_failed=True)  # a failure before is tried again
    failed = [engine_state for engine_state in done if engine_state.state == "failed"]
    if failed:
        raise InvalidInput("engine", "; ".join(engine_state.line() for engine_state in failed))
    err.print(f"ready: {', '.join(names)}", soft_wrap=True)


@app.command()
@guarded
def serve(
    host: Annotated[str, typer.Option(help="Address to bind; loopback by default.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port, 1 to 65535.")] = 8000,
    db: Annotated[Path | None, typer.Option(help="SQLite file for runs (default: the user's data directory).")] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="Also serve this Host name (e.g. the name a reverse proxy uses)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="ONCALLSIM_TOKEN",
            help="Access token asked of every request (generated when binding beyond loopback without one).",
        ),
    ] = None,
    pagerduty_url: Annotated[
        str | None,
        typer.Option(
            envvar="ONCALLSIM_PAGERDUTY_URL",
            help="Send the runs' and rooms' pages here as PagerDuty Events v2 (nothing is sent without it).",
        ),
    ] = None,
    pagerduty_routing_key: Annotated[
        str | None, typer.Option(envvar="ONCALLSIM_PAGERDUTY_ROUTING_KEY", help="The PagerDuty integration's key.")
    ] = None,
    limit: Annotated[
        list[str] | None,
        typer.Option(
            "--limit",
            help="NAME=VALUE: change one of the server's limits (runs, request_runs, runs_per_client, "
            "new_runs_per_minute, rooms, rooms_per_client, new_rooms_per_minute, resident) or idle times in "
            "seconds (idle_s, finished_s, room_idle_s); docs/web.md.",
        ),
    ] = None,
) -> None:
    """Start the web console: play scenarios live in the browser, debrief, replay, share."""
    import uvicorn

    from oncallsim.alerting.pagerduty import PagerConfig
    from oncallsim.store import default_db_path
    from oncallsim.web.app import create_app
    from oncallsim.web.limits import Limits, tune_collector
    from oncallsim.web.security import is_loopback

    if not 1 <= port <= 65535:
        raise InvalidInput("--port", f"must be from 1 to 65535, got {port}")
    limits = Limits.parse(limit)
    pagerduty = PagerConfig.checked(pagerduty_url, pagerduty_routing_key)
    token = checked_bind(host, port, token, "console")  # a busy port: one line naming --port, before any other
    path = db or default_db_path()
    shown = f"[{host}]" if ":" in host else host
    if not is_loopback(host):
        err.print(f"Open http://{shown}:{port}/?token={token}  (API: Authorization: Bearer {token})", soft_wrap=True)
    err.print(f"oncallsim console on http://{shown}:{port}/  (runs stored in {path})", soft_wrap=True)
    if pagerduty is not None:
        err.print(f"pages (PagerDuty Events v2) go to {pagerduty.url}", soft_wrap=True)
    app = create_app(path, host=host, allow_hosts=allow_host or [], token=token, pagerduty=pagerduty, limits=limits)
    tune_collector()  # the server's process only (not an app a test or a program makes): web/limits.py
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        ws_max_size=64 * 1024,
        # no permessage-deflate: compressing every minute for every viewer cost more CPU than stepping the runs
        ws_per_message_deflate=False,
        h11_max_incomplete_event_size=64 * 1024,
    )


from oncallsim.cli_sweep import sweep  # noqa: E402  (registers on the same app)

app.command()(guarded(sweep))

from oncallsim.cli_cliff import cliff  # noqa: E402
from oncallsim.cli_validate import validate  # noqa: E402
from oncallsim.cli_zoom import zoom  # noqa: E402

app.command()(guarded(cliff))
app.command()(guarded(validate))
app.command()(guarded(zoom))

from oncallsim.cli_alerts import alerts  # noqa: E402
from oncallsim.cli_export import export  # noqa: E402

app.command()(guarded(export))
app.command()(guarded(alerts))

from oncallsim.cli_arena import arena  # noqa: E402
from oncallsim.cli_gameday import gameday  # noqa: E402

app.command()(guarded(arena))

app.add_typer(gameday, name="gameday")

from oncallsim.cli_mcp import mcp  # noqa: E402

app.command()(guarded(mcp))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
