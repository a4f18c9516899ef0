"""A run: scenario + seed + overrides + action log → timeline. Saved as a small run file, replayed exactly.

The run owns its one generator (mulberry32 seeded with the run's seed): the scenario's draws come first,
then the traffic noise, two normals a minute. Nothing here knows a clock, a network or a screen.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from oncallsim.frames import records_frame
from oncallsim.model import (
    MODEL_VERSION,
    MODEL_VERSIONS,
    SETTINGS,
    Controls,
    InvalidInput,
    MinuteRecord,
    Mulberry32,
    Params,
    RunPlan,
    State,
)
from oncallsim.model.chain.controls import coerce_service_control, with_service_settings
from oncallsim.model.controls import (
    CONTROL_SPECS,
    WORLD_SETTINGS,
    check_engine,
    coerce_control_value,
    current_name,
    text_refused,
)
from oncallsim.model.engine import DEFAULT_ENGINE, Engine, get_engine
from oncallsim.model.errors import quote
from oncallsim.model.plan import MAX_RUN_MINUTES
from oncallsim.model.state import kernel_inputs
from oncallsim.scenarios import Scenario, load_scenario, parse_clock, registered_scenarios, scenario_from_dict
from oncallsim.scenarios.registry import superseded_scenario
from oncallsim.validation import MAX_FILE_BYTES, decode_text, invalid_input, read_bounded

__all__ = [
    "MAX_RUN_FILE_ACTIONS",
    "MAX_SEED",
    "Action",
    "RunFile",
    "Simulation",
    "load_actions",
    "service_overrides",
    "split_overrides",
]

MAX_SEED = 2**32 - 1
RUN_FILE_FORMAT = "oncallsim-run"


@dataclass(frozen=True, slots=True)
class Action:
    """An operator input stamped with the minute whose computation it first applies to."""

    minute: int
    control: str
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"minute": self.minute, "control": self.control}
        if self.value is not None:
            out["value"] = self.value
        return out


class _ActionIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    minute: int = Field(ge=0)
    control: str
    # a choice's value is its name, as the console and the API send it (``controls.text_refused``)
    value: bool | int | float | Annotated[str, Field(max_length=64)] | None = None

    @field_validator("value")
    @classmethod
    def _text_only_for_a_choice(cls, value: Any, info: ValidationInfo) -> Any:
        refused = text_refused(info.data.get("control"), value)
        if refused:
            raise ValueError(refused)
        return value


def parse_action(item: Any, where: str = "action") -> Action:
    """Validate one action mapping; the error names the item, the field and what is allowed."""
    try:
        parsed = _ActionIn.model_validate(item)
    except ValidationError as exc:
        raise invalid_input(exc, where) from None
    try:
        control, value = current_name(parsed.control, parsed.value)
        value = coerce_control_value(control, value)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc.field}", exc.reason) from None
    return Action(parsed.minute, control, value)


def load_actions(source: str | Path | list[Any]) -> list[Action]:
    """An actions file: a JSON list of ``{"minute": m, "control": NAME, "value": V}`` (no value for buttons).

    A path is read only if it is a regular file of at most ``MAX_FILE_BYTES``; the list is parsed in memory."""
    name = "actions"
    if not isinstance(source, list):
        name = str(source)
        text = decode_text(read_bounded(Path(source), "actions file"), name)
        try:
            source = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(name, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
        except (ValueError, RecursionError) as exc:  # 4,300-digit integers, nesting thousands deep
            raise InvalidInput(name, f"not valid JSON: {str(exc).splitlines()[0][:200]}") from None
    if not isinstance(source, list):
        raise InvalidInput(name, "must be a JSON list of {minute, control, value} objects")
    actions = [parse_action(item, f"{name}[{i}]") for i, item in enumerate(source)]
    return sorted(actions, key=lambda a: a.minute)  # stable: same-minute actions keep their order


def split_overrides(overrides: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``--set`` style overrides into model parameters and opening controls, rejecting unknown names. A
    chain's service setting (``recs.timeout_ms``) is checked here and left to ``service_overrides``."""
    params: dict[str, Any] = {}
    controls: dict[str, Any] = {}
    known_params = set(Params.__dataclass_fields__)
    for given, raw in (overrides or {}).items():
        name, value = current_name(given, raw)
        if "." in name:
            coerce_service_control(name, value)
        elif name in known_params:
            params[name] = value
        elif name in SETTINGS or name in WORLD_SETTINGS:
            controls[name] = value
        else:
            raise InvalidInput(
                name,
                "unknown parameter or control; parameters: "
                + ", ".join(sorted(known_params))
                + "; controls: "
                + ", ".join((*SETTINGS, *WORLD_SETTINGS)),
            )
    return params, controls


