"""``oncallsim validate``: the request engine against the formulas and the minute model, as a report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from oncallsim.cli_common import err, prepare_engine, stdout_console
from oncallsim.model.errors import InvalidInput

__all__ = ["validate"]


def validate(
    quick: Annotated[bool, typer.Option("--quick", help="A small grid, short runs, one seed (about 30 s).")] = False,
    out: Annotated[
        Path, typer.Option("--out", help="The Markdown report; its plots go to images/validation/ beside it.")
    ] = Path("docs/validation.md"),
) -> None:
    """Compare the engines over a grid of operating points; write a report with tables and plots."""
    if out.suffix.lower() != ".md":
        raise InvalidInput("--out", f"must be a Markdown file ending in .md, got {str(out)!r}")
    if not out.parent.is_dir():
        raise InvalidInput("--out", f"directory {str(out.parent)!r} does not exist")
    if out.is_dir():
        raise InvalidInput("--out", f"{str(out)!r} is a directory, expected a .md file")
    from oncallsim.extras import require

    for needed in ("mpmath", "matplotlib"):  # the oracles and the plots: said before the engines run for a while
        require(needed, "reports")
    from oncallsim.model.engine import get_engine
    from oncallsim.verify import run_all, write_report

    prepare_engine(get_engine("request"), graph=True)  # compiled once on this machine (its chains checked too)
    results = run_all(quick, progress=lambda step: err.print(f"validate: {step}…"))
    written = write_report(results, out)
    console = stdout_console()
    for path in written:
        console.print(f"wrote {path}")
