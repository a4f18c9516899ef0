"""``oncallsim arena``: contestants play the same scenarios on the same held-out seeds; one table ranks them."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer

from oncallsim.cli_common import err, prepare_engine, print_trimmed, stdout_console, write_whole

__all__ = ["DEFAULT_CONTESTANTS", "REQUEST_CONTESTANTS", "arena"]

DEFAULT_CONTESTANTS = ("hands-off=hands-off", "playbook=textbook", "person=person")
# on the request engine the overload controllers play too, each hands-off from its opening
REQUEST_CONTESTANTS = (*DEFAULT_CONTESTANTS, "bbr=bbr", "gradient2=gradient2", "pid-shedder=pid-shedder")


def arena(
    contestant: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME=SPEC",
            help="A contestant (repeatable): hands-off, textbook, person[:SECONDS[@SPEED]], policy:NAME|module:attr, "
            "controls:NAME=VALUE,…, agent:COMMAND, mcp:COMMAND (default: hands-off, playbook and person).",
        ),
    ] = None,
    scenario: Annotated[
        list[str] | None,
        typer.Option(
            metavar="ID",
            help="A scenario id or .toml file (repeatable; default: bad-deploy, surge, cache-flush; "
            "on --engine request: flash-crowd, retry-storm).",
        ),
    ] = None,
    seeds: Annotated[
        str, typer.Option(help="Held-out seeds: LOW-HIGH or a list (not 0–199 nor 1000–1099).")
    ] = "3000-3004",
    engine: Annotated[
        str | None, typer.Option(help="minute or request for every scenario (default: each scenario's).")
    ] = None,
    difficulty: Annotated[
        str, typer.Option(help="guided, normal or hard: what tells a person (guided: the incident's stop).")
    ] = "normal",
    time_limit: Annotated[float, typer.Option(help="An agent's seconds per decision, at most 3600.")] = 30.0,
    no_counterfactuals: Annotated[
        bool, typer.Option("--no-counterfactuals", help="Skip the debrief's replays (no gap column; faster).")
    ] = False,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write every run and the table as JSON.")] = None,
    html: Annotated[Path | None, typer.Option(help="Write an offline HTML report.")] = None,
    workers: Annotated[
        int | None, typer.Option(help="Local worker processes, from 1 to 256 (default: one per CPU).")
    ] = None,
    scheduler: Annotated[str | None, typer.Option(help="A Dask scheduler, tcp://HOST:PORT.")] = None,
) -> None:
    """Play contestants on the same scenarios and held-out seeds; print one table, best mean score first."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from oncallsim.arena import parse_contestant, plan_arena, run_arena
    from oncallsim.arena.output import (
        LEGEND,
        TABLE_COLUMNS,
        TIME_COLUMNS,
        arena_html,
        arena_json,
        table_cells,
        time_cells,
    )
    from oncallsim.arena.play import aggregate
    from oncallsim.batch.executors import DaskExecutor, LocalExecutor, stop_on_signals
    from oncallsim.model.engine import get_engine
    from oncallsim.scenarios import load_scenario

    executor: LocalExecutor | DaskExecutor | None = None
    console = stdout_console()
    stops = stop_on_signals()
    stopped_by = stops.__enter__()
    try:
        lineup = REQUEST_CONTESTANTS if engine == "request" else DEFAULT_CONTESTANTS
        contestants = [parse_contestant(c) for c in contestant or lineup]
        plan = plan_arena(contestants, scenario, seeds, engine, difficulty, time_limit, not no_counterfactuals)
        engines = {engine} if engine else {load_scenario(s).engine or "minute" for s in plan.scenarios}
        for name in sorted(engines):
            prepare_engine(get_engine(name))  # compiled once here: workers load it
        executor = DaskExecutor(scheduler) if scheduler else LocalExecutor(workers)
        err.print(
            f"Arena: {len(plan.contestants)} contestants × {len(plan.scenarios)} scenarios × {len(plan.seeds)} seeds "
            f"= {plan.runs} runs on {executor.description}",
            soft_wrap=True,
        )
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=err, transient=True) as bar:
            job = bar.add_task("runs", total=plan.runs)
            rows = run_arena(plan, executor, lambda done, total: bar.update(job, completed=done))
        summary = aggregate(rows)
        table = Table(title=f"Arena: {', '.join(plan.scenarios)} on seeds {seeds}", caption=LEGEND)
        for i, head in enumerate(TABLE_COLUMNS):
            table.add_column(head, justify="left" if i == 0 else "right")
        for line in summary:
            table.add_row(*table_cells(line))
        print_trimmed(console, table)
        times = Table(title="Decisions (wall-clock; varies run to run)")
        for i, head in enumerate(TIME_COLUMNS):
            times.add_column(head, justify="left" if i < 2 else "right")
        for line in summary:
            times.add_row(*time_cells(line))
        print_trimmed(console, times)
        if json_path is not None:
            write_whole(json_path, arena_json(plan, rows))
        if html is not None:
            write_whole(html, arena_html(plan, rows))
    except KeyboardInterrupt:
        err.print("interrupted: no table", soft_wrap=True)
        raise typer.Exit(128 + (stopped_by[0] if stopped_by else signal.SIGINT)) from None
    finally:
        stops.__exit__(None, None, None)
        if isinstance(executor, DaskExecutor):
            executor.close()
