"""A Gymnasium environment over the same scenarios: the console as the observation, the controls as the action.

``reset(seed=s)`` starts exactly the run ``oncallsim run SCENARIO --seed s`` makes; each ``step`` is one minute.
Observation, action and reward are documented in docs/guide.md (and below, field by field).
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from oncallsim.model import CONTROL_SPECS, MinuteRecord
from oncallsim.simulation import MAX_SEED, Simulation

__all__ = ["OBSERVATION", "REWARD_WEIGHTS", "OncallEnv"]

# (field, low, high, unit): what the operator sees on the console, in this order.
OBSERVATION: tuple[tuple[str, float, float, str], ...] = (
    ("burn_1h", 0.0, 1000.0, "× the error budget's rate"),
    ("burn_5m", 0.0, 1000.0, "× the error budget's rate"),
    ("requests_per_s", 0.0, 1e6, "req/s"),
    ("serving", 0.0, 1000.0, "instances"),
    ("booting", 0.0, 1000.0, "instances"),
    ("cache_hit", 0.0, 1.0, "fraction"),
    ("cache_warm", 0.0, 1.0, "fraction"),
    ("db_utilization", 0.0, 100.0, "fraction (may exceed 1)"),
    ("shed_share", 0.0, 1.0, "fraction of the low-priority traffic"),
    ("cost_per_hour", 0.0, 1e5, "$/h"),
    ("mean_age_s", 0.0, 600.0, "s"),
    ("bad_build_share", 0.0, 1.0, "fraction"),
    ("recommendations_available", 0.0, 1.0, "fraction"),
    ("p99_ms", 0.0, 600_000.0, "ms"),
    ("error_rate", 0.0, 1.0, "fraction"),
    ("budget_left", -1e4, 1.0, "fraction of the 30-day budget"),
    ("page_firing", 0.0, 1.0, "0/1"),
    ("floor", 1.0, 40.0, "instances"),
    ("autoscaler", 0.0, 1.0, "0/1"),
    ("target_utilization", 0.3, 0.9, "fraction"),
    ("ttl_s", 0.0, 600.0, "s"),
    ("rollback_active", 0.0, 1.0, "0/1"),
    ("warmup_active", 0.0, 1.0, "0/1"),
    ("time_left", 0.0, 1.0, "fraction of the run"),
)

# The reward: minus what the minute cost, in dollars. 1 % of the 30-day error budget is priced at $10, the
# fleet at its bill, a minute with p99 over the scenario's latency target at $0.05, and shed traffic at $1
# per 100,000 requests (the debrief's costs: budget burned, money, latency, shed).
REWARD_WEIGHTS = {"budget_per_percent": 10.0, "latency_minute": 0.05, "shed_per_request": 1e-5}


class OncallEnv(gym.Env[np.ndarray, dict[str, Any]]):
    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012  (Gymnasium declares it so)

    def __init__(
        self,
        scenario: str = "bad-deploy",
        overrides: dict[str, Any] | None = None,
        noise: bool = True,
        render_mode: str | None = None,
    ) -> None:
        self.scenario = scenario
        self.overrides = dict(overrides or {})
        self.noise = noise
        self.render_mode = render_mode
        probe = Simulation(scenario, overrides=self.overrides, noise=noise, minutes=1)
        self.length = probe.plan.minutes
        self.latency_target_ms = probe.scenario.latency_target_ms
        lows = np.array([o[1] for o in OBSERVATION], dtype=np.float32)
        highs = np.array([o[2] for o in OBSERVATION], dtype=np.float32)
        self.observation_space = spaces.Box(lows, highs, dtype=np.float32)
        floor = CONTROL_SPECS["floor"]
        assert floor.min is not None and floor.max is not None
        self.action_space = spaces.Dict(
            {
                "floor": spaces.Discrete(int(floor.max) - int(floor.min) + 1, start=int(floor.min)),
                "autoscaler": spaces.Discrete(2),
                "target_utilization": spaces.Box(0.3, 0.9, shape=(), dtype=np.float32),
                "ttl_s": spaces.Box(0.0, 600.0, shape=(), dtype=np.float32),
                "shed_share": spaces.Box(0.0, 1.0, shape=(), dtype=np.float32),
                "recommendations": spaces.Discrete(2),
                "warmup": spaces.Discrete(2),
                "rollback": spaces.Discrete(2),
            }
        )
        self.sim: Simulation | None = None

    def _observe(self, record: MinuteRecord | None) -> np.ndarray:
        assert self.sim is not None
        controls = self.sim.state.controls
        values = []
        for name, low, high, _unit in OBSERVATION:
            if name == "time_left":
                value = 1.0 - self.sim.minute / self.length
            elif name in ("floor", "autoscaler", "target_utilization", "ttl_s"):
                value = float(getattr(controls, name))
            elif record is None:
                value = {
                    "budget_left": self.sim.plan.budget_start,
                    "cache_warm": 1.0,
                    "cache_hit": 0.0,
                    "recommendations_available": 1.0 if controls.recommendations else 0.0,
                    "serving": float(controls.floor),
                }.get(name, 0.0)
            else:
                value = float(getattr(record, name))
            values.append(min(high, max(low, value)))  # the space's documented bounds (never reached in play)
        return np.array(values, dtype=np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        run_seed = seed if seed is not None else int(self.np_random.integers(0, MAX_SEED + 1))
        self.sim = Simulation(self.scenario, seed=run_seed, overrides=self.overrides, noise=self.noise)
        return self._observe(None), {"seed": run_seed, "minute": 0}

    def to_actions(self, action: dict[str, Any]) -> list[tuple[str, Any]]:
        """The action's settings that differ from the controls in force, then the buttons pressed."""
        assert self.sim is not None
        controls = self.sim.state.controls
        wanted = {
            "floor": int(action["floor"]),
            "autoscaler": bool(action["autoscaler"]),
            "target_utilization": round(float(action["target_utilization"]), 4),
            "ttl_s": round(float(action["ttl_s"]), 1),
            "shed_share": round(float(action["shed_share"]), 4),
            "recommendations": bool(action["recommendations"]),
        }
        out: list[tuple[str, Any]] = [(k, v) for k, v in wanted.items() if getattr(controls, k) != v]
        out += [(button, None) for button in ("warmup", "rollback") if int(action[button])]
        return out

    def step(self, action: dict[str, Any]) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        before_budget = self.sim.state.budget_left
        record = self.sim.step(self.to_actions(action))
        reward = -(
            (before_budget - record.budget_left) * 100.0 * REWARD_WEIGHTS["budget_per_percent"]
            + record.cost_per_hour / 60.0
            + (REWARD_WEIGHTS["latency_minute"] if record.p99_ms > self.latency_target_ms else 0.0)
            + record.shed_per_s * 60.0 * REWARD_WEIGHTS["shed_per_request"]
        )
        return self._observe(record), float(reward), self.sim.done, False, {"record": record.to_dict()}

    def hold(self) -> dict[str, Any]:
        """The action that changes nothing (the controls in force, no button)."""
        assert self.sim is not None
        c = self.sim.state.controls
        return {
            "floor": c.floor,
            "autoscaler": int(c.autoscaler),
            "target_utilization": np.float32(c.target_utilization),
            "ttl_s": np.float32(c.ttl_s),
            "shed_share": np.float32(c.shed_share),
            "recommendations": int(c.recommendations),
            "warmup": 0,
            "rollback": 0,
        }

    def action_from(self, actions: list[tuple[str, Any]]) -> dict[str, Any]:
        """An action dict from (control, value) pairs, e.g. what a ``Policy`` decided; the rest held."""
        action = self.hold()
        for name, value in actions:
            if name in ("warmup", "rollback"):
                action[name] = 1
            elif name in ("autoscaler", "recommendations"):
                action[name] = int(bool(value))
            elif name == "floor":
                action[name] = int(value)
            else:
                action[name] = np.float32(value)
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
