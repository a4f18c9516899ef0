"""Run files that arrive from outside (an upload, a file named on the command line): size-limited, parsed in
memory, strictly typed, and vetted before anything replays them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError

from oncallsim.model import InvalidInput
from oncallsim.scenarios.registry import registered_scenario
from oncallsim.simulation import RunFile, Simulation, load_actions
from oncallsim.validation import invalid_input

__all__ = ["MAX_RUN_FILE_ACTIONS", "MAX_RUN_FILE_BYTES", "parse_run_file_bytes", "vet_run_file"]


# A run file sent to the web or named on the command line: at most this many actions (a day of a busy operator
# is a few hundred; 20,000 is a generous cap that keeps a replay well under a second).
MAX_RUN_FILE_ACTIONS = 20_000
MAX_RUN_FILE_BYTES = 4 * 1024 * 1024


def vet_run_file(run: RunFile, source: str = "run file") -> Simulation:
    """Check a parsed run file before anything replays it, then replay it; returns the ``Simulation``.

    Refused: a scenario that is neither a registered id nor sent as content (``scenario_spec``) — a run file
    never names a path; ``played`` past the run's end; an action after ``played`` (it would be dropped
    silently); more than MAX_RUN_FILE_ACTIONS actions."""
    if run.scenario_spec is None:
        registered_scenario(run.scenario, f"{source}: scenario")
    if len(run.actions) > MAX_RUN_FILE_ACTIONS:
        raise InvalidInput(f"{source}: actions", f"at most {MAX_RUN_FILE_ACTIONS} actions, got {len(run.actions)}")
    sim = Simulation.from_run_file(run)
    played = sim.length if run.played is None else run.played
    if played > sim.length:
        raise InvalidInput(f"{source}: played", f"must be from 0 to the run's length {sim.length}, got {played}")
    actions = load_actions(run.actions)
    late = [a for a in actions if a.minute > played or a.minute >= sim.length]
    if late:
        raise InvalidInput(
            f"{source}: actions",
            f"an action at minute {late[0].minute} is after the {played} minutes played (run length {sim.length})",
        )
    sim.run(actions, until=played)
    return sim


class _RunFileTypes(BaseModel):
    """The run file's scalar fields, strictly typed (``true`` is not a seed, ``"16"`` not a minute count) and
    finite; the full schema is ``RunFile``'s."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)
    scenario: StrictStr = Field(max_length=200)
    seed: StrictInt
    noise: StrictBool = True
    minutes: StrictInt | None = None
    played: StrictInt | None = None
    clock: StrictStr | None = None
    overrides: dict[str, StrictFloat | StrictInt | StrictBool | StrictStr] = Field(default_factory=dict)
    actions: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_RUN_FILE_ACTIONS)


def parse_run_file_bytes(data: bytes, source: str = "run file") -> RunFile:
    """A run file sent as content (an upload): size-limited, UTF-8, parsed in memory."""
    if len(data) > MAX_RUN_FILE_BYTES:
        raise InvalidInput(source, f"a run file is at most {MAX_RUN_FILE_BYTES} bytes, got {len(data)}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(source, "not UTF-8 text") from None
    try:
        _RunFileTypes.model_validate_json(text)
    except ValidationError as exc:
        raise invalid_input(exc, source) from None
    except RecursionError:
        raise InvalidInput(source, "not valid JSON: nested too deeply") from None
    try:
        return RunFile.parse(text, source)
    except RecursionError:
        raise InvalidInput(source, "not valid JSON: nested too deeply") from None
    except ValueError as exc:  # pydantic's JSON parser on absurd input (e.g. integers of thousands of digits)
        if isinstance(exc, InvalidInput):
            raise
        raise InvalidInput(source, f"not a valid run file: {str(exc).splitlines()[0][:200]}") from None
