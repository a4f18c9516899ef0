"""A Gymnasium environment over the same scenarios: the console as the observation, the controls as the action.

``reset(seed=s)`` starts exactly the run ``oncallsim run SCENARIO --seed s`` makes; each ``step`` is one minute.
Observation, action and reward are documented in docs/guide.md (and below, field by field).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from oncallsim.model import CONTROL_SPECS, SETTINGS, Controls, MinuteRecord
from oncallsim.model.chain.controls import SERVICE_SETTINGS, coerce_service_control, service_settings, split_control
from oncallsim.model.chain.engine import CHAIN_CONTROLS
from oncallsim.model.chain.layout import ChainLayout
from oncallsim.model.controls import INSTANCE_ACTIONS, WORLD_SETTINGS
from oncallsim.model.errors import InvalidInput
from oncallsim.model.fields import ST
from oncallsim.simulation import MAX_SEED, Simulation

__all__ = ["OBSERVATION", "REWARD_WEIGHTS", "OncallEnv", "action_space"]

BUTTONS_IN_ORDER = tuple(name for name, spec in CONTROL_SPECS.items() if spec.kind == "button")


def _control_bounds(name: str) -> tuple[float, float]:
    spec = CONTROL_SPECS[name]
    if spec.kind == "bool":
        return 0.0, 1.0
    if spec.kind == "choice":
        return 0.0, float(len(spec.choices) - 1)
    assert spec.min is not None and spec.max is not None
    return float(spec.min), float(spec.max)


def _obs(name: str, low: float, high: float, unit: str) -> tuple[str, float, float, str]:
    return (name, low, high, unit)


# (field, low, high, unit): what the operator sees on the console, in this order. Controls take their
# bounds from the control registry.
OBSERVATION: tuple[tuple[str, float, float, str], ...] = (
    _obs("burn_1h", 0.0, 1000.0, "× the error budget's rate"),
    _obs("burn_5m", 0.0, 1000.0, "× the error budget's rate"),
    _obs("requests_per_s", 0.0, 1e6, "req/s"),
    _obs("serving", 0.0, 1000.0, "instances"),
    _obs("booting", 0.0, 1000.0, "instances"),
    _obs("cache_hit", 0.0, 1.0, "fraction"),
    _obs("cache_warm", 0.0, 1.0, "fraction"),
    _obs("db_utilization", 0.0, 100.0, "fraction (may exceed 1)"),
    _obs("shed_share", *_control_bounds("shed_share"), "fraction of the low-priority traffic"),
    _obs("cost_per_hour", 0.0, 1e5, "$/h"),
    _obs("mean_age_s", 0.0, _control_bounds("ttl_s")[1], "s"),
    _obs("bad_build_share", 0.0, 1.0, "fraction"),
    _obs("recommendations_available", 0.0, 1.0, "fraction"),
    _obs("p99_ms", 0.0, 600_000.0, "ms"),
    _obs("error_rate", 0.0, 1.0, "fraction"),
    _obs("budget_left", -1e4, 1.0, "fraction of the 30-day budget"),
    _obs("page_firing", 0.0, 1.0, "0/1"),
    _obs("floor", *_control_bounds("floor"), "instances"),
    _obs("autoscaler", *_control_bounds("autoscaler"), "0/1"),
    _obs("target_utilization", *_control_bounds("target_utilization"), "fraction"),
    _obs("ttl_s", *_control_bounds("ttl_s"), "s"),
    _obs("rollback_active", 0.0, 1.0, "0/1"),
    _obs("warmup_active", 0.0, 1.0, "0/1"),
    _obs("time_left", 0.0, 1.0, "fraction of the run"),
)
_LOWS = np.array([o[1] for o in OBSERVATION], dtype=np.float32)
_HIGHS = np.array([o[2] for o in OBSERVATION], dtype=np.float32)
# Where each observed field sits in a MinuteRecord (time_left is computed).
_RECORD_INDEX = [MinuteRecord._fields.index(o[0]) for o in OBSERVATION[:-1]]
_OBSERVED = operator.itemgetter(*_RECORD_INDEX)
# Where each setting of the state vector sits (a switch as 0/1, a whole number as a float).
_VECTOR_INDEX = {name: getattr(ST, name) for name in SETTINGS}
# A number's resolution in an action, by kind: what a console slider can set.
_DECIMALS = {"fraction": 4, "seconds": 1}


def observation_space() -> spaces.Box:
    """The console's values of ``OBSERVATION``, within their documented bounds."""
    return spaces.Box(_LOWS, _HIGHS, dtype=np.float32)


