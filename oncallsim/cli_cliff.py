"""``oncallsim cliff``: the cliff map of a scenario on the request engine (docs/cliff.md), with a progress bar,
into Parquet, an offline HTML page and a PNG, and the map printed as a table of classes."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from oncallsim.cli_common import (
    err,
    parse_sets,
    prepare_engine,
    print_trimmed,
    scenario_arg,
    stdout_console,
    write_whole,
)
from oncallsim.model import InvalidInput

if TYPE_CHECKING:
    from oncallsim.batch.cliff_map import MapPlan, PointResult

__all__ = ["cliff"]

LETTERS = {"stable": "S", "mixed": "x", "metastable": "M", "unstable": "U"}


def cliff(
    scenario: Annotated[str, typer.Argument(help="A scenario id or a .toml file (played on the request engine).")],
    vary: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME=a:b:n | NAME=v1,v2,…", help="An axis: load (× the traffic), a parameter or a control."
        ),
    ] = None,
    trigger: Annotated[
        str | None,
        typer.Option(metavar="brownout:minutes=M,slowdown=X", help="The trigger (default: the scenario's own)."),
    ] = None,
    seeds: Annotated[int, typer.Option(help="Seeds per point.")] = 20,
    seed_start: Annotated[int, typer.Option(help="First seed.")] = 0,
    set_: Annotated[
        list[str] | None, typer.Option("--set", metavar="NAME=VALUE", help="A parameter or control, in every run.")
    ] = None,
    warmup: Annotated[int, typer.Option(help="Minutes before the trigger.")] = 5,
    horizon: Annotated[int, typer.Option(help="Minutes watched after the trigger.")] = 20,
    within: Annotated[int, typer.Option(help="Stable: recovered within this many minutes after the trigger.")] = 5,
    play_out: Annotated[
        bool, typer.Option("--play-out", help="Play every run to the horizon (no early call of a sustained loop).")
    ] = False,
    workers: Annotated[
        int | None, typer.Option(help="Local worker processes, from 1 to 256 (default: one per CPU).")
    ] = None,
    scheduler: Annotated[str | None, typer.Option(help="A Dask scheduler, tcp://HOST:PORT.")] = None,
    out_path: Annotated[
        Path, typer.Option("--out", help="Parquet, one row per run; the points go beside it (NAME-points.parquet).")
    ] = Path("cliff.parquet"),
    html: Annotated[Path | None, typer.Option(help="The map as an offline HTML page (default: beside --out).")] = None,
    png: Annotated[Path | None, typer.Option(help="The map as a PNG (default: beside --out).")] = None,
) -> None:
    """Map where a scenario turns metastable: every point of a grid of settings meets the same trigger; its runs
    say whether it recovers (stable), stays down (metastable), needs no trigger (unstable) or varies (mixed)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from oncallsim.batch import cliff_map, cliff_output
    from oncallsim.batch.executors import DaskExecutor, LocalExecutor, stop_on_signals
    from oncallsim.cliff.trigger import parse_trigger

    executor: LocalExecutor | DaskExecutor | None = None
    console = stdout_console()
    stops = stop_on_signals()
    stopped_by = stops.__enter__()
    try:
        for path, what in ((out_path, ".parquet"), (html, ".html"), (png, ".png")):
            if path is not None and path.suffix.lower() != what:
                raise InvalidInput(
                    f"--{'out' if path is out_path else what[1:]}", f"must end in {what}, got {str(path)!r}"
                )
            if path is not None and not path.parent.is_dir():
                raise InvalidInput(str(path), f"directory {str(path.parent)!r} does not exist")
        spec = cliff_map.CliffSpec(
            scenario_arg(scenario),
            cliff_map.parse_vary(vary or []),
            parse_trigger(trigger) if trigger is not None else None,
            seeds,
            seed_start,
            parse_sets(set_ or []),
            warmup,
            horizon,
            within,
            play_out=play_out,
        )
        plan = cliff_map.plan_map(spec)  # every input checked before a worker starts or a file is made
        drawn = len(spec.vary) <= 2
        html = html or (out_path.with_suffix(".html") if drawn else None)
        png = png or (out_path.with_suffix(".png") if drawn else None)
        if not drawn and (html or png):
            raise InvalidInput("--vary", "a map is drawn for one or two axes; with more, only the Parquet files")
        from oncallsim.model.engine import get_engine

        prepare_engine(get_engine("request"))  # compiled once here: the workers load it
        executor = DaskExecutor(scheduler) if scheduler else LocalExecutor(workers)
        runs = len(plan.points) * spec.seeds
        console.print(
            f"Mapping {plan.scenario.id.removesuffix('-cliff')}: {len(plan.points)} points × {spec.seeds} seeds, "
            f"trigger {plan.trigger.text()} at minute {spec.warmup_min}, watched {spec.horizon_min} min after it, "
            f"on {executor.description}",
            soft_wrap=True,
        )
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} runs/s"),
            TimeRemainingColumn(),
        )
        started = time.perf_counter()
        with Progress(*columns, console=console, transient=False) as bar:
            job = bar.add_task("runs", total=runs, rate="—")

            def progress(done: int, total: int) -> None:
                elapsed = max(time.perf_counter() - started, 1e-9)
                bar.update(job, completed=done, total=total, rate=f"{done / elapsed:,.1f}")

            results, columns_out = cliff_map.run_map(plan, executor, progress)
        elapsed = time.perf_counter() - started
        if isinstance(executor, DaskExecutor):
            executor.close()
            executor = None
        cliff_output.write_runs(out_path, columns_out, plan.config)
        points = cliff_output.write_points(out_path, results, plan.config)
        title = f"oncallsim cliff {plan.scenario.id.removesuffix('-cliff')}: trigger {plan.trigger.text()}"
        written = [out_path, points]
        if html is not None:
            write_whole(html, cliff_output.map_html(plan, results, title))
            written.append(html)
        if png is not None:
            cliff_output.map_png(plan, results, png, title)
            written.append(png)
        _print_map(console, plan, results)
        agree = [r for r in results if r.chain.cls is not None]
        same = sum(r.chain.cls == r.cls for r in agree)
        console.print(
            f"{runs} runs in {elapsed:.0f} s; the chain's class is the runs' at {same} of {len(agree)} points "
            f"it models. Wrote {', '.join(str(p) for p in written)}",
            soft_wrap=True,
        )
    except KeyboardInterrupt:
        err.print("interrupted: nothing written (a map is written whole)", soft_wrap=True)
        raise typer.Exit(128 + (stopped_by[0] if stopped_by else signal.SIGINT)) from None
    finally:
        stops.__exit__(None, None, None)
        if isinstance(executor, DaskExecutor):
            executor.close()


def _print_map(console: Console, plan: MapPlan, results: list[PointResult]) -> None:
    """The map as letters: S stable, M metastable, U unstable, x mixed; the runs' first, the chain's second."""
    names = list(plan.spec.vary)
    x = names[0]
    rows = names[1] if len(names) > 1 else None
    table = Table(title="runs / chain: S stable, M metastable, U unstable, x mixed, · not modelled")
    table.add_column(f"{rows or ''} \\ {x}")
    for value in plan.spec.vary[x]:
        table.add_column(str(value), justify="center")
    for row_value in plan.spec.vary[rows] if rows else [None]:
        cells = []
        for value in plan.spec.vary[x]:
            found = [r for r in results if r.values[x] == value and (rows is None or r.values[rows] == row_value)]
            text = "/".join(f"{LETTERS[r.cls]}{LETTERS.get(r.chain.cls or '', '·')}" for r in found)
            cells.append(text)
        table.add_row(str(row_value) if rows else "", *cells)
    print_trimmed(console, table)
