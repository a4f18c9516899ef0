"""Run a random policy and the textbook policy through the Gymnasium environment and print their returns.

python examples/gym_returns.py [ENV_ID] [SEED]
"""

from __future__ import annotations

import sys

import gymnasium

import oncallsim.gym  # noqa: F401  (registers oncallsim/…-v0)
from oncallsim.policies import Textbook


def episode_return(env_id: str, seed: int, policy: str) -> float:
    env = gymnasium.make(env_id)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    book = Textbook()
    book.reset(seed)
    total, done = 0.0, False
    while not done:
        if policy == "random":
            action = env.action_space.sample()
        else:
            core = env.unwrapped
            action = core.action_from(list(book.decide(core.sim.observe())))
        _obs, reward, terminated, truncated, _info = env.step(action)
        total += float(reward)
        done = terminated or truncated
    env.close()
    return total


def main(env_id: str = "oncallsim/BadDeploy-v0", seed: int = 7) -> dict[str, float]:
    returns = {policy: episode_return(env_id, seed, policy) for policy in ("random", "textbook")}
    for policy, value in returns.items():
        print(f"{env_id} seed {seed}: {policy:8} return {value:10.2f}")
    return returns


if __name__ == "__main__":
    main(*(sys.argv[1:2] or ["oncallsim/BadDeploy-v0"]), *(int(a) for a in sys.argv[2:3]))
