"""``oncallsim zoom``: one minute of a saved run, re-simulated request by request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from oncallsim.cli_common import err, load_run_file, notice_after, write_whole
from oncallsim.model.errors import InvalidInput

__all__ = ["zoom"]


def zoom(
    run_file: Annotated[Path, typer.Argument(help="A run file saved with --save-run (or by the console).")],
    minute: Annotated[int, typer.Option(help="The minute to zoom into, counted from 0.")],
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML page here.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the zoomed minute as JSON here.")] = None,
    lang: Annotated[str, typer.Option("--lang", help="The HTML page's language: en, da, zu, hy or ar.")] = "en",
) -> None:
    """Re-simulate one minute of a run request by request: latency histogram, seconds, instances, samples (a chain
    of services: replayed, a sample of its requests followed across hops as span trees)."""
    from oncallsim.cli_debrief import check_language
    from oncallsim.store.runfiles import vet_run_file
    from oncallsim.zoom import zoom_run
    from oncallsim.zoom.html import render_zoom_html

    language = check_language(lang)  # refused before anything is replayed
    run = load_run_file(run_file)
    played = vet_run_file(run, str(run_file), until=0)  # checked before anything is replayed
    length = played.length if run.played is None else run.played
    if not 0 <= minute < length:
        raise InvalidInput("--minute", f"must be a minute of the run, 0 to {length - 1}; got {minute}")
    if played.plan.graph is not None:
        _zoom_chain(run, minute, html, json_out, language)
        return
    with notice_after(1.0, f"replaying {minute + 1} minutes on the {played.engine.name} engine…"):
        sim = vet_run_file(run, str(run_file), until=minute + 1)  # the minute's record, no further
    z = zoom_run(sim, minute)
    m = z.measured
    err.print(
        f"minute {z.minute} ({z.clock}): {m['requests_per_s'] * 60:,.0f} requests, p50 {m['p50_ms']:,.1f} ms, "
        f"p99 {m['p99_ms']:,.1f} ms, p99.9 {m['p999_ms']:,.1f} ms, errors {m['error_rate']:.3%}, "
        f"{z.timeouts:,} timed out, {len(z.samples)} requests sampled",
        soft_wrap=True,
    )
    if json_out is not None:
        write_whole(json_out, json.dumps(z.to_dict(), indent=1) + "\n")
    if html is not None:
        write_whole(html, render_zoom_html(z, language=language))


def _zoom_chain(run: Any, minute: int, html: Path | None, json_out: Path | None, language: str) -> None:
    """A chain of services: the run replayed to the minute, a sample of its requests followed across hops."""
    from oncallsim.zoom import zoom_chain
    from oncallsim.zoom.chain_html import render_chain_zoom_html

    with notice_after(1.0, f"replaying {minute + 1} minutes of the chain, its requests traced in the last…"):
        z = zoom_chain(run, minute)
    outcomes: dict[str, int] = {}
    for r in z.requests:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    said = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items(), key=lambda item: -item[1]))
    per = ", ".join(f"{name} {z.counts[name]['spans']}" for name in z.services)
    err.print(
        f"minute {z.minute} ({z.clock}): {len(z.requests)} requests followed (one in {z.sample_every}): {said}; "
        f"their attempts per service: {per}",
        soft_wrap=True,
    )
    if json_out is not None:
        write_whole(json_out, json.dumps(z.to_dict(), indent=1) + "\n")
    if html is not None:
        write_whole(html, render_chain_zoom_html(z, language=language))
