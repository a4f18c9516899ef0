"""The scenario file format, validated by pydantic: one schema for the built-in and the user's files.

A scenario is data: a briefing, a start clock, a length, parameter overrides, the opening controls, and the
events that happen on their own (a bad deploy, a cache flush, a surge whose shape is drawn from the seed).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from oncallsim.model import CONTROL_SPECS, Controls, InvalidInput, Mulberry32, Params, RunPlan, Surge
from oncallsim.model.engine import get_engine
from oncallsim.model.plan import MAX_RUN_MINUTES, InstanceFault, ServiceFault
from oncallsim.scenarios.graph import GraphSpec, layout_of
from oncallsim.scenarios.texts import ScenarioTexts, check_languages

__all__ = [
    "REQUEST_EVENT_KINDS",
    "SCHEMA_VERSION",
    "SCORE_PART_NAMES",
    "BrownoutEvent",
    "DeployEvent",
    "FlushEvent",
    "InstanceEvent",
    "Scenario",
    "ScorePartScale",
    "ScoreScale",
    "SurgeEvent",
    "ZoneOutageEvent",
    "parse_clock",
]

SCHEMA_VERSION = 1
_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def parse_clock(text: str, field: str = "clock") -> int:
    """'HH:MM' → minutes since midnight; anything else is refused with the field's name."""
    match = _CLOCK.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise InvalidInput(field, f"must be a time of day HH:MM from 00:00 to 23:59, got {text!r}")
    return int(match.group(1)) * 60 + int(match.group(2))


Clock = Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):([0-5]\d)$", description="time of day, HH:MM")]


def percent(x: float) -> str:
    """A target as a percentage with the digits it has (0.975 → "97.5%", 0.15 → "15%"): never rounded into
    another target (0.975 once read "98%")."""
    return f"{100 * x:.3f}".rstrip("0").rstrip(".") + "%"


class _Strict(BaseModel):
    # strict: ``true`` is not a number and ``"16"`` is not a number; finite: ``nan`` and ``inf`` are refused
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


# Objective labels as translatable templates (gettext msgids) with named arguments.
LABELS = {
    "budget_left": "error budget left ≥ %(amount)s",
    "budget_spent": "error budget spent ≤ %(amount)s",
    "latency": "p99 ≤ %(target)s ms in ≥ %(share)s of minutes",
    "cost": "cost ≤ %(amount)s",
    "db_none": "no minute with the database over capacity",
    "db_some": "at most %(minutes)s minutes with the database over capacity",
    "recovery": "recovered within %(minutes)s min of the incident",
    "turned_away": "at most %(amount)s of requests turned away (shed)",
}


class _Objective(_Strict):
    def label_parts(self) -> tuple[str, dict[str, str]]:
        raise NotImplementedError

    def label(self) -> str:
        """The English label (the template filled in); pages translate the template instead."""
        template, args = self.label_parts()
        return template % args if args else template


class DeployEvent(_Strict):
    """A new build, which is bad, starts rolling out at ``at``."""

    kind: Literal["deploy"]
    at: Clock


class FlushEvent(_Strict):
    """A maintenance script empties the whole cache at ``at``."""

    kind: Literal["flush"]
    at: Clock


class Range(_Strict):
    """A value drawn uniformly from [low, high] with the run's generator (or fixed when low = high)."""

    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) must not exceed high ({self.high})")
        return self

    def draw(self, rng: Mulberry32) -> float:
        return self.low if self.low == self.high else rng.uniform(self.low, self.high)


class SurgeEvent(_Strict):
    """A traffic wave: onset between two clocks, peak multiplier, linear rise, exponential decay."""

    kind: Literal["surge"]
    onset_between: tuple[Clock, Clock] = Field(strict=False)  # a TOML/JSON list of two clocks
    peak: Range
    rise_min: Range
    decay_min: Range

    @field_validator("peak")
    @classmethod
    def _peak_at_least_one(cls, v: Range) -> Range:
        if v.low < 1.0:
            raise ValueError("the peak multiplier must be >= 1")
        return v

    @field_validator("rise_min", "decay_min")
    @classmethod
    def _positive(cls, v: Range) -> Range:
        if v.low <= 0:
            raise ValueError("must be > 0 minutes")
        return v


