"""Gymnasium throughput: env steps per second under a random policy, single and vector, against a peer.

Target (issue "Write the minute once", point 8): the single env ≥ 20,000 steps/s. The peer, measured in the
same run, is Gymnasium's own CartPole-v1 (a pure-Python classic-control env) under a random policy.

    python benchmarks/gym_env.py [--seconds 3] [--num-envs 256]
"""

from __future__ import annotations

import argparse
import time

import gymnasium
import numpy as np

import oncallsim.gym  # noqa: F401  (registers the environments)

TARGET = 20_000


def rate(env: gymnasium.Env, seconds: float) -> float:  # type: ignore[type-arg]
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(512)]
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, terminated, truncated, _ = env.step(actions[steps % 512])
        steps += 1
        if terminated or truncated:
            env.reset(seed=steps)
    return steps / (time.perf_counter() - start)


def vector_rate(num_envs: int, seconds: float) -> float:
    venv = gymnasium.make_vec("oncallsim/Surge-v0", num_envs=num_envs, vectorization_mode="vector_entry_point")
    venv.reset(seed=0)
    venv.action_space.seed(0)
    hold = {k: np.asarray(v) for k, v in venv.action_space.sample().items()}
    for name in ("warmup", "rollback"):
        hold[name] = np.zeros(num_envs, dtype=np.int64)
    batch = venv.unwrapped.batch
    for name in ("floor", "autoscaler", "target_utilization", "ttl_s", "shed_share", "recommendations"):
        hold[name] = np.asarray(batch.setting(name))
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        venv.step(hold)
        steps += num_envs
    return steps / (time.perf_counter() - start)


def vector_random_rate(num_envs: int, seconds: float) -> float:
    """The vector env under a random policy: every run's settings and buttons drawn anew each step."""
    venv = gymnasium.make_vec("oncallsim/Surge-v0", num_envs=num_envs, vectorization_mode="vector_entry_point")
    venv.reset(seed=0)
    venv.action_space.seed(0)
    actions = [venv.action_space.sample() for _ in range(16)]
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        venv.step(actions[steps % 16])
        steps += 1
    return steps * num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--num-envs", type=int, default=256)
    args = parser.parse_args()
    single = rate(gymnasium.make("oncallsim/Surge-v0"), args.seconds)
    peer = rate(gymnasium.make("CartPole-v1"), args.seconds)
    vector = vector_rate(args.num_envs, args.seconds)
    vector_random = vector_random_rate(args.num_envs, args.seconds)
    verdict = "met" if single >= TARGET else "NOT met"
    print(f"single env, random actions: {single:,.0f} steps/s (target {TARGET:,}: {verdict})")
    print(f"peer CartPole-v1, random actions: {peer:,.0f} steps/s; ratio oncallsim / CartPole = {single / peer:.2f}")
    print(f"vector env ({args.num_envs} runs on the batch engine, holding): {vector:,.0f} env-steps/s")
    print(
        f"vector env ({args.num_envs} runs, random actions): {vector_random:,.0f} env-steps/s = "
        f"{vector_random / single:.1f}× the single env, {vector_random / peer:.2f}× CartPole"
    )


if __name__ == "__main__":
    main()
