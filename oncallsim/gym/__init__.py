"""Gymnasium environments (the ``gym`` extra). ``import oncallsim.gym`` registers one per scenario:
oncallsim/FreePlay-v0, oncallsim/BadDeploy-v0, oncallsim/Surge-v0, oncallsim/CacheFlush-v0."""

import gymnasium

from oncallsim.gym.env import OBSERVATION, REWARD_WEIGHTS, OncallEnv

__all__ = ["ENV_IDS", "OBSERVATION", "REWARD_WEIGHTS", "OncallEnv"]

ENV_IDS = {
    "oncallsim/FreePlay-v0": "free-play",
    "oncallsim/BadDeploy-v0": "bad-deploy",
    "oncallsim/Surge-v0": "surge",
    "oncallsim/CacheFlush-v0": "cache-flush",
}

for _env_id, _scenario in ENV_IDS.items():
    if _env_id not in gymnasium.registry:
        gymnasium.register(
            _env_id,
            entry_point="oncallsim.gym.env:OncallEnv",
            kwargs={"scenario": _scenario},
            disable_env_checker=False,
        )
