"""The engine seam: what ``Simulation`` asks of an engine, and the engines there are.

An engine lays out a run's opening state and computes one minute from it: the minute model (``minute``, the
formulas) and the request-level engine (``request``, every request simulated: ``model/request/``). Run files
name their engine (absent = minute).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from oncallsim.model.controls import Controls
from oncallsim.model.errors import InvalidInput
from oncallsim.model.params import Params
from oncallsim.model.plan import RunPlan
from oncallsim.model.record import MinuteRecord
from oncallsim.model.rng import Mulberry32
from oncallsim.model.state import State, initial_state
from oncallsim.model.step import advance

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "PREPARED_PARTS",
    "Engine",
    "MinuteEngine",
    "check_part",
    "get_engine",
    "parts_for",
    "prepare",
    "prepare_chain",
    "prepare_part",
    "refuse_faults",
]


class Engine(Protocol):
    name: str
    vectorized: bool  # the batch layer runs it as one compiled loop over runs; else run by run

    def initial(self, plan: RunPlan, controls: Controls, params: Params, seed: int = 0) -> State:
        """Minute 0's state; ``seed`` seeds what the engine draws besides the run's own generator."""
        ...

    def step(
        self, state: State, actions: Iterable[tuple[str, Any]], rng: Mulberry32 | None, params: Params
    ) -> tuple[State, MinuteRecord]:
        """The next minute; ``state`` may be reused for the next state (the caller drops it)."""
        ...

    def check_action(self, state: State, control: str, value: Any) -> None:
        """Refuse (``InvalidInput``) an action the run's state cannot take now (an instance that is not there)."""
        ...

    def check_plan(self, plan: RunPlan, params: Params) -> None:
        """Refuse (``InvalidInput``) a plan the engine cannot play: at the start (``initial``) and for a plan an
        injected event changed (``Simulation.inject``), before anything changes."""
        ...


class MinuteEngine:
    """The minute model: textbook formulas, one compiled minute (``model.stages``)."""

    name = "minute"
    vectorized = True

    def check_plan(self, plan: RunPlan, params: Params) -> None:
        refuse_faults(plan, self.name)

    def initial(self, plan: RunPlan, controls: Controls, params: Params, seed: int = 0) -> State:
        self.check_plan(plan, params)
        return initial_state(plan, controls, params)

    def step(
        self, state: State, actions: Iterable[tuple[str, Any]], rng: Mulberry32 | None, params: Params
    ) -> tuple[State, MinuteRecord]:
        return advance(state, actions, rng, params)

    def check_action(self, state: State, control: str, value: Any) -> None:
        if "." in control:  # a chain's service: the minute model has one service
            from oncallsim.model.chain.controls import check_service_action

            check_service_action(control, (), None)


def refuse_faults(plan: RunPlan, engine: str) -> None:
    """The minute model has no instances and one service: a plan with instance or zone events, with instances of
    their own speeds and weights, or with a chain of services (a graph), needs the request engine."""
    if plan.faults:
        raise InvalidInput(
            "events",
            f"instance and zone events belong to the request engine; this run uses the {engine} engine "
            "(start it with --engine request)",
        )
    if plan.graph is not None:
        raise InvalidInput(
            "graph",
            f"a chain of services plays on the request engine, which simulates every request; this run uses the "
            f"{engine} engine (start it with --engine request)",
        )
    if plan.speeds or plan.weights:
        raise InvalidInput(
            "fleet",
            f"instances' speeds and weights belong to the request engine; this run uses the {engine} engine "
            "(start it with --engine request)",
        )


def _engines() -> dict[str, Engine]:
    from oncallsim.model.request.engine import RequestEngine

    return {"minute": MinuteEngine(), "request": RequestEngine()}


ENGINES: dict[str, Engine] = _engines()
DEFAULT_ENGINE = "minute"


def get_engine(name: str) -> Engine:
    if not isinstance(name, str) or name not in ENGINES:
        raise InvalidInput(
            "engine", f"must be one of {', '.join(ENGINES)}, got {name!r}", "choice", allowed=tuple(ENGINES), got=name
        )
    return ENGINES[name]


# What is compiled once on a machine, each part on its own (readiness.py): the two engines, and the request
# engine's chains of services — a graph's event loop, some seconds of CPU more that a one-service run never needs,
# so it is compiled after the engines and only a graph's run waits for it.
PREPARED_PARTS = ("minute", "request", "chain")


def parts_for(engine: str, graph: bool = False) -> tuple[str, ...]:
    """The parts a run of ``engine`` needs compiled (a graph: the chain as well)."""
    return (engine, "chain") if graph else (engine,)


def check_part(name: object) -> str:
    if not isinstance(name, str) or name not in PREPARED_PARTS:
        raise InvalidInput(
            "engine",
            f"must be one of {', '.join(PREPARED_PARTS)}, got {name!r}",
            "choice",
            allowed=PREPARED_PARTS,
            got=name,
        )
    return name


def prepare(engine: Engine) -> None:
    """Compile (or load from numba's cache) what a one-service run of ``engine`` calls, by playing two minutes of
    a tiny plan with a deploy and a flush: the first use on a machine compiles for up to a minute, and a surface
    can say so before it starts instead of looking frozen."""
    params = Params(max_fleet=2, hot_objects=100.0)
    plan = RunPlan(minutes=2, deploy_minutes=frozenset({0}), flush_minutes=frozenset({1}))
    state = engine.initial(plan, Controls(floor=1), params, 0)
    rng = Mulberry32(0)
    for _ in range(plan.minutes):
        state, _ = engine.step(state, [("warmup", None)] if state.minute == 1 else [], rng, params)


def prepare_chain() -> None:
    """Compile (or load) the request engine's chain of services: a minute of a tiny chain, then a timeout
    changed (its timers requeued)."""
    from oncallsim.model.chain.layout import tiny_chain

    engine = ENGINES["request"]
    params = Params(max_fleet=2, hot_objects=100.0)
    rng = Mulberry32(0)
    state = engine.initial(RunPlan(minutes=2, graph=tiny_chain()), Controls(floor=1), params, 0)
    state, _ = engine.step(state, [], rng, params)
    engine.step(state, [("leaf.timeout_ms", 30.0)], rng, params)


def prepare_part(name: str) -> None:
    """Compile (or load) one of ``PREPARED_PARTS``."""
    if check_part(name) == "chain":
        prepare_chain()
    else:
        prepare(ENGINES[name])
