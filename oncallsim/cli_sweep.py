"""``oncallsim sweep``: many seeds and grid points, with a progress bar, into Parquet, and a summary table."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Annotated

import typer

from oncallsim.cli_common import (
    check_choices,
    check_override_names,
    err,
    parse_sets,
    prepare_engine,
    print_trimmed,
    scenario_arg,
    stdout_console,
    write_whole,
)

__all__ = ["sweep"]


def sweep(
    scenario: Annotated[str, typer.Argument(help="A scenario id or a .toml file.")],
    seeds: Annotated[int, typer.Option(help="Seeds per grid point.")] = 100,
    seed_start: Annotated[int, typer.Option(help="First seed.")] = 0,
    policy: Annotated[str | None, typer.Option(help="hands-off (default), textbook, or module:attr.")] = None,
    grid: Annotated[
        list[str] | None, typer.Option(metavar="NAME=V1,V2,…", help="A parameter or control to vary.")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="NAME=VALUE", help="A parameter or opening control, in every run."),
    ] = None,
    no_noise: Annotated[bool, typer.Option("--no-noise", help="Expected traffic, no random noise.")] = False,
    minutes: Annotated[int | None, typer.Option(help="Run this many minutes instead of the scenario's length.")] = None,
    workers: Annotated[
        int | None, typer.Option(help="Local worker processes, from 1 to 256 (default: one per CPU).")
    ] = None,
    scheduler: Annotated[str | None, typer.Option(help="A Dask scheduler, tcp://HOST:PORT.")] = None,
    out_path: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Parquet file, one row per run (default: results.parquet in the current folder, said at start).",
        ),
    ] = Path("results.parquet"),
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue an interrupted sweep in --out (same settings; --seeds may grow)."),
    ] = False,
    html: Annotated[Path | None, typer.Option(help="Also write an offline HTML plot of the distributions.")] = None,
    engine: Annotated[
        str | None, typer.Option(help="minute (formulas) or request (every request); default: the scenario's.")
    ] = None,
) -> None:
    """Run a scenario over many seeds and grid points; one Parquet row per run, a summary at the end."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from oncallsim.batch import sweep as sweeping
    from oncallsim.model.engine import get_engine

    executor: sweeping.LocalExecutor | sweeping.DaskExecutor | None = None
    console = stdout_console()
    stops = sweeping.stop_on_signals()  # SIGTERM stops the sweep as Ctrl-C does
    stopped_by = stops.__enter__()
    try:
        scenario_arg(scenario)  # an unknown id: refused with the nearest one
        check_choices(policy, engine)
        check_override_names(item.partition("=")[0].strip() for item in grid or [] if "=" in item)
        spec = sweeping.SweepSpec(
            scenario,
            seeds,
            seed_start,
            policy,
            sweeping.parse_grid(grid or []),
            parse_sets(set_ or []),
            not no_noise,
            minutes,
            engine=engine,
        )
        plan = sweeping.plan_sweep(spec)  # every input checked before a worker starts or a file is made
        graph = plan.scenario.graph is not None
        prepare_engine(get_engine(plan.spec.engine or engine or "minute"), graph=graph)  # workers load it
        state = sweeping.check_output(plan, out_path, resume)
        executor = sweeping.DaskExecutor(scheduler) if scheduler else sweeping.LocalExecutor(workers)
        points = len(plan.points)
        kept = f" ({state.rows} rows kept from before)" if state.resuming else ""
        console.print(
            f"Sweeping {scenario}: {seeds} seeds × {points} grid point{'s' * (points != 1)} "
            f"on {executor.description}{kept}, into {out_path.resolve()}",
            soft_wrap=True,
        )
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} runs/s"),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=console, transient=False) as bar:
            job = bar.add_task("runs", total=None, rate="—")
            started = time.perf_counter()

            def progress(done: int, total: int) -> None:
                elapsed = max(time.perf_counter() - started, 1e-9)
                bar.update(job, completed=done, total=total, rate=f"{done / elapsed:,.0f}")

            rows = sweeping.sweep(spec, executor, out_path, resume=resume, progress=progress)
        console.print(f"{rows} rows in {out_path.resolve()}", soft_wrap=True)
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
        print_trimmed(console, table)
        if html is not None:
            write_whole(html, sweeping.distribution_html(out_path, list(spec.grid), f"oncallsim sweep: {scenario}"))
    except KeyboardInterrupt:
        code = 128 + (stopped_by[0] if stopped_by else signal.SIGINT)
        kept_rows = sweeping.rows_in(out_path)
        place = out_path if out_path.is_file() else sweeping.parts_dir(out_path)
        where = f"the {kept_rows} rows already written are in {place}" if kept_rows else "no rows were written"
        err.print(f"interrupted: {where}; --resume continues", soft_wrap=True)
        raise typer.Exit(code) from None
    finally:
        stops.__exit__(None, None, None)
        if isinstance(executor, sweeping.DaskExecutor):
            executor.close()