def action_space(engine: str = "minute", instances: int = 40) -> spaces.Dict:
    """One entry per control of the registry that ``engine`` has: whole numbers, switches, choices and buttons
    are discrete; an action on an instance is 0 (none) or 1 + the instance's id (``instances`` of them)."""
    entries: dict[str, spaces.Space[Any]] = {}
    for name, spec in CONTROL_SPECS.items():
        if engine not in spec.engines:
            continue
        if spec.kind == "instance":
            entries[name] = spaces.Discrete(instances + 1)
        elif spec.kind == "int":
            assert spec.min is not None and spec.max is not None
            entries[name] = spaces.Discrete(int(spec.max) - int(spec.min) + 1, start=int(spec.min))
        elif spec.kind in ("bool", "button"):
            entries[name] = spaces.Discrete(2)
        elif spec.kind == "choice":
            entries[name] = spaces.Discrete(len(spec.offered))
        else:
            low, high = _control_bounds(name)
            entries[name] = spaces.Box(low, high, shape=(), dtype=np.float32)
    return spaces.Dict(entries)


def service_controls(layout: ChainLayout) -> tuple[str, ...]:
    """A chain's ``<service>.<setting>`` controls an agent may set: every service's, but the entry's instances
    (the fleet's, ``floor``) and timeout (its clients' deadline)."""
    entry = layout.services[layout.entry].name
    return tuple(
        f"{s.name}.{setting}"
        for s in layout.services
        for setting in SERVICE_SETTINGS
        if not (s.name == entry and setting in ("instances", "timeout_ms"))
    )


def service_action_space(names: tuple[str, ...]) -> dict[str, spaces.Space[Any]]:
    """Each service setting as a number within its range (0 where 0 takes the setting away): a Box, rounded to
    what the setting takes (``service_value``)."""
    out: dict[str, spaces.Space[Any]] = {}
    for name in names:
        spec = SERVICE_SETTINGS[split_control(name)[1]]
        out[name] = spaces.Box(0.0 if spec.off else spec.low, spec.high, shape=(), dtype=np.float32)
    return out


def service_value(name: str, raw: Any) -> float:
    """An action entry as the service setting's value: whole where the setting is, else to 4 decimals. Between
    0 and the range (a timeout of 0.5 ms, where 0 means none) it is refused as on every surface, never rounded
    to "off"."""
    spec = SERVICE_SETTINGS[split_control(name)[1]]
    value = float(raw)
    return float(round(value)) if spec.whole else round(value, 4)


def _converter(name: str) -> Callable[[Any], Any]:
    spec = CONTROL_SPECS[name]
    if spec.kind == "int":
        return int
    if spec.kind == "bool":
        return bool
    if spec.kind == "choice":
        return lambda raw: spec.offered[int(raw)]
    digits = _DECIMALS.get(spec.kind, 4)
    return lambda raw: round(float(raw), digits)


_CONVERTERS = {name: _converter(name) for name, spec in CONTROL_SPECS.items() if spec.is_setting}


def wanted_value(name: str, raw: Any) -> Any:
    """An action entry as the control's value (rounded to what the console can set)."""
    return _CONVERTERS[name](raw)


def action_entry(name: str, value: Any) -> Any:
    """The inverse of ``wanted_value``: a control's value as its action-space entry."""
    spec = CONTROL_SPECS[name]
    if spec.kind == "button":
        return 1
    if spec.kind == "int":
        return int(value)
    if spec.kind == "bool":
        return int(bool(value))
    if spec.kind == "choice":
        return spec.offered.index(value)
    return np.float32(value)