class InstanceEvent(_Strict):
    """Something happens to one instance (request engine): it turns slow, crashes (connections refused), hangs
    (accepts, never answers, still renews its registration) or recovers. When is drawn between two clocks,
    which instance with the run's generator unless ``instance`` names it."""

    kind: Literal["instance"]
    what: Literal["slow", "crash", "hang", "revive"]
    at_between: tuple[Clock, Clock] = Field(strict=False)
    instance: int | None = Field(default=None, ge=0, le=999, description="the instance id; none: drawn")
    slowdown: Range = Field(
        default_factory=lambda: Range(low=1.0, high=1.0), description="slow: how many times slower (≥ 1)"
    )

    @field_validator("slowdown")
    @classmethod
    def _at_least_one(cls, v: Range) -> Range:
        if v.low < 1.0 or v.high > 1000.0:
            raise ValueError("the slowdown must be from 1 to 1000 (times slower)")
        return v


class ZoneOutageEvent(_Strict):
    """A zone drops off the network (request engine): its instances neither answer nor renew their
    registration, for ``minutes`` (then it is back). The zone holds a ``share`` of the instance slots."""

    kind: Literal["zone_outage"]
    at_between: tuple[Clock, Clock] = Field(strict=False)
    share: Range
    minutes: Range

    @field_validator("share")
    @classmethod
    def _a_share(cls, v: Range) -> Range:
        if v.low <= 0.0 or v.high >= 1.0:
            raise ValueError("the zone's share of the fleet must be above 0 and below 1")
        return v

    @field_validator("minutes")
    @classmethod
    def _some_minutes(cls, v: Range) -> Range:
        if v.low < 1.0 or v.high > MAX_RUN_MINUTES:
            raise ValueError(f"must be from 1 to {MAX_RUN_MINUTES} minutes")
        return v


class BrownoutEvent(_Strict):
    """The database slows down for a while (a brownout: a failing disk, a noisy neighbour, a long vacuum): each
    query takes ``slowdown`` times longer, so its capacity shrinks as much. ``at`` a fixed clock, or
    ``at_between`` two clocks with ``minutes`` and ``slowdown`` as ranges: drawn per seed, which only a scenario
    of the request engine may do (the batch minute engine plays one plan for all seeds)."""

    kind: Literal["brownout"]
    at: Clock | None = None
    at_between: tuple[Clock, Clock] | None = Field(default=None, strict=False)
    minutes: Annotated[int, Field(ge=1, le=MAX_RUN_MINUTES)] | Range = Field(
        description="whole minutes from 1, or a range of them"
    )
    slowdown: Annotated[float, Field(gt=1.0, le=20.0)] | Range = Field(
        description="times slower (above 1, at most 20), or a range"
    )

    @model_validator(mode="after")
    def _one_time(self) -> BrownoutEvent:
        if (self.at is None) == (self.at_between is None):
            raise ValueError("give either at (a clock) or at_between (two clocks), not both")
        lo, hi = (self.minutes.low, self.minutes.high) if isinstance(self.minutes, Range) else (self.minutes,) * 2
        if lo < 1 or hi > MAX_RUN_MINUTES:
            raise ValueError(f"minutes must be from 1 to {MAX_RUN_MINUTES}")
        lo, hi = (self.slowdown.low, self.slowdown.high) if isinstance(self.slowdown, Range) else (self.slowdown,) * 2
        if lo <= 1.0 or hi > 20.0:
            raise ValueError("the slowdown must be above 1 and at most 20 (times slower)")
        return self

    @property
    def seeded(self) -> bool:
        """Whether a run's seed draws its time, length or slowdown."""
        return self.at_between is not None or isinstance(self.minutes, Range) or isinstance(self.slowdown, Range)