def service_overrides(overrides: Mapping[str, Any] | None) -> dict[str, float | int]:
    """The overrides that set a chain's service (``<service>.<setting>``), their values checked: a run opens with
    them as if its file said so (a sweep over a service's timeout, ``--set recs.timeout_ms=150``)."""
    return {name: coerce_service_control(name, value) for name, value in (overrides or {}).items() if "." in name}


class Observation(NamedTuple):
    """What an operator (or a policy) sees before deciding minute ``minute``: the console, not the hidden draws."""

    minute: int
    clock: str
    last: MinuteRecord | None
    timeline: Sequence[MinuteRecord]
    controls: Controls
    params: Params
    scenario: Scenario


@runtime_checkable
class Policy(Protocol):
    """Decides the operator's inputs each minute. ``reset`` receives the run's seed (for policies that draw)."""

    name: str

    def reset(self, seed: int) -> None: ...

    def decide(self, observation: Observation) -> Iterable[tuple[str, Any]]: ...


class Simulation:
    """One run of a scenario, minute by minute.

    >>> sim = Simulation("bad-deploy", seed=7)
    >>> sim.step().clock
    '09:00'
    >>> sim.step([("rollback", None)]).events
    ('rollback started',)
    """

    # A notebook's view of a run (``_repr_html_``): the debrief layer registers it (debrief/notebook.py), since
    # the score is the debrief's; until then a notebook shows the plain repr.
    html_view: ClassVar[Any] = None

    def __init__(
        self,
        scenario: str | Path | Scenario,
        seed: int = 0,
        overrides: Mapping[str, Any] | None = None,
        noise: bool = True,
        minutes: int | None = None,
        clock: str | None = None,
        engine: str | None = None,
        model_version: str = MODEL_VERSION,
        controller: Any = None,
    ) -> None:
        if engine is not None:
            get_engine(engine)  # a bad name is refused before anything else
        custom = load_controller(controller)  # a bad controller too (a built-in one's name is an override)
        if custom is not None or isinstance(controller, str):  # the run file names it: a replay needs it again
            overrides = {**(overrides or {}), "controller": "custom" if custom is not None else controller}
        if model_version not in MODEL_VERSIONS:
            raise InvalidInput(
                "model_version",
                f"must be one of {', '.join(MODEL_VERSIONS)} (the versions this code computes), "
                f"got {quote(model_version)}",
            )
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise InvalidInput("seed", f"must be a whole number from 0 to {MAX_SEED}, got {quote(seed)}")
        if minutes is not None and (
            isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= MAX_RUN_MINUTES
        ):
            raise InvalidInput("minutes", f"must be a whole number from 1 to {MAX_RUN_MINUTES}, got {quote(minutes)}")
        if clock is not None:
            parse_clock(clock, "clock")
        self.scenario = load_scenario(scenario)
        # the engine asked for; else the scenario's (a fleet scenario needs the request engine); else the minute
        self.engine: Engine = get_engine(engine or self.scenario.engine or DEFAULT_ENGINE)
        self.seed = seed
        self.overrides = dict(overrides or {})
        self.noise = noise
        self.minutes_override = minutes
        self.clock_override = clock
        param_overrides, control_overrides = split_overrides(self.overrides)
        self.params: Params = Params().with_overrides({**self.scenario.params, **param_overrides})
        opening_values = {**self.scenario.controls, **control_overrides}
        for name, value in opening_values.items():
            if value != CONTROL_SPECS[name].default or name not in SETTINGS:
                check_engine(name, self.engine.name)
        opening = Controls.from_mapping(opening_values)
        self.rng = Mulberry32(seed)
        self.model_version = model_version  # an older one: that version's rules, for its run files' replays
        self.plan: RunPlan = replace(
            self.scenario.build_plan(self.rng, clock=clock, minutes=minutes), revision=int(model_version)
        )
        services = service_overrides(self.overrides)
        if services:  # a chain's services as the overrides set them, from the first minute
            self.plan = replace(self.plan, graph=with_service_settings(self.plan.graph, services))
        self.state: State = self.engine.initial(self.plan, opening, self.params, seed)
        self.controller = controller if custom is not None else None  # a user's, as given (a counterfactual's)
        if custom is not None:
            attach = getattr(self.engine, "attach_controller", None)
            if attach is None:
                raise InvalidInput(
                    "controller",
                    f"a controller plays on the request engine; this run uses the {self.engine.name} engine",
                )
            self.state = attach(self.state, custom, self.params)
        self.timeline: list[MinuteRecord] = []
        self.actions: list[Action] = []

    @property
    def minute(self) -> int:
        """The next minute to compute."""
        return self.state.minute

    @property
    def done(self) -> bool:
        return self.state.minute >= self.plan.minutes

    @property
    def length(self) -> int:
        return self.plan.minutes

    def step(self, actions: Iterable[Action | tuple[str, Any] | Mapping[str, Any]] = ()) -> MinuteRecord:
        """Compute the next minute with these inputs (all stamped with it); invalid input changes nothing."""
        if self.done:
            raise InvalidInput("minute", f"the run is over after {self.plan.minutes} minutes")
        stamped = [self._stamp(a) for a in actions] if actions else []
        self.state, record = self.engine.step(
            self.state, [(a.control, a.value) for a in stamped], self.rng if self.noise else None, self.params
        )
        self.actions.extend(stamped)
        self.timeline.append(record)
        return record

    def _stamp(self, action: Action | tuple[str, Any] | Mapping[str, Any]) -> Action:
        stamped = self._stamp_unchecked(action)
        check_engine(stamped.control, self.engine.name)
        self.engine.check_action(self.state, stamped.control, stamped.value)
        return stamped

    def check_action(self, control: Any, value: Any = None) -> Action:
        """An action from any surface (the console, a game-day room, the API), checked as the next minute will
        check it: a known control with a valid value, one this run's engine has, that the run's current state
        can take (an instance that is there); returned stamped with the next minute. Raises ``InvalidInput``.
        Call it where the action is logged, with nothing stepping the run in between (the state it was checked
        against is then the state it applies to)."""
        if not isinstance(control, str):
            raise InvalidInput("control", f"must be a control name, got {control!r}"[:200])
        control, value = current_name(control, value)
        checked = coerce_control_value(control, value)
        check_engine(control, self.engine.name)
        self.engine.check_action(self.state, control, checked)
        return Action(self.minute, control, checked)

    def replay_log(self, logged: Iterable[Mapping[str, Any]], until: int) -> tuple[list[Action], list[str]]:
        """A live run's log played again up to minute ``until`` (or its last action's), each action checked as
        it was when taken (``check_action``): one this run cannot take (an older server logged it unchecked) is
        skipped and said, never raised. Returns the actions of the minute it stops at (logged, not yet applied)
        and what was skipped, one line each."""
        skipped: list[str] = []
        by_minute: dict[int, list[tuple[str, Any]]] = {}
        for i, item in enumerate(logged):
            try:
                action = parse_action(item, f"log[{i}]")
            except InvalidInput as exc:
                skipped.append(str(exc))
                continue
            by_minute.setdefault(action.minute, []).append((action.control, action.value))
        for minute in sorted(m for m in by_minute if m < self.minute):
            skipped += [f"{c} at minute {minute}: before the run's position" for c, _ in by_minute.pop(minute)]
        stop = min(max([until, *by_minute]), self.plan.minutes)  # the log is the truth: at least to its last action

        def checked(minute: int) -> list[Action]:
            out: list[Action] = []
            for control, value in by_minute.pop(minute, ()):
                try:
                    out.append(self.check_action(control, value))
                except InvalidInput as exc:
                    skipped.append(f"{control} at minute {minute}: {exc}")
            return out

        while self.minute < stop:
            self.step(checked(self.minute))
        pending = checked(self.minute) if not self.done else []
        skipped += [f"{c} at minute {m}: past the run's end" for m in sorted(by_minute) for c, _ in by_minute[m]]
        return pending, skipped

    def _stamp_unchecked(self, action: Action | tuple[str, Any] | Mapping[str, Any]) -> Action:
        minute = self.state.minute
        if type(action) is tuple:  # the common form first: a Mapping check is an ABC's, ~0.4 µs an action
            control, value = current_name(*action)
            return Action(minute, control, coerce_control_value(control, value))
        if isinstance(action, Action):
            if action.minute != minute:
                raise InvalidInput("minute", f"action stamped {action.minute} given at minute {minute}")
            control, value = current_name(action.control, action.value)
            return Action(minute, control, coerce_control_value(control, value))
        if isinstance(action, Mapping):
            return parse_action({"minute": minute, **action})
        control, value = current_name(*action)
        return Action(minute, control, coerce_control_value(control, value))

    def inject(self, event: Mapping[str, Any]) -> Any:
        """Add a scenario event (a game day's fault) to this running simulation, at a future minute only.

        The event is validated by the scenario schema (the same model as a scenario file), appended to the
        run's scenario, and the plan rebuilt from the scenario with the run's seed, so the run file (which then
        carries the scenario with the event) replays bit for bit. Refused: an event at a past minute, and an
        event that would draw random values (every range fixed), since a draw would shift the run's noise."""
        if not isinstance(event, Mapping):
            raise InvalidInput("event", "must be an object with a kind and its fields")
        data = self.scenario.model_dump(mode="json")
        data["events"] = [*data["events"], dict(event)]
        scenario = scenario_from_dict(data, "event")
        added = scenario.events[-1]
        at = _first_minute(added.model_dump(mode="json"), self.plan.clock_start_min)
        if at is None:
            raise InvalidInput("event", "names no time of day (HH:MM)")
        if at < max(self.minute, 1):
            earliest = self.plan.clock(max(self.minute, 1))
            raise InvalidInput(
                "event",
                f"is at {self.plan.clock(at)}, too early: the earliest minute to come is {earliest}",
                "event_too_early",
                at=self.plan.clock(at),
                earliest=earliest,
            )
        if at >= self.plan.minutes:
            raise InvalidInput(
                "event", f"is at {self.plan.clock(at)}, past the run's end", "event_past_end", at=self.plan.clock(at)
            )
        before, after = Mulberry32(self.seed), Mulberry32(self.seed)
        self.scenario.build_plan(before, clock=self.clock_override, minutes=self.minutes_override)
        plan = scenario.build_plan(after, clock=self.clock_override, minutes=self.minutes_override)
        if before.state != after.state:
            raise InvalidInput(
                "event",
                "must have fixed values (low = high, one onset time): a drawn value would shift the run's noise",
            )
        self.engine.check_plan(plan, self.params)  # a surge the request engine could not simulate, say
        self.scenario = scenario
        self.plan = plan
        self.state = self.state._replace(plan=plan, kernel=kernel_inputs(plan, self.params))
        return added

    def observe(self) -> Observation:
        """The console as it stands before the next minute."""
        return Observation(
            minute=self.minute,
            clock=self.plan.clock(self.minute),
            last=self.timeline[-1] if self.timeline else None,
            timeline=self.timeline,
            controls=self.state.controls,
            params=self.params,
            scenario=self.scenario,
        )

    def run(
        self, actions: Iterable[Action] = (), until: int | None = None, policy: Policy | None = None
    ) -> list[MinuteRecord]:
        """Run to the end (or to minute ``until``), applying logged actions at their minutes.

        With a policy, it decides each minute after the logged actions of that minute; what it decides is
        logged too, so the run file replays without it.
        """
        if policy is not None and self.minute == 0:
            policy.reset(self.seed)
        by_minute: dict[int, list[Action]] = {}
        for a in actions:
            if a.minute < self.minute:
                raise InvalidInput("actions", f"action at minute {quote(a.minute)} is in the past (now {self.minute})")
            by_minute.setdefault(a.minute, []).append(a)
        stop = self.plan.minutes if until is None else min(until, self.plan.minutes)
        while self.minute < stop:
            todo: list[Action | tuple[str, Any]] = list(by_minute.pop(self.minute, ()))
            if policy is not None:
                todo.extend(policy.decide(self.observe()))
            self.step(todo)
        if by_minute and until is None:
            late = min(by_minute)
            raise InvalidInput(
                "actions", f"action at minute {quote(late)} is past the run's end ({self.plan.minutes} minutes)"
            )
        return self.timeline

    def fork(self) -> Simulation:
        """An independent copy of this run where it stands (its state and generator copied, its records shared: they
        are immutable): stepped with other inputs, it is the same run from here with those decisions instead, on the
        same draws. A copy costs a few milliseconds (the request engine's world is copied whole)."""
        other = copy.copy(self)
        other.state = copy.deepcopy(self.state)
        other.rng = copy.deepcopy(self.rng)
        other.timeline = list(self.timeline)
        other.actions = list(self.actions)
        return other

    def counterfactual(self, policy: Policy | None, minutes: int | None = None) -> Simulation:
        """The same scenario, seed, overrides and noise, played by ``policy`` (None = hands off).

        Runs share the scenario's draws and the traffic noise, so the difference is the decisions alone.
        """
        other = Simulation(
            self.scenario,
            seed=self.seed,
            overrides=self.overrides,
            noise=self.noise,
            minutes=self.minutes_override,
            clock=self.clock_override,
            engine=self.engine.name,
            model_version=self.model_version,
            controller=self.controller,
        )
        other.run(until=minutes, policy=policy)
        return other

    # --- data frames and notebooks ------------------------------------------------------------------

    def to_pandas(self) -> Any:
        """The minutes computed so far as a ``pandas.DataFrame``, one row a minute (``oncallsim.frames``;
        the ``notebook`` extra)."""
        return records_frame(self.timeline, scenario=self.scenario.id, seed=self.seed, engine=self.engine.name)

    def _repr_html_(self) -> str | None:
        view = type(self).html_view
        return None if view is None else str(view(self))

    def __repr__(self) -> str:
        return (
            f"Simulation({self.scenario.id!r}, seed={self.seed}, engine={self.engine.name!r}: "
            f"{self.minute} of {self.length} minutes)"
        )

    # --- run files -----------------------------------------------------------------------------------

    def run_file(self) -> RunFile:
        builtin = registered_scenarios().get(self.scenario.id) == self.scenario
        return RunFile(
            scenario=self.scenario.id,
            scenario_spec=None if builtin else self.scenario.model_dump(mode="json"),
            model_version=self.model_version,
            seed=self.seed,
            overrides=self.overrides,
            noise=self.noise,
            minutes=self.minutes_override,
            clock=self.clock_override,
            engine=self.engine.name,
            actions=[a.to_dict() for a in self.actions],
            played=self.minute,
        )

    @classmethod
    def from_run_file(cls, run: RunFile) -> Simulation:
        """A fresh simulation set up as the run file says, before any minute (its actions not yet applied)."""
        scenario: str | Scenario = run.scenario
        if run.scenario_spec is not None:
            scenario = scenario_from_dict(run.scenario_spec, "run file scenario_spec")
        else:  # a built-in scenario changed since this model version's runs: the one they played
            scenario = superseded_scenario(run.scenario, run.model_version) or scenario
        return cls(
            scenario,
            seed=run.seed,
            overrides=run.overrides,
            noise=run.noise,
            minutes=run.minutes,
            clock=run.clock,
            engine=run.engine,
            # a stored run of a version this code no longer computes comes back under the current rules (its
            # caller flags it: web/live.py); a file of one is refused when parsed
            model_version=run.model_version if run.model_version in MODEL_VERSIONS else MODEL_VERSION,
        )

    @classmethod
    def replay(cls, run: RunFile | str | Path, until: int | None = None) -> Simulation:
        """Rebuild a run from its file up to where it was played (or ``until``): the same timeline, bit for bit.

        Refused rather than replayed to something else: ``played`` past the run's end, and an action after
        ``played`` (it could never have been applied; an action at ``played`` is one logged, not yet applied)."""
        if not isinstance(run, RunFile):
            run = RunFile.load(run)
        sim = cls.from_run_file(run)
        played = sim.length if run.played is None else run.played
        if played > sim.length:
            raise InvalidInput("played", f"must be from 0 to the run's length {sim.length}, got {quote(played)}")
        actions = load_actions(run.actions)
        late = [a for a in actions if a.minute > played or a.minute >= sim.length]
        if late:
            raise InvalidInput(
                "actions",
                f"an action at minute {quote(late[0].minute)} is after the {played} minutes played "
                f"(run length {sim.length})",
            )
        sim.run(actions, until=played if until is None else until)
        return sim