# The reward: minus what the minute cost, in dollars. 1 % of the 30-day error budget is priced at $10, the
# fleet at its bill, a minute with p99 over the scenario's latency target at $0.05, and shed traffic at $1
# per 100,000 requests (the debrief's costs: budget burned, money, latency, shed).
REWARD_WEIGHTS = {"budget_per_percent": 10.0, "latency_minute": 0.05, "shed_per_request": 1e-5}


def opening_observation(controls: Controls, budget_start: float) -> np.ndarray:
    """What the console shows before the first minute: the controls, a warm cache, the floor serving."""
    opening = {
        "budget_left": budget_start,
        "cache_warm": 1.0,
        "recommendations_available": 1.0 if controls.recommendations else 0.0,
        "serving": float(controls.floor),
    }
    values = [float(getattr(controls, o[0])) if o[0] in SETTINGS else opening.get(o[0], 0.0) for o in OBSERVATION[:-1]]
    return clip_observation(np.array([*values, 1.0], dtype=np.float32))  # all the run's time left


def clip_observation(obs: np.ndarray) -> np.ndarray:
    """Observations (one, or one per run) within the space's documented bounds (never reached in play)."""
    np.maximum(obs, _LOWS, out=obs)
    np.minimum(obs, _HIGHS, out=obs)
    return obs


def minute_reward(
    before_budget: Any, budget_left: Any, cost_per_hour: Any, p99_ms: Any, shed_per_s: Any, latency_target_ms: float
) -> Any:
    """Minus what the minute cost, in dollars (floats, or arrays of runs for the vector env)."""
    return -(
        (before_budget - budget_left) * 100.0 * REWARD_WEIGHTS["budget_per_percent"]
        + cost_per_hour / 60.0
        + (p99_ms > latency_target_ms) * REWARD_WEIGHTS["latency_minute"]
        + shed_per_s * 60.0 * REWARD_WEIGHTS["shed_per_request"]
    )


