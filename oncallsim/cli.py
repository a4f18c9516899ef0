"""The command line: a thin translation between a terminal and the core. Bad input → one line, exit 2."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TextIO, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from oncallsim.cli_debrief import make_debrief, print_debrief
from oncallsim.debrief.html import render_html
from oncallsim.model import CONTROL_SPECS, CSV_FIELDS, InvalidInput, MinuteRecord, param_info
from oncallsim.policies import load_policy
from oncallsim.scenarios import builtin_scenarios
from oncallsim.simulation import Simulation, load_actions

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="oncallsim: an on-call simulator whose physics are textbook queueing models.",
)
err = Console(stderr=True, highlight=False)


def stdout_console() -> Console:
    """A console for stdout, wide when piped so that tables stay one line a row."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


T = TypeVar("T")


class Format(StrEnum):
    table = "table"
    csv = "csv"
    jsonl = "jsonl"


def fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    return typer.Exit(code)


@contextmanager
def clear_errors() -> Iterator[None]:
    """Bad input ends in one line naming the field and the allowed values; never a traceback."""
    try:
        yield
    except InvalidInput as exc:
        raise fail(str(exc)) from None


def guarded(fn: Callable[..., T]) -> Callable[..., T]:
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with clear_errors():
            return fn(*args, **kwargs)

    return wrapper