class ServiceEvent(_Strict):
    """One service of a chain (a scenario's ``[graph]``) degrades for ``minutes``: its own work takes ``slowdown``
    times longer, and a share ``errors`` of its attempts end in an error. ``at`` a clock, or ``at_between`` two
    (drawn per seed)."""

    kind: Literal["service"]
    service: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,39}$", description="a service declared in [graph]")
    at: Clock | None = None
    at_between: tuple[Clock, Clock] | None = Field(default=None, strict=False)
    minutes: Annotated[int, Field(ge=1, le=MAX_RUN_MINUTES)] = Field(description="whole minutes from 1")
    slowdown: Annotated[float, Field(ge=1.0, le=1000.0)] = Field(default=1.0, description="times slower (1–1000)")
    errors: Annotated[float, Field(ge=0.0, le=1.0)] = Field(default=0.0, description="a share of attempts failing")

    @model_validator(mode="after")
    def _one_time_and_an_effect(self) -> ServiceEvent:
        if (self.at is None) == (self.at_between is None):
            raise ValueError("give either at (a clock) or at_between (two clocks), not both")
        if self.slowdown == 1.0 and self.errors == 0.0:
            raise ValueError("give a slowdown above 1 or errors above 0: as written nothing happens")
        return self


# the kinds that only the request engine plays (its instances; a chain's services)
REQUEST_EVENT_KINDS = ("instance", "zone_outage", "service")

Event = Annotated[
    DeployEvent | FlushEvent | SurgeEvent | InstanceEvent | ZoneOutageEvent | BrownoutEvent | ServiceEvent,
    Field(discriminator="kind"),
]


class BudgetLeftObjective(_Objective):
    """The error budget left at the end (fraction of the 30-day budget) is at least ``value``."""

    kind: Literal["budget_left_at_least"]
    value: float = Field(ge=-10.0, le=1.0)

    def label_parts(self) -> tuple[str, dict[str, str]]:
        return LABELS["budget_left"], {"amount": percent(self.value)}


class BudgetSpentObjective(_Objective):
    """The run spends at most ``value`` of the 30-day error budget."""

    kind: Literal["budget_spent_at_most"]
    value: float = Field(gt=0.0, le=10.0)

    def label_parts(self) -> tuple[str, dict[str, str]]:
        return LABELS["budget_spent"], {"amount": percent(self.value)}


class LatencyObjective(_Objective):
    """p99 stays at or under ``target_ms`` in at least ``share`` of the minutes."""

    kind: Literal["p99_within"]
    target_ms: float = Field(gt=0.0)
    share: float = Field(gt=0.0, le=1.0)

    def label_parts(self) -> tuple[str, dict[str, str]]:
        return LABELS["latency"], {"target": f"{self.target_ms:g}", "share": percent(self.share)}


class CostObjective(_Objective):
    """The fleet costs at most ``value`` dollars over the run."""

    kind: Literal["cost_at_most"]
    value: float = Field(gt=0.0)

    def label_parts(self) -> tuple[str, dict[str, str]]:
        return LABELS["cost"], {"amount": f"${self.value:.2f}"}


class DatabaseObjective(_Objective):
    """At most ``max_minutes`` minutes with the database at or over capacity (ρ ≥ 1)."""

    kind: Literal["db_within_capacity"]
    max_minutes: int = Field(default=0, ge=0)

    def label_parts(self) -> tuple[str, dict[str, str]]:
        if self.max_minutes == 0:
            return LABELS["db_none"], {}
        return LABELS["db_some"], {"minutes": str(self.max_minutes)}


class RecoveryObjective(_Objective):
    """Errors are back under the SLO within ``minutes`` of the incident's start, and stay there."""

    kind: Literal["recover_within"]
    minutes: int = Field(ge=1)

    def label_parts(self) -> tuple[str, dict[str, str]]:
        return LABELS["recovery"], {"minutes": str(self.minutes)}


class TurnedAwayObjective(_Objective):
    """At most ``value`` of the run's requests are shed: the users turned away count, so shedding everyone to
    save the budget fails."""

    kind: Literal["turned_away_at_most"]
    value: float = Field(ge=0.0, le=1.0)

    def label_parts(self) -> tuple[str, dict[str, str]]:
        return LABELS["turned_away"], {"amount": percent(self.value)}


Objective = Annotated[
    BudgetLeftObjective
    | BudgetSpentObjective
    | LatencyObjective
    | CostObjective
    | DatabaseObjective
    | RecoveryObjective
    | TurnedAwayObjective,
    Field(discriminator="kind"),
]


