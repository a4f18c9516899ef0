"""Gymnasium environments (the ``gym`` extra). ``import oncallsim.gym`` registers one per built-in scenario,
named from its id (``free-play`` → ``oncallsim/FreePlay-v0``), with a single-run entry point (``OncallEnv``)
and a vector one on the batch engine (``OncallVectorEnv``, for ``gymnasium.make_vec(…,
vectorization_mode="vector_entry_point")``)."""

import gymnasium

from oncallsim.gym.env import OBSERVATION, REWARD_WEIGHTS, OncallEnv
from oncallsim.gym.vector import OncallVectorEnv
from oncallsim.scenarios import builtin_scenarios

__all__ = ["ENV_IDS", "OBSERVATION", "REWARD_WEIGHTS", "OncallEnv", "OncallVectorEnv", "env_id"]


def env_id(scenario_id: str) -> str:
    return "oncallsim/" + "".join(part.capitalize() for part in scenario_id.split("-")) + "-v0"


ENV_IDS = {env_id(scenario): scenario for scenario in builtin_scenarios()}

for _env_id, _scenario in ENV_IDS.items():
    if _env_id not in gymnasium.registry:
        gymnasium.register(
            _env_id,
            entry_point="oncallsim.gym.env:OncallEnv",
            vector_entry_point="oncallsim.gym.vector:OncallVectorEnv",
            kwargs={"scenario": _scenario},
            disable_env_checker=False,
        )