def parse_sets(pairs: list[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InvalidInput("--set", f"expects NAME=VALUE, got {pair!r}")
        result[name.strip()] = value.strip()
    return result


@app.command()
@guarded
def scenarios(show: Annotated[str | None, typer.Option("--show", help="Print one scenario in full.")] = None) -> None:
    """List the built-in scenarios (or show one with its briefing)."""
    known = builtin_scenarios()
    out = stdout_console()
    if show is not None:
        if show not in known:
            raise InvalidInput("--show", f"unknown scenario {show!r}; known: {', '.join(known)}")
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
    table = Table(title="Scenarios")
    for col in ("id", "title", "start", "length", "summary"):
        table.add_column(col)
    for sc in known.values():
        table.add_row(sc.id, sc.title, sc.start, _length(sc.minutes), sc.summary)
    out.print(table)


def _length(minutes: int) -> str:
    h, m = divmod(minutes, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


@app.command()
def params() -> None:
    """List every model parameter with its default, unit, range and source."""
    out = stdout_console()
    table = Table(title="Model parameters (--set NAME=VALUE)")
    for col in ("name", "default", "unit", "range", "source", "meaning"):
        table.add_column(col, no_wrap=col != "meaning")
    for p in param_info():
        table.add_row(p.name, f"{p.default:g}", p.unit, f"{p.min:g}–{p.max:g}", p.source, p.doc)
    out.print(table)
    controls = Table(title="Controls (opening values with --set, changes with --actions)")
    for col in ("name", "default", "allowed", "effect"):
        controls.add_column(col, no_wrap=col == "name")
    for s in CONTROL_SPECS.values():
        controls.add_row(s.name, "" if s.default is None else str(s.default), s.describe_range(), s.help)
    out.print(controls)


TABLE_COLUMNS: list[tuple[str, str, Callable[[MinuteRecord], str]]] = [
    ("clock", "clock", lambda r: r.clock),
    ("req/s", "requests", lambda r: f"{r.requests_per_s:.0f}"),
    ("serving", "serving", lambda r: str(r.serving)),
    ("booting", "booting", lambda r: str(r.booting)),
    ("hit", "cache hit", lambda r: f"{r.cache_hit:.0%}"),
    ("DB", "DB utilization", lambda r: f"{r.db_utilization:.0%}"),
    ("p99", "p99 latency", lambda r: f"{r.p99_ms:.0f} ms"),
    ("errors", "error rate", lambda r: f"{r.error_rate:.2%}"),
    ("burn 1h", "burn rate 1 h", lambda r: f"{r.burn_1h:.1f}×"),
    ("budget", "error budget left", lambda r: f"{r.budget_left:.1%}"),
    ("$/h", "fleet cost", lambda r: f"{r.cost_per_hour:.2f}"),
    ("events", "events", lambda r: "; ".join(r.events)),
]


def write_records(records: list[MinuteRecord], fmt: Format, stream: TextIO) -> None:
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
        for short, _, _ in TABLE_COLUMNS:
            last = short == "events"
            table.add_column(short, justify="left" if short in ("clock", "events") else "right", no_wrap=not last)
        for r in records:
            table.add_row(*(fn(r) for _, _, fn in TABLE_COLUMNS), style="red" if r.page_firing else None)
        tty = hasattr(stream, "isatty") and stream.isatty()
        Console(file=stream, highlight=False, width=None if tty else 160).print(table)


@app.command()
@guarded
def run(
    scenario: Annotated[str, typer.Argument(help="A scenario id (see `oncallsim scenarios`) or a .toml file.")],
    seed: Annotated[int, typer.Option(help="The run's seed, 0 to 4294967295.")] = 0,
    minutes: Annotated[int | None, typer.Option(help="Run this many minutes instead of the scenario's length.")] = None,
    clock: Annotated[str | None, typer.Option(help="Start at this time of day, HH:MM.")] = None,
    no_noise: Annotated[bool, typer.Option("--no-noise", help="Expected traffic, no random noise.")] = False,
    set_: Annotated[list[str] | None, typer.Option("--set", help="NAME=VALUE: a parameter or opening control.")] = None,
    actions: Annotated[Path | None, typer.Option(help="A JSON list of {minute, control, value}.")] = None,
    format: Annotated[Format, typer.Option(help="Output format.")] = Format.table,
    out_file: Annotated[Path | None, typer.Option("--out", help="Write the records here instead of stdout.")] = None,
    save_run: Annotated[Path | None, typer.Option(help="Save a run file that replays this run exactly.")] = None,
    policy: Annotated[str | None, typer.Option(help="Let a policy play: hands-off, textbook, or module:attr.")] = None,
    debrief: Annotated[bool, typer.Option("--debrief", help="Print the debrief at the end.")] = False,
) -> None:
    """Run a scenario headless and print its minute records."""
    overrides = parse_sets(set_ or [])
    action_list = load_actions(actions) if actions is not None else []
    player = load_policy(policy) if policy is not None else None
    sim = Simulation(scenario, seed=seed, overrides=overrides, noise=not no_noise, minutes=minutes, clock=clock)
    records = sim.run(action_list, policy=player)
    if out_file is not None:
        buffer = io.StringIO()
        write_records(records, format, buffer)
        _write_whole(out_file, buffer.getvalue())
    else:
        write_records(records, format, sys.stdout)
    if save_run is not None:
        _write_whole(save_run, sim.run_file().model_dump_json(indent=2) + "\n")
    if debrief:
        print_debrief(make_debrief(sim), err if out_file is None and format is not Format.table else None)


@app.command("debrief")
@guarded
def debrief_command(
    run_file: Annotated[Path, typer.Argument(help="A run file saved with --save-run (or by the console).")],
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML report here.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the JSON summary here.")] = None,
) -> None:
    """Replay a run file and debrief it: score card, budget by cause, decisions, counterfactuals."""
    sim = Simulation.replay(run_file)
    report, others = make_debrief(sim, with_runs=True)
    print_debrief(report)
    if json_out is not None:
        _write_whole(json_out, report.model_dump_json(indent=2) + "\n")
    if html is not None:
        page = render_html(
            report, sim.timeline, sim.plan, sim.params, sim.actions, {name: o.timeline for name, o in others.items()}
        )
        _write_whole(html, page)


def _write_whole(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a failure never leaves half a file."""
    tmp = path.with_name(path.name + ".part")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidInput(str(path), f"cannot write: {exc.strerror}") from None


@app.command()
@guarded
def sweep(
    scenario: Annotated[str, typer.Argument(help="A scenario id or a .toml file.")],
    seeds: Annotated[int, typer.Option(help="Seeds per grid point.")] = 100,
    seed_start: Annotated[int, typer.Option(help="First seed.")] = 0,
    policy: Annotated[str | None, typer.Option(help="hands-off (default), textbook, or module:attr.")] = None,
    grid: Annotated[list[str] | None, typer.Option(help="NAME=v1,v2,…: a parameter or control to vary.")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="NAME=VALUE for every run.")] = None,
    no_noise: Annotated[bool, typer.Option("--no-noise", help="Expected traffic, no random noise.")] = False,
    minutes: Annotated[int | None, typer.Option(help="Run this many minutes instead of the scenario's length.")] = None,
    workers: Annotated[int | None, typer.Option(help="Local worker processes (default: the CPU count).")] = None,
    scheduler: Annotated[str | None, typer.Option(help="A Dask scheduler, tcp://HOST:PORT.")] = None,
    out_path: Annotated[Path, typer.Option("--out", help="Parquet file, one row per run.")] = Path("results.parquet"),
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted sweep in --out.")] = False,
    html: Annotated[Path | None, typer.Option(help="Also write an offline HTML plot of the distributions.")] = None,
) -> None:
    """Run a scenario over many seeds and grid points; one Parquet row per run, a summary at the end."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from oncallsim.batch import sweep as sweeping

    spec = sweeping.SweepSpec(
        scenario,
        seeds,
        seed_start,
        policy,
        sweeping.parse_grid(grid or []),
        parse_sets(set_ or []),
        not no_noise,
        minutes,
    )
    sweeping.plan_tasks(spec)  # every input checked before a worker starts or a file is made
    if out_path.exists() and not resume:
        raise InvalidInput(str(out_path), "exists; pass --resume to continue it, or choose another --out")
    executor = sweeping.DaskExecutor(scheduler) if scheduler else sweeping.LocalExecutor(workers)
    console = stdout_console()
    points = math.prod(len(v) for v in spec.grid.values())
    console.print(
        f"Sweeping {scenario}: {seeds} seeds × {points} grid point{'s' * (points != 1)} on {executor.description}"
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]} runs/s"),
        TimeRemainingColumn(),
    )
    interrupted = False
    try:
        with Progress(*columns, console=console, transient=False) as bar:
            job = bar.add_task("runs", total=None, rate="—")
            started = time.perf_counter()

            def progress(done: int, total: int) -> None:
                elapsed = max(time.perf_counter() - started, 1e-9)
                bar.update(job, completed=done, total=total, rate=f"{done / elapsed:,.0f}")

            rows = sweeping.sweep(spec, executor, out_path, resume=resume, progress=progress)
    except KeyboardInterrupt:
        interrupted = True
        rows = 0
    finally:
        if isinstance(executor, sweeping.DaskExecutor):
            executor.close()
    if interrupted:
        err.print(f"interrupted: the rows already written are in {out_path}; --resume continues")
        raise typer.Exit(130)
    console.print(f"{rows} rows in {out_path}")
    summary = sweeping.aggregate(out_path, list(spec.grid))
    table = Table(title="Summary per grid point (p10 / p50 / p90)")
    for name in spec.grid:
        table.add_column(name)
    for col in ("runs", "budget spent", "cost $", "worst p99 ms", "all objectives met"):
        table.add_column(col, justify="right")
    for s in summary:
        table.add_row(
            *(str(s[n]) for n in spec.grid),
            str(s["runs"]),
            " / ".join(f"{s[f'budget_spent_p{q}']:.2%}" for q in (10, 50, 90)),
            " / ".join(f"{s[f'cost_p{q}']:.2f}" for q in (10, 50, 90)),
            " / ".join(f"{s[f'worst_p99_ms_p{q}']:.0f}" for q in (10, 50, 90)),
            f"{s['passed_share']:.0%}",
        )
    console.print(table)
    if html is not None:
        _write_whole(html, sweeping.distribution_html(out_path, list(spec.grid), f"oncallsim sweep: {scenario}"))


@app.command()
@guarded
def serve(
    host: Annotated[str, typer.Option(help="Address to bind; loopback by default.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port, 1 to 65535.")] = 8000,
    db: Annotated[Path | None, typer.Option(help="SQLite file for runs (default: the user's data directory).")] = None,
) -> None:
    """Start the web console: play scenarios live in the browser, debrief, replay, share."""
    import uvicorn

    from oncallsim.store import default_db_path
    from oncallsim.web.app import create_app

    if not 1 <= port <= 65535:
        raise InvalidInput("--port", f"must be from 1 to 65535, got {port}")
    path = db or default_db_path()
    err.print(f"oncallsim console on http://{host}:{port}/  (runs stored in {path})")
    uvicorn.run(create_app(path), host=host, port=port, log_level="warning")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