# The score's parts (debrief/score.py counts each in its unit): the error budget spent (%), users turned away (% of
# requests shed), stale answers (s of mean age over 30 s), slow minutes (p99 over the latency target) and money
# (% over the opening fleet's cost).
SCORE_PART_NAMES = ("errors", "turned_away", "stale", "slow", "money")


class ScorePartScale(_Strict):
    """One part of the score: it loses nothing up to ``free`` (in the part's unit: what the scenario costs even
    the best play), then in proportion up to ``cap`` points, all of them at ``full``."""

    cap: float = Field(ge=0.0, le=100.0)
    full: float = Field(gt=0.0, le=1e6)
    free: float = Field(default=0.0, ge=0.0, le=1e6)

    @model_validator(mode="after")
    def _free_below_full(self) -> ScorePartScale:
        if self.free >= self.full:
            raise ValueError(f"free ({self.free:g}) must be below full ({self.full:g})")
        return self

    def lost(self, amount: float) -> float:
        """Points lost for ``amount`` (in the part's unit)."""
        return self.cap * min(1.0, max(0.0, amount - self.free) / (self.full - self.free))


class ScoreScale(_Strict):
    """A scenario's score scale (``[score]``): each part's cap, free and full amounts; the caps add up to 100. The
    defaults (a scenario without the table): errors 40 points, all lost at 10 % of the error budget (4 a percent);
    users turned away 20, at 6.67 % of requests (3 a percent); stale answers 10, at 100 s of mean age over 30 s;
    slow 15, at 30 minutes over the latency target; money 15, at 150 % over the opening fleet's cost; nothing
    free. A built-in scenario's table is calibrated so that the playbook scores near 90 and hands-off near the
    bottom (docs/scenarios.md, "Balance")."""

    errors: ScorePartScale = ScorePartScale(cap=40.0, full=10.0)
    turned_away: ScorePartScale = ScorePartScale(cap=20.0, full=20.0 / 3.0)
    stale: ScorePartScale = ScorePartScale(cap=10.0, full=100.0)
    slow: ScorePartScale = ScorePartScale(cap=15.0, full=30.0)
    money: ScorePartScale = ScorePartScale(cap=15.0, full=150.0)

    @model_validator(mode="after")
    def _caps_make_100(self) -> ScoreScale:
        total = sum(p.cap for p in self.parts().values())
        if abs(total - 100.0) > 1e-9:
            raise ValueError(f"the parts' caps must add up to 100, got {total:g}")
        return self

    def parts(self) -> dict[str, ScorePartScale]:
        return {name: getattr(self, name) for name in SCORE_PART_NAMES}


class FleetSpec(_Strict):
    """The request engine's instances, when they are not all alike: each slot's ``speeds`` (its machine's CPU
    against the model's instance: 2 = twice as fast) and the ``weights`` they register with (warden's default is
    10), each list repeated over the instance slots."""

    speeds: list[Annotated[float, Field(ge=0.1, le=10.0)]] = Field(default_factory=list, max_length=1000)
    weights: list[Annotated[int, Field(ge=1, le=1000)]] = Field(default_factory=list, max_length=1000)


