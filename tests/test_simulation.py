"""Runs, action logs, run files and replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oncallsim import Action, InvalidInput, RunFile, Simulation, load_actions
from oncallsim.model import MODEL_VERSION
from oncallsim.model.engine import ENGINES

ENGINE_NAMES = sorted(ENGINES)  # the tests that apply to every engine run on each


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_step_logs_actions_with_their_minute(engine: str) -> None:
    sim = Simulation("bad-deploy", seed=3, engine=engine)
    sim.step()
    sim.step([("floor", 12), {"control": "warmup"}])
    assert sim.actions == [Action(1, "floor", 12), Action(1, "warmup", None)]
    assert sim.timeline[1].floor == 12 and sim.timeline[1].booting == 2


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_invalid_action_changes_nothing(engine: str) -> None:
    sim = Simulation("bad-deploy", seed=3, engine=engine)
    sim.step()
    before = (sim.state, sim.rng.get_state(), len(sim.timeline), list(sim.actions))
    for bad in (
        [("floor", 41)],
        [("ttl_s", -1)],
        [("flor", 3)],
        [("rollback", 1)],
        [("autoscaler", "maybe")],
        [("floor", 12), ("target_utilization", 0.95)],
    ):
        with pytest.raises(InvalidInput):
            sim.step(bad)
    assert (sim.state, sim.rng.get_state(), len(sim.timeline), list(sim.actions)) == before


def test_out_of_range_messages_name_the_control_and_range() -> None:
    sim = Simulation("free-play")
    with pytest.raises(InvalidInput, match=r"^floor: 0 is out of range; allowed a whole number from 1 to 40"):
        sim.step([("floor", 0)])
    with pytest.raises(InvalidInput, match=r"target_utilization: .* from 0.3 to 0.9"):
        sim.step([("target_utilization", 0.2)])


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_run_file_replays_the_identical_timeline(tmp_path: Path, engine: str) -> None:
    sim = Simulation("surge", seed=11, overrides={"ttl_s": "120", "warmup_db_qps": 300}, engine=engine)
    actions = [
        Action(40, "floor", 20),
        Action(41, "target_utilization", 0.4),
        Action(90, "shed_share", 0.5),
        Action(90, "warmup"),
        Action(200, "floor", 8),
    ]
    sim.run(actions)
    path = tmp_path / "run.json"
    sim.run_file().save(path)
    saved = json.loads(path.read_text())
    assert saved["scenario"] == "surge" and saved["seed"] == 11 and saved["model_version"] == MODEL_VERSION
    again = Simulation.replay(path)
    assert [r.to_dict() for r in again.timeline] == [r.to_dict() for r in sim.timeline]
    assert again.actions == sim.actions
    assert again.engine.name == saved["engine"] == engine


def test_run_file_of_a_user_scenario_embeds_the_spec(tmp_path: Path) -> None:
    spec = tmp_path / "own.toml"
    spec.write_text(
        'id = "own"\nversion = 1\ntitle = "Own"\nsummary = "s"\nbriefing = "b"\nstart = "12:00"\n'
        'minutes = 20\n[[events]]\nkind = "deploy"\nat = "12:05"\n'
    )
    sim = Simulation(str(spec), seed=2)
    sim.run()
    spec.unlink()  # the run file is self-contained
    again = Simulation.replay(RunFile.parse(sim.run_file().model_dump_json()))
    assert [r.to_dict() for r in again.timeline] == [r.to_dict() for r in sim.timeline]


def test_replay_refuses_another_model_version() -> None:
    text = (
        Simulation("free-play")
        .run_file()
        .model_dump_json()
        .replace(f'"model_version":"{MODEL_VERSION}"', '"model_version":"0"')
    )
    with pytest.raises(InvalidInput, match="model_version"):
        RunFile.parse(text)


def test_actions_file_errors(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    cases = {
        '[{"minute": 1}]': "control",
        '[{"minute": -1, "control": "floor", "value": 3}]': "minute",
        '[{"minute": 1, "control": "floor", "value": 50}]': "floor",
        '[{"minute": 1, "control": "nope"}]': "unknown control",
        '{"minute": 1}': "JSON list",
        "[1, 2": "not valid JSON",
    }
    for body, needle in cases.items():
        path.write_text(body)
        with pytest.raises(InvalidInput, match=needle):
            load_actions(path)


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_actions_at_the_same_minute_keep_their_order(engine: str) -> None:
    acts = load_actions(
        [
            {"minute": 5, "control": "floor", "value": 12},
            {"minute": 2, "control": "warmup"},
            {"minute": 5, "control": "floor", "value": 11},
        ]
    )
    assert [(a.minute, a.value) for a in acts] == [(2, None), (5, 12), (5, 11)]
    sim = Simulation("free-play", minutes=10, engine=engine)
    sim.run(acts)
    assert sim.timeline[5].floor == 11


def test_bad_run_arguments() -> None:
    with pytest.raises(InvalidInput, match="seed"):
        Simulation("free-play", seed=-1)
    with pytest.raises(InvalidInput, match="seed"):
        Simulation("free-play", seed=2**32)
    with pytest.raises(InvalidInput, match="minutes"):
        Simulation("free-play", minutes=0)
    with pytest.raises(InvalidInput, match="clock"):
        Simulation("free-play", clock="8am")
    with pytest.raises(InvalidInput, match="unknown parameter or control"):
        Simulation("free-play", overrides={"nope": 1})
    with pytest.raises(InvalidInput, match="workers_per_instance"):
        Simulation("free-play", overrides={"workers_per_instance": 2.5})


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_stepping_past_the_end_is_refused(engine: str) -> None:
    sim = Simulation("free-play", minutes=2, engine=engine)
    sim.run()
    assert sim.done
    with pytest.raises(InvalidInput, match="over"):
        sim.step()


def test_actions_past_the_end_are_refused() -> None:
    with pytest.raises(InvalidInput, match="past the run's end"):
        Simulation("free-play", minutes=5).run([Action(9, "warmup")])


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_autoscaler_off_means_exactly_the_floor(engine: str) -> None:
    sim = Simulation("free-play", minutes=30, noise=False, engine=engine)
    sim.run([Action(1, "floor", 14), Action(2, "autoscaler", False), Action(10, "floor", 6)])
    t = sim.timeline
    assert (t[1].serving, t[1].booting) == (10, 4)
    assert t[4].serving == 14
    assert (t[10].serving, t[10].booting) == (6, 0)
    assert all(r.serving + r.booting == r.floor for r in t[2:])


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_scale_in_after_ten_quiet_minutes_by_at_most_a_fifth(engine: str) -> None:
    sim = Simulation("free-play", minutes=60, noise=False, engine=engine)
    sim.run([Action(0, "floor", 30), Action(5, "floor", 1)])
    t = sim.timeline
    assert t[3].serving == 30
    # quiet from minute 5: ten quiet minutes end at 14, the scale-in removes ⌊0.2·30⌋ = 6
    assert any("scaled in: 6 instances removed" in e for e in t[14].events)
    assert t[15].serving == 24
    assert t[13].serving == 30


def test_time_axis_labels_show_the_day_on_runs_longer_than_one() -> None:
    from oncallsim.debrief.charts import axis_labels
    from oncallsim.model.plan import time_label

    short = Simulation("free-play", seed=1, minutes=1440)
    assert short.plan.time_label(0) == "08:00" and short.plan.time_label(1439) == "07:59"
    long = Simulation("free-play", seed=1, minutes=2000)
    labels = [long.plan.time_label(m) for m in range(2000)]
    assert len(set(labels)) == 2000  # no two minutes share a label
    assert labels[0] == "d1 08:00" and labels[960] == "d2 00:00" and labels[1999] == "d2 17:19"
    long.run(until=1500)
    assert axis_labels(long.timeline) == labels[:1500]
    assert axis_labels(long.timeline[:100]) == [time_label(480, m, False) for m in range(100)]


def test_run_files_are_strict_and_replays_refuse_what_they_could_not_reproduce(tmp_path: Path) -> None:
    sim = Simulation("bad-deploy", seed=4)
    sim.run(until=20)
    good = json.loads(sim.run_file().model_dump_json())
    for changes, field in (
        ({"seed": True}, "seed"),
        ({"played": "20"}, "played"),
        ({"overrides": {"hot_objects": float("nan")}}, "overrides"),
        ({"actions": [{"minute": 25, "control": "rollback"}]}, "actions"),  # after the 20 minutes played
        ({"played": 500}, "played"),  # past the run's end
    ):
        with pytest.raises(InvalidInput) as err:
            Simulation.replay(RunFile.parse(json.dumps({**good, **changes})))
        assert field in err.value.field, changes
    pending = {**good, "actions": [{"minute": 20, "control": "rollback"}]}  # logged at 20, not yet applied
    assert len(Simulation.replay(RunFile.parse(json.dumps(pending))).timeline) == 20
    with pytest.raises(InvalidInput, match="not a regular file"):
        RunFile.load("/dev/zero")
    with pytest.raises(InvalidInput, match="not a regular file"):
        load_actions("/dev/zero")
