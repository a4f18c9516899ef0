"""A vector environment on the batch engine: ``num_envs`` runs of one scenario advanced together.

The observation, action and reward of each run are ``OncallEnv``'s; sub-environment i with seed s gives the
records ``OncallEnv`` gives with ``reset(seed=s)``. All runs of a scenario end at the same minute; the step
after the end starts new runs (Gymnasium's next-step autoreset), with the next seeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from oncallsim.batch.engine import BatchRun, Coded
from oncallsim.gym.env import (
    BUTTONS_IN_ORDER,
    OBSERVATION,
    action_space,
    clip_observation,
    minute_reward,
    observation_space,
    opening_observation,
    wanted_value,
)
from oncallsim.model import CONTROL_SPECS, SETTINGS, InvalidInput
from oncallsim.model.engine import get_engine
from oncallsim.model.fields import ST
from oncallsim.scenarios import load_scenario
from oncallsim.simulation import MAX_SEED, Simulation

__all__ = ["OncallVectorEnv"]

_FIELDS = [o[0] for o in OBSERVATION[:-1]]
_CODES = {name: code for code, name in enumerate(CONTROL_SPECS)}  # a control's code in a ``Coded`` decision


class OncallVectorEnv(VectorEnv[npt.NDArray[np.float32], dict[str, Any], npt.NDArray[np.float64]]):
    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}  # noqa: RUF012  (Gymnasium declares it so)

    def __init__(
        self,
        num_envs: int,
        scenario: str = "bad-deploy",
        overrides: dict[str, Any] | None = None,
        noise: bool = True,
        engine: str | None = None,
    ) -> None:
        engine = engine or load_scenario(scenario).engine or "minute"  # the scenario's engine unless told
        if not get_engine(engine).vectorized:
            raise InvalidInput(
                "engine",
                f"the vector env runs vectorized engines only (minute), got {engine!r}; for the {engine} engine use "
                f"gymnasium.make_vec(..., vectorization_mode='sync', engine={engine!r})",
            )
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or not 1 <= num_envs <= 100_000:
            raise ValueError(f"num_envs must be a whole number from 1 to 100000, got {num_envs!r}")
        self.num_envs = num_envs
        self.scenario = scenario
        self.overrides = dict(overrides or {})
        self.noise = noise
        probe = Simulation(scenario, overrides=self.overrides, noise=noise, minutes=1)
        self.latency_target_ms = probe.scenario.latency_target_ms
        self.single_observation_space = observation_space()
        self.single_action_space = action_space()
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.batch: BatchRun | None = None
        self._ended = False

    def _start(self, seeds: list[int]) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        self.batch = BatchRun(self.scenario, seeds, self.overrides, self.noise, keep=())
        self._ended = False
        obs = np.tile(opening_observation(self.batch.opening, 0.0), (self.num_envs, 1))
        obs[:, _FIELDS.index("budget_left")] = self.batch.budget  # each run's opening budget
        return clip_observation(obs), {"seed": np.array(seeds, dtype=np.int64)}

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        super().reset(seed=seed if isinstance(seed, int) else None)
        if isinstance(seed, list):
            seeds = [int(s) for s in seed]
        elif isinstance(seed, int):
            seeds = [(seed + i) % (MAX_SEED + 1) for i in range(self.num_envs)]
        else:
            seeds = [int(s) for s in self.np_random.integers(0, MAX_SEED + 1, size=self.num_envs)]
        if len(seeds) != self.num_envs:
            raise ValueError(f"seed: need {self.num_envs} seeds, got {len(seeds)}")
        return self._start(seeds)

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float64], Any, Any, dict[str, Any]]:
        if self.batch is None:
            raise RuntimeError("call reset() before step()")
        n = self.num_envs
        if self._ended:  # next-step autoreset: new runs, with the next seeds
            obs, info = self._start([(s + n) % (MAX_SEED + 1) for s in self.batch.seeds])
            return obs, np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), info
        batch = self.batch
        # each run's actions as OncallEnv.to_actions makes them (the settings that differ, in order, then the
        # buttons pressed), handed to the batch as arrays: no Python object per action
        runs, codes, values = [], [], []
        for name in SETTINGS:
            current = batch.setting(name)
            wanted = np.asarray([wanted_value(name, v) for v in np.asarray(actions[name]).tolist()])
            changed = np.flatnonzero(wanted.astype(current.dtype) != current)
            runs.append(changed)
            codes.append(np.full(len(changed), _CODES[name]))
            values.append(wanted[changed].astype(np.float64))  # 0/1 for a switch, a whole number exactly
        for button in BUTTONS_IN_ORDER:
            pressed = np.flatnonzero(np.asarray(actions[button]).astype(bool))
            runs.append(pressed)
            codes.append(np.full(len(pressed), _CODES[button]))
            values.append(np.zeros(len(pressed)))
        order = np.argsort(np.concatenate(runs), kind="stable")  # by run, each run's in the order above
        coded = Coded(np.concatenate(runs)[order], np.concatenate(codes)[order], np.concatenate(values)[order])
        before = batch.state[:, ST.budget_left].copy()
        batch.step(coded)
        f = batch.last
        assert f is not None  # a minute was just computed
        reward = minute_reward(
            before, f["budget_left"], f["cost_per_hour"], f["p99_ms"], f["shed_per_s"], self.latency_target_ms
        )
        obs = np.empty((n, len(OBSERVATION)), dtype=np.float32)
        for k, name in enumerate(_FIELDS):
            obs[:, k] = f[name]
        obs[:, -1] = 1.0 - batch.t / batch.length
        self._ended = batch.done
        ended = np.full(n, batch.done)
        return clip_observation(obs), np.asarray(reward, dtype=np.float64), ended, np.zeros(n, dtype=bool), {}