class Scenario(_Strict):
    """One scenario file (TOML), schema version 1."""

    schema_version: Literal[1] = 1
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    version: int = Field(ge=1, description="bumped when the scenario's behaviour changes")
    title: str = Field(min_length=1)
    summary: str = Field(min_length=1, description="one line for lists")
    briefing: str = Field(min_length=1, description="what the player is told at the start")
    start: Clock
    minutes: int = Field(ge=1, le=MAX_RUN_MINUTES)
    budget_start: float = Field(default=1.0, gt=0.0, le=1.0, description="error budget left at the start")
    params: dict[str, float] = Field(default_factory=dict, description="overrides of model parameters")
    controls: dict[str, Any] = Field(default_factory=dict, description="the controls at the start")
    events: list[Event] = Field(default_factory=list)
    fleet: FleetSpec = Field(default_factory=FleetSpec, description="the instances' speeds and weights")
    latency_target_ms: float = Field(default=1000.0, gt=0.0, description="the debrief's latency line")
    objectives: list[Objective] = Field(default_factory=list, description="what judges the run")
    score: ScoreScale = Field(default_factory=ScoreScale, description="the score's scale: each part's cap and full")
    engine: str | None = Field(
        default=None, description="the engine a run of this scenario uses unless told otherwise (None: minute)"
    )
    key_controls: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="the controls the briefing points at, by name; the first is the main one (a key goes to it)",
    )
    incident_hint: str = Field(
        default="",
        max_length=2000,
        description="guided difficulty: what the player reads when the clock stops at the incident's start "
        "(the symptom and where to look)",
    )
    page_hint: str = Field(
        default="", max_length=2000, description="guided difficulty: what the player reads when the page fires"
    )
    after: dict[str, Any] = Field(
        default_factory=dict,
        description="a lesson's scenario: the settings that replaced the mechanism it opens with (the article's "
        "'after'); the debrief always replays the run with them from the start and names them",
    )
    i18n: dict[str, ScenarioTexts] = Field(
        default_factory=dict, description="the texts in other languages: [i18n.da] title, summary, briefing"
    )
    graph: GraphSpec | None = Field(
        default=None,
        description="a chain of services ([graph], docs/graphs.md), played by the request engine",
    )

    @model_serializer(mode="wrap")
    def _no_absent_graph(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A scenario without a graph dumps as it did before graphs existed: run files, sweep and cliff-map
        configs (compared when resumed) and the API's listings stay byte for byte what they were."""
        data = handler(self)
        if isinstance(data, dict) and data.get("graph", 0) is None:
            del data["graph"]
        return data

    @model_validator(mode="before")
    @classmethod
    def _a_graph_plays_on_the_request_engine(cls, data: Any) -> Any:
        """A scenario with a graph runs on the request engine unless it names another (which its runs refuse:
        the minute model has one service)."""
        if isinstance(data, dict) and data.get("graph") is not None and data.get("engine") is None:
            return {**data, "engine": "request"}
        return data

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, v: str | None) -> str | None:
        if v is not None:
            get_engine(v)  # raises InvalidInput (a ValueError) naming the engines there are
        return v

    @field_validator("i18n")
    @classmethod
    def _known_languages(cls, v: dict[str, ScenarioTexts]) -> dict[str, ScenarioTexts]:
        return check_languages(v)  # a language the console has, or one line naming them

    @field_validator("key_controls")
    @classmethod
    def _known_key_controls(cls, v: list[str]) -> list[str]:
        for name in v:
            if name not in CONTROL_SPECS:
                raise ValueError(f"unknown control {name[:40]!r}; known: {', '.join(CONTROL_SPECS)}")
        return v

    @field_validator("events")
    @classmethod
    def _one_surge(cls, v: list[Any]) -> list[Any]:
        surges = sum(isinstance(e, SurgeEvent) for e in v)
        if surges > 1:
            raise ValueError(f"at most one surge event per scenario (the model has one surge), got {surges}")
        return v

    @model_validator(mode="after")
    def _a_fleet_needs_the_request_engine(self) -> Any:
        if self.engine != "request" and (self.fleet.speeds or self.fleet.weights):
            raise ValueError(
                'fleet.speeds and fleet.weights need engine = "request": the minute model has no instances'
            )
        return self

    @model_validator(mode="after")
    def _seeded_brownouts_need_the_request_engine(self) -> Any:
        if self.engine != "request" and any(isinstance(e, BrownoutEvent) and e.seeded for e in self.events):
            raise ValueError(
                'a brownout drawn per seed (at_between, or ranges) needs engine = "request": the batch minute '
                "engine plays one plan for all seeds; give the minute engine a fixed at, minutes and slowdown"
            )
        return self

    @model_validator(mode="after")
    def _service_events_need_their_service(self) -> Any:
        for i, event in enumerate(self.events):
            if not isinstance(event, ServiceEvent):
                continue
            if self.graph is None:
                raise ValueError(f"events.{i}: a service event needs a chain of services ([graph]) to act on")
            if event.service not in self.graph.services:
                raise ValueError(
                    f"events.{i}.service: unknown service {event.service!r}; declared: {', '.join(self.graph.services)}"
                )
        return self

    @field_validator("params")
    @classmethod
    def _known_params(cls, v: dict[str, float]) -> dict[str, float]:
        Params().with_overrides(v)  # raises InvalidInput (a ValueError) naming the parameter
        return v

    @field_validator("controls", "after")
    @classmethod
    def _known_controls(cls, v: dict[str, Any]) -> dict[str, Any]:
        Controls.from_mapping(v)
        return v

    def build_plan(self, rng: Mulberry32, clock: str | None = None, minutes: int | None = None) -> RunPlan:
        """The run's plan. Draws, in file order, one uniform per ranged value: surge onset, peak, rise, decay.

        A scenario with a ``[graph]`` carries its layout in the plan: the request engine plays the chain, the
        minute engine refuses it (a run that quietly played one service would teach the wrong lesson)."""
        start = parse_clock(clock if clock is not None else self.start, "clock")
        deploys: set[int] = set()
        flushes: set[int] = set()
        surge: Surge | None = None
        faults: list[InstanceFault] = []
        brownouts: list[tuple[int, int, float]] = []
        service_faults: list[ServiceFault] = []
        for event in self.events:
            if isinstance(event, DeployEvent):
                deploys.add(_offset(event.at, start))
            elif isinstance(event, FlushEvent):
                flushes.add(_offset(event.at, start))
            elif isinstance(event, InstanceEvent):
                at = _between(event.at_between, start, rng)
                pick = -1.0 - event.instance if event.instance is not None else rng.uniform(0.0, 1.0)
                faults.append(InstanceFault(at, event.what, pick, speed=1.0 / event.slowdown.draw(rng)))
            elif isinstance(event, BrownoutEvent):  # draws in order: its time, its length, its slowdown
                if event.at is not None:
                    at = _offset(event.at, start)
                else:
                    assert event.at_between is not None  # the model's validator: one of the two
                    at = _between(event.at_between, start, rng)
                length = event.minutes if isinstance(event.minutes, int) else round(event.minutes.draw(rng))
                slowdown = event.slowdown if isinstance(event.slowdown, float) else event.slowdown.draw(rng)
                brownouts.append((at, length, slowdown))
            elif isinstance(event, ServiceEvent):
                at = _offset(event.at, start) if event.at is not None else _between(event.at_between, start, rng)  # type: ignore[arg-type]
                assert self.graph is not None  # the model's validator
                service = list(self.graph.services).index(event.service)
                service_faults.append(ServiceFault(at, service, event.minutes, event.slowdown, event.errors))
            elif isinstance(event, ZoneOutageEvent):
                at = _between(event.at_between, start, rng)
                share = event.share.draw(rng)
                faults.append(InstanceFault(at, "zone", 0.0, share=share, minutes=round(event.minutes.draw(rng))))
            else:
                lo, hi = (_offset(c, start) for c in event.onset_between)
                onset = Range(low=lo, high=hi if hi >= lo else hi + 1440).draw(rng)
                surge = Surge(onset, event.peak.draw(rng), event.rise_min.draw(rng), event.decay_min.draw(rng))
        return RunPlan(
            clock_start_min=start,
            minutes=self.minutes if minutes is None else minutes,
            surge=surge,
            deploy_minutes=frozenset(deploys),
            flush_minutes=frozenset(flushes),
            budget_start=self.budget_start,
            faults=tuple(sorted(faults, key=lambda f: f.minute)),
            brownouts=tuple(sorted(brownouts)),
            speeds=tuple(self.fleet.speeds),
            weights=tuple(float(w) for w in self.fleet.weights),
            graph=None if self.graph is None else layout_of(self.graph),
            service_faults=tuple(sorted(service_faults, key=lambda f: (f.minute, f.service))),
        )


def _between(clocks: tuple[str, str], start: int, rng: Mulberry32) -> int:
    """A minute drawn uniformly between two clocks (the same clock twice: that minute, no draw)."""
    lo, hi = (_offset(c, start) for c in clocks)
    if lo == hi:
        return lo
    return math.floor(Range(low=lo, high=hi if hi >= lo else hi + 1440).draw(rng))


def _offset(clock: str, start: int) -> int:
    """Minutes from the start to the next time the clock shows ``clock``."""
    return (parse_clock(clock) - start) % 1440
