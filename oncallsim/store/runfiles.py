"""Run files that arrive from outside (an upload, a file named on the command line): parsed in memory by
``RunFile`` (strict, finite, size-limited), replayed by ``Simulation.replay`` (which refuses ``played`` past the
end and actions after ``played``), and one more rule for the web and the CLI: a run file never names a path."""

from __future__ import annotations

from oncallsim.model import InvalidInput
from oncallsim.scenarios.registry import registered_scenario
from oncallsim.simulation import RunFile, Simulation

__all__ = ["vet_run_file"]


def vet_run_file(run: RunFile, source: str = "run file", until: int | None = None) -> Simulation:
    """Replay a parsed run file whose scenario is a registered id or sent as content (``scenario_spec``),
    to where it was played (or to minute ``until``)."""
    if run.scenario_spec is None:
        registered_scenario(run.scenario, f"{source}: scenario")
    try:
        return Simulation.replay(run, until=until)
    except InvalidInput as exc:
        raise InvalidInput(f"{source}: {exc.field}", exc.reason) from None