def _first_minute(event: Mapping[str, Any], start: int) -> int | None:
    """The earliest minute (from the run's start) among an event's times of day, wherever its fields hold them."""
    clocks: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str) and len(value) == 5 and value[2] == ":":
            clocks.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)

    walk(event)
    return min(((parse_clock(c) - start) % 1440 for c in clocks), default=None)


MAX_RUN_FILE_ACTIONS = 20_000  # a day of a busy operator is a few hundred; this keeps a replay under a second


class RunFile(BaseModel):
    """What it takes to rebuild a run exactly: the scenario, the model version, seed, overrides and actions.

    Strictly typed and finite (``true`` is not a seed, ``"16"`` not a minute count, no NaN anywhere)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    format: str = RUN_FILE_FORMAT
    scenario: str = Field(max_length=200)
    scenario_spec: dict[str, Any] | None = None
    model_version: str = Field(max_length=50)
    seed: int = Field(ge=0, le=MAX_SEED)
    overrides: dict[str, float | int | bool | str] = Field(default_factory=dict)
    noise: bool = True
    minutes: int | None = None
    clock: str | None = None
    engine: str = Field(default=DEFAULT_ENGINE, description="the engine that computed the run (absent = minute)")
    # How the console paced the player; the numbers do not depend on it (absent = normal).
    difficulty: Literal["guided", "normal", "hard"] = "normal"
    actions: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_RUN_FILE_ACTIONS)
    played: int | None = Field(default=None, ge=0, description="minutes computed; None = the whole run")

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")

    def frame(self) -> Any:
        """The run replayed (bit for bit) as a ``pandas.DataFrame``: ``Simulation.replay(run).to_pandas()``."""
        return Simulation.replay(self).to_pandas()

    @classmethod
    def load(cls, path: str | Path) -> RunFile:
        """A run file on disk: a regular file of at most ``MAX_FILE_BYTES``, parsed in memory."""
        return cls.parse_bytes(read_bounded(Path(path), "run file"), str(path))

    @classmethod
    def parse_bytes(cls, data: bytes, source: str = "run file") -> RunFile:
        """A run file sent as content (an upload): size-limited, UTF-8, parsed in memory."""
        if len(data) > MAX_FILE_BYTES:
            raise InvalidInput(source, f"a run file is at most {MAX_FILE_BYTES} bytes, got {len(data)}")
        return cls.parse(decode_text(data, source), source)

    @classmethod
    def parse(cls, text: str, source: str = "run file") -> RunFile:
        try:
            run = cls.model_validate_json(text)
        except ValidationError as exc:
            raise invalid_input(exc, source) from None
        except RecursionError:
            raise InvalidInput(source, "not valid JSON: nested too deeply") from None
        except ValueError as exc:  # pydantic's JSON parser on absurd input (integers of thousands of digits)
            raise InvalidInput(source, f"not a valid run file: {str(exc).splitlines()[0][:200]}") from None
        if run.format != RUN_FILE_FORMAT:
            raise InvalidInput(f"{source}: format", f"must be {RUN_FILE_FORMAT!r}, got {run.format!r}")
        if run.model_version not in MODEL_VERSIONS:
            raise InvalidInput(
                f"{source}: model_version",
                f"the run was made with model version {run.model_version}; this code computes versions "
                f"{', '.join(MODEL_VERSIONS)}, so a replay would not reproduce it",
            )
        return run


def load_controller(ref: Any) -> Any:
    """A fresh user's controller for a run, or None: None and a built-in controller's name give None (the name is
    the run's ``controller`` setting); ``package.module:attr`` names a controller class, factory (called with no
    argument) or instance; an object is a controller itself (deep-copied: each run its own state). Anything else is
    refused in one line naming ``controller``; ``os:system`` is never called (only a class with a ``control`` method,
    a Python function or a partial is)."""
    import functools
    import importlib
    import inspect

    from oncallsim.model.request.controllers import BUILT_IN, Controller, check_controller
    from oncallsim.model.request.limiter import CONTROLLERS

    if ref is None or (isinstance(ref, str) and ref in CONTROLLERS and ref != "custom"):
        return None
    if not isinstance(ref, str):
        made = copy.deepcopy(ref)
    else:
        module_name, sep, attr = ref.partition(":")
        if not sep or not module_name or not attr:
            raise InvalidInput(
                "controller", f"unknown controller {ref!r}; built-in: off, {', '.join(BUILT_IN)}, or module:attr"
            )
        try:
            target = getattr(importlib.import_module(module_name), attr)
        except ImportError as exc:
            raise InvalidInput("controller", f"cannot import {module_name!r}: {exc}") from None
        except AttributeError:
            raise InvalidInput("controller", f"module {module_name!r} has no attribute {attr!r}") from None
        refused = f"{ref} is not a controller: it needs a tick_s and a control(signals, knobs) method"
        if isinstance(target, Controller) and not isinstance(target, type):
            made = copy.deepcopy(target)
        elif (isinstance(target, type) and callable(getattr(target, "control", None))) or (
            inspect.isfunction(target) or isinstance(target, functools.partial)
        ):
            try:
                made = target()
            except Exception as exc:
                raise InvalidInput("controller", f"{ref}() failed: {type(exc).__name__}: {str(exc)[:200]}") from None
        else:
            raise InvalidInput("controller", refused)
    check_controller(made)
    return made
