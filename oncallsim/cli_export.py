"""``oncallsim export RUNFILE --openmetrics FILE``: a saved run's minutes as OpenMetrics text with timestamps,
ready for ``promtool tsdb create-blocks-from openmetrics`` (docs/metrics.md)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from oncallsim.cli_common import err, load_run_file, notice_after, prepare_engine, write_whole
from oncallsim.metrics.service import DEFAULT_SERVICE, check_service

__all__ = ["export"]


def export(
    run_file: Annotated[Path, typer.Argument(help="A run file saved with --save-run (or by the console).")],
    openmetrics: Annotated[Path, typer.Option(metavar="FILE", help="Write the run's metrics here (OpenMetrics).")],
    start: Annotated[
        str | None,
        typer.Option(
            metavar="DATETIME",
            help="When minute 0 begins, ISO 8601 with its zone (2026-03-02T09:00:00Z); default: 1 January 2026 "
            "at the run's starting time, UTC.",
        ),
    ] = None,
    service: Annotated[
        str, typer.Option(help="The service label of every series (letters, digits, _ . : -).")
    ] = DEFAULT_SERVICE,
) -> None:
    """Write a run's minutes as Prometheus metrics (OpenMetrics text, a sample a minute with its timestamp)."""
    from oncallsim.metrics.exposition import default_start, openmetrics_export, parse_start
    from oncallsim.store.runfiles import vet_run_file

    check_service(service)
    begins = parse_start(start) if start is not None else None
    run = load_run_file(run_file)
    sim = vet_run_file(run, str(run_file), until=0)  # checked before anything is replayed
    prepare_engine(sim.engine, graph=sim.plan.graph is not None)
    with notice_after(1.0, f"replaying the run on the {sim.engine.name} engine…"):
        sim = vet_run_file(run, str(run_file))
    begins = begins or default_start(sim.plan.clock_start_min)
    write_whole(openmetrics, openmetrics_export(sim.timeline, begins, service))
    first, last = begins.isoformat(), (begins + timedelta(minutes=sim.minute)).isoformat()
    err.print(f"wrote {openmetrics}: {sim.minute} minutes from {first} to {last}", soft_wrap=True)