class OncallEnv(gym.Env[np.ndarray, dict[str, Any]]):
    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012  (Gymnasium declares it so)

    def __init__(
        self,
        scenario: str = "bad-deploy",
        overrides: dict[str, Any] | None = None,
        noise: bool = True,
        render_mode: str | None = None,
        engine: str | None = None,
    ) -> None:
        self.scenario = scenario
        self.overrides = dict(overrides or {})
        self.noise = noise
        self.render_mode = render_mode
        self.engine = engine
        probe = Simulation(scenario, overrides=self.overrides, noise=noise, minutes=1, engine=engine)
        self.latency_target_ms = probe.scenario.latency_target_ms
        self.observation_space = observation_space()
        self.engine = probe.engine.name
        self.action_space = action_space(self.engine, probe.params.max_fleet)
        self.settings = SETTINGS + (WORLD_SETTINGS if self.engine == "request" else ())
        self.instance_actions = tuple(n for n in CONTROL_SPECS if n in INSTANCE_ACTIONS and self.engine == "request")
        self.buttons = BUTTONS_IN_ORDER
        self.graph = probe.plan.graph
        self.service_controls: tuple[str, ...] = ()
        if self.graph is not None:  # a chain: what reaches it of the one service's controls, and each service's
            self.settings = tuple(name for name in self.settings if name in CHAIN_CONTROLS)
            self.instance_actions = self.buttons = ()
            self.service_controls = service_controls(self.graph)
            kept = {name: space for name, space in self.action_space.spaces.items() if name in self.settings}
            self.action_space = spaces.Dict({**kept, **service_action_space(self.service_controls)})
        self.sim: Simulation | None = None
        self.refused: list[str] = []  # the last step's instance actions that could not be taken (no-ops)

    def _observe(self, record: MinuteRecord | None) -> np.ndarray:
        assert self.sim is not None
        time_left = 1.0 - self.sim.minute / self.sim.plan.minutes
        if record is None:
            return opening_observation(self.sim.state.controls, self.sim.plan.budget_start)
        # the controls in force after this minute's actions are the record's own control fields
        return clip_observation(np.array((*_OBSERVED(record), time_left), dtype=np.float32))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        run_seed = seed if seed is not None else int(self.np_random.integers(0, MAX_SEED + 1))
        self.sim = Simulation(
            self.scenario, seed=run_seed, overrides=self.overrides, noise=self.noise, engine=self.engine
        )
        return self._observe(None), {"seed": run_seed, "minute": 0}

    def to_actions(self, action: dict[str, Any]) -> list[tuple[str, Any]]:
        """The action's settings that differ from the controls in force, then the buttons pressed, then the
        actions on instances. One the run cannot take now (an instance that is not there, adaptive-lifo without a
        queue limit) is a no-op, its reason in ``info["refused"]``: an agent explores, it does not crash."""
        assert self.sim is not None
        vec = self.sim.state.vec.tolist()  # the settings both engines have, as the state vector holds them
        controls = self.sim.state.controls if self.engine == "request" else None  # the world's settings
        wanted: list[tuple[str, Any]] = []
        for name in self.settings:
            value = wanted_value(name, action[name])
            index = _VECTOR_INDEX.get(name)
            differs = vec[index] != float(value) if index is not None else getattr(controls, name) != value
            if differs:
                wanted.append((name, value))
        wanted += [(button, None) for button in self.buttons if int(action[button])]
        wanted += [(name, int(action[name]) - 1) for name in self.instance_actions if int(action[name])]
        if self.graph is not None:
            in_force = service_settings(self.graph, ((a.control, a.value) for a in self.sim.actions))
            for name in self.service_controls:
                service, setting = split_control(name)
                value = service_value(name, action[name])
                if in_force[service][setting] != value:
                    wanted.append((name, value))
        self.refused = []
        out: list[tuple[str, Any]] = []
        for name, value in wanted:
            try:
                if "." in name:  # a service's setting: its range as every surface checks it
                    value = coerce_service_control(name, value)
                self.sim.engine.check_action(self.sim.state, name, value)
            except InvalidInput as exc:
                self.refused.append(str(exc))
                continue
            out.append((name, value))
        return out

    def step(self, action: dict[str, Any]) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        before_budget = self.sim.state.budget_left
        record = self.sim.step(self.to_actions(action))
        reward = minute_reward(
            before_budget,
            record.budget_left,
            record.cost_per_hour,
            record.p99_ms,
            record.shed_per_s,
            self.latency_target_ms,
        )
        info = {"record": record.to_dict(), "refused": self.refused}
        return self._observe(record), float(reward), self.sim.done, False, info

    def hold(self) -> dict[str, Any]:
        """The action that changes nothing (the controls in force, no button)."""
        assert self.sim is not None
        c = self.sim.state.controls
        action = {name: action_entry(name, getattr(c, name)) for name in self.settings}
        action.update({button: 0 for button in self.buttons})
        action.update({name: 0 for name in self.instance_actions})
        if self.graph is not None:
            in_force = service_settings(self.graph, ((a.control, a.value) for a in self.sim.actions))
            for name in self.service_controls:
                service, setting = split_control(name)
                action[name] = np.float32(in_force[service][setting])
        return action

    def action_from(self, actions: list[tuple[str, Any]]) -> dict[str, Any]:
        """An action dict from (control, value) pairs, e.g. what a ``Policy`` decided; the rest held."""
        action = self.hold()
        for name, value in actions:
            if "." in name:
                action[name] = np.float32(value)
            else:
                action[name] = int(value) + 1 if name in INSTANCE_ACTIONS else action_entry(name, value)
        return action

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        if self.sim is None or not self.sim.timeline:
            return "no minute played yet"
        r = self.sim.timeline[-1]
        return (
            f"{r.clock} req/s {r.requests_per_s:.0f} serving {r.serving}+{r.booting} hit {r.cache_hit:.0%} "
            f"db {r.db_utilization:.0%} p99 {r.p99_ms:.0f} ms errors {r.error_rate:.2%} burn {r.burn_1h:.1f}× "
            f"budget {r.budget_left:.1%}"
        )
