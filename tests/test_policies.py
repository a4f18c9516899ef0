"""Policies: the protocol, the built-ins, loading a user's policy, and runs that replay without the policy."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oncallsim import InvalidInput, Simulation
from oncallsim.cli import app
from oncallsim.model.engine import ENGINES
from oncallsim.policies import BUILTIN_POLICIES, Textbook, load_policy
from oncallsim.simulation import Observation, Policy


def test_builtins_are_registered_and_fresh_each_time() -> None:
    assert set(BUILTIN_POLICIES) >= {"hands-off", "textbook"}
    assert load_policy("textbook") is not load_policy("textbook")
    assert isinstance(load_policy("hands-off"), Policy)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_textbook_rolls_back_once_after_the_page(engine: str) -> None:
    sim = Simulation("bad-deploy", seed=4, engine=engine)
    sim.run(policy=Textbook())
    presses = [a for a in sim.actions if a.control == "rollback"]
    page = next(r.minute for r in sim.timeline if "page fired" in r.events)
    assert [a.minute for a in presses] == [page + 1]


def test_textbook_cache_playbook_in_order() -> None:
    sim = Simulation("cache-flush", seed=4)
    sim.run(policy=Textbook())
    steps = [(a.minute, a.control, a.value) for a in sim.actions]
    controls = [c for _, c, _ in steps]
    assert controls[:3] == ["recommendations", "shed_share", "warmup"]
    assert controls.index("shed_share", 2) < len(controls) - 1  # shedding is restored before the feature
    assert steps[-1][1:] == ("recommendations", True)
    assert max(r.db_utilization for r in sim.timeline[31:]) < 1.0


def test_textbook_raises_the_floor_early_in_a_surge_and_scales_back() -> None:
    sim = Simulation("surge", seed=12)
    sim.run(policy=Textbook())
    floors = [a.value for a in sim.actions if a.control == "floor"]
    assert max(floors) > 10 and floors[-1] == 10
    onset = sim.plan.surge.onset_min  # type: ignore[union-attr]
    first = next(a.minute for a in sim.actions if a.control == "floor")
    assert onset <= first <= onset + 10


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_policy_runs_replay_without_the_policy(engine: str) -> None:
    sim = Simulation("surge", seed=3, engine=engine, minutes=120)
    sim.run(policy=load_policy("textbook"))
    again = Simulation.replay(sim.run_file())
    assert again.timeline == sim.timeline


class Noisy:
    """A seeded policy: draws its own numbers from its own generator, reset with the run's seed."""

    name = "noisy"

    def reset(self, seed: int) -> None:
        from oncallsim.model import Mulberry32

        self.rng = Mulberry32(seed ^ 0x5EED)

    def decide(self, observation: Observation) -> Iterable[tuple[str, Any]]:
        if observation.minute % 30 == 5:
            return [("ttl_s", round(self.rng.uniform(30, 300)))]
        return []


def test_a_seeded_policy_is_reproducible() -> None:
    a, b = Simulation("free-play", seed=9, minutes=200), Simulation("free-play", seed=9, minutes=200)
    a.run(policy=Noisy())
    b.run(policy=Noisy())
    assert a.actions == b.actions and a.timeline == b.timeline and len(a.actions) == 7


def test_user_policy_from_module_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mypolicies.py").write_text(
        textwrap.dedent("""
        class Cautious:
            name = "cautious"
            def reset(self, seed):
                pass
            def decide(self, observation):
                return [("floor", 14)] if observation.minute == 0 else []
        NOT_A_POLICY = 3
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    done = CliRunner().invoke(
        app, ["run", "free-play", "--minutes", "5", "--policy", "mypolicies:Cautious", "--format", "jsonl"]
    )
    assert done.exit_code == 0 and '"floor": 14' in done.stdout
    for ref, needle in [
        ("mypolicies:Nope", "has no attribute"),
        ("nomodule_xyz:P", "cannot import"),
        ("mypolicies:NOT_A_POLICY", "is not a policy"),
        ("bogus", "unknown policy 'bogus'"),
    ]:
        with pytest.raises(InvalidInput, match=needle):
            load_policy(ref)
    sys.modules.pop("mypolicies", None)


def test_bad_policy_on_the_command_line_is_one_line() -> None:
    done = CliRunner().invoke(app, ["run", "free-play", "--policy", "nomodule_xyz:P"])
    assert done.exit_code == 2 and "policy: cannot import" in done.stderr


class Counted:
    """A policy class for ``module:attr``."""

    name = "counted"

    def reset(self, seed: int) -> None:
        pass

    def decide(self, observation: Observation) -> list[tuple[str, object]]:
        return []


def make_counted() -> Counted:
    return Counted()


def needs_an_argument(level: int) -> Counted:
    raise AssertionError("a factory that needs an argument is never called")


def broken_factory() -> Counted:
    raise RuntimeError("no config file")


COUNTED = Counted()


def not_a_policy() -> str:
    return "a string"


def test_a_module_attr_policy_is_a_class_a_factory_or_an_instance() -> None:
    from functools import partial

    import tests.test_policies as here

    assert isinstance(load_policy("tests.test_policies:Counted"), Counted)
    assert isinstance(load_policy("tests.test_policies:make_counted"), Counted)
    assert load_policy("tests.test_policies:COUNTED") is COUNTED
    here.PARTIAL = partial(make_counted)  # type: ignore[attr-defined]
    assert isinstance(load_policy("tests.test_policies:PARTIAL"), Counted)


@pytest.mark.parametrize(
    ("ref", "said"),
    [
        ("os:system", "os:system is not a policy"),  # a builtin needing an argument: it was called, a TypeError
        ("os:getcwd", "os:getcwd is not a policy"),  # a builtin: never called
        ("os:sep", "os:sep is not a policy"),
        ("builtins:object", "builtins:object is not a policy"),  # a class without reset and decide
        ("tests.test_policies:needs_an_argument", "called with no argument"),
        ("tests.test_policies:broken_factory", "tests.test_policies:broken_factory() failed: RuntimeError"),
        ("tests.test_policies:not_a_policy", "not_a_policy is not a policy"),
    ],
)
def test_what_is_not_a_policy_is_refused_in_one_line(ref: str, said: str) -> None:
    from typer.testing import CliRunner

    from oncallsim.cli import app
    from oncallsim.model import InvalidInput

    with pytest.raises(InvalidInput) as info:
        load_policy(ref)
    assert info.value.field == "policy" and said in info.value.reason
    done = CliRunner().invoke(app, ["run", "bad-deploy", "--minutes", "3", "--policy", ref])
    assert done.exit_code == 2 and f"policy: {info.value.reason}" in done.output, done.output
    assert "Traceback" not in done.output and len(done.output.strip().splitlines()) == 1


def test_the_counterfactuals_say_how_far_they_are() -> None:
    """A debrief's replays report after each one how many are done of how many (the console shows it): on a
    request-engine run that spent budget, the policies, p2c and every candidate mechanism, in order, to the end."""
    from oncallsim.policies.counterfactual import counterfactuals

    sim = Simulation("retry-storm", seed=3, minutes=25)
    sim.run()
    seen: list[tuple[int, int]] = []
    others = counterfactuals(sim, lambda done, total: seen.append((done, total)))
    total = seen[0][1]
    assert seen == [(n, total) for n in range(1, total + 1)]
    assert total >= 3 and {"hands-off", "textbook"} <= set(others)  # no decisions: its own hands-off replay
