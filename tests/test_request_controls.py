"""The request engine's controls: each one spec beside its mechanism (docs/architecture.md, "A request-engine
control"), and everything else derived from it — Controls and its default, the world's slot, every surface's
validation, the setting's event, the debrief's sentence and the zoom's phrase."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import oncallsim.model.request as request_package
from oncallsim import Simulation
from oncallsim.debrief.postmortem import move
from oncallsim.model.control_spec import REQUEST_ONLY
from oncallsim.model.controls import CONTROL_SPECS, WORLD_SETTINGS, Controls
from oncallsim.model.errors import InvalidInput
from oncallsim.model.params import Params
from oncallsim.model.request.settings import in_force, read, set_world, world_settings, write
from oncallsim.model.request.world import World, new_world
from oncallsim.simulation import Action

REQUEST_SPECS = [spec for spec in CONTROL_SPECS.values() if spec.engines == REQUEST_ONLY]


def _declared_in() -> dict[str, str]:
    """Which module of model/request declares each request-engine control (its CONTROLS)."""
    where = {}
    for info in pkgutil.iter_modules(request_package.__path__):
        module = importlib.import_module(f"oncallsim.model.request.{info.name}")
        for spec in getattr(module, "CONTROLS", ()):
            assert spec.name not in where, f"{spec.name} declared twice"
            where[spec.name] = info.name
    return where


def test_each_request_control_is_declared_once_beside_its_mechanism() -> None:
    where = _declared_in()
    assert sorted(where) == sorted(spec.name for spec in REQUEST_SPECS)
    for spec in REQUEST_SPECS:  # the registry holds the module's own object, not a copy
        module = importlib.import_module(f"oncallsim.model.request.{where[spec.name]}")
        assert any(s is spec for s in module.CONTROLS)
    # the minute model's controls are in model/controls.py, nowhere else
    source = Path(importlib.import_module("oncallsim.model.controls").__file__ or "").read_text()
    declared_there = {
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "ControlSpec"
    }
    assert declared_there == {spec.name for spec in CONTROL_SPECS.values() if spec.engines != REQUEST_ONLY}


def test_each_world_setting_has_its_own_slot_in_its_piece() -> None:
    world = new_world(Params(max_fleet=2, hot_objects=10.0), 0)
    seen = set()
    for name in WORLD_SETTINGS:
        spec = CONTROL_SPECS[name]
        assert spec.piece in World._fields and spec.piece != "gen", name
        array = getattr(getattr(world, spec.piece), "reals" if spec.real else "ints")
        assert 0 <= spec.slot < len(array), name
        assert (spec.piece, spec.real, spec.slot) not in seen, f"{name} shares a slot"
        seen.add((spec.piece, spec.real, spec.slot))


def test_controls_and_their_defaults_are_the_specs() -> None:
    settings = [spec for spec in CONTROL_SPECS.values() if spec.is_setting]
    assert list(Controls.__dataclass_fields__) == [spec.name for spec in settings]
    defaults = Controls()
    for spec in settings:
        assert getattr(defaults, spec.name) == spec.default, spec.name
    # a fresh world, configured with the defaults, holds every default
    world = new_world(Params(max_fleet=2, hot_objects=10.0), 0)
    from oncallsim.model.request.settings import configure_world

    configure_world(world, defaults, Params(max_fleet=2, hot_objects=10.0))
    assert world_settings(world) == {name: CONTROL_SPECS[name].default for name in WORLD_SETTINGS}


def _values(name: str) -> list[object]:
    spec = CONTROL_SPECS[name]
    if spec.kind == "choice":
        return list(spec.choices)
    if spec.kind == "bool":
        return [True, False]
    assert spec.min is not None and spec.max is not None
    if spec.kind == "int":
        return [int(spec.min), int(spec.max), int((spec.min + spec.max) // 2)]
    return [spec.min, spec.max, (spec.min + spec.max) / 2]


@pytest.mark.parametrize("name", WORLD_SETTINGS)
def test_each_world_setting_round_trips_through_its_slot(name: str) -> None:
    world = new_world(Params(max_fleet=2, hot_objects=10.0), 0)
    for value in _values(name):
        write(world, name, value)
        assert read(world, name) == value and type(read(world, name)) is type(value)


@pytest.mark.parametrize("name", WORLD_SETTINGS)
def test_each_world_setting_reaches_the_world_from_an_action_and_is_told(name: str) -> None:
    sim = Simulation("free-play", seed=1, engine="request", minutes=3, overrides={"queue_limit": 10})
    value = next(v for v in _values(name) if v != getattr(sim.state.controls, name))
    record = sim.step([(name, value)])
    assert read(sim.state.world, name) == value
    assert record.extras["settings"][name] == value
    assert any(getattr(e, "code", "") == "setting" and e.args["name"] == name for e in record.events)
    assert getattr(sim.state.controls, name) == value  # the controls in force read the world


@pytest.mark.parametrize("name", WORLD_SETTINGS)
def test_each_world_setting_is_refused_out_of_its_range_everywhere(name: str) -> None:
    spec = CONTROL_SPECS[name]
    bad = "not-a-choice" if spec.kind == "choice" else ("maybe" if spec.kind == "bool" else (spec.max or 0) + 1)
    world = new_world(Params(max_fleet=2, hot_objects=10.0), 0)
    before = world_settings(world)
    with pytest.raises(InvalidInput) as err:
        set_world(world, **{name: bad})
    assert err.value.field == name and world_settings(world) == before
    sim = Simulation("free-play", seed=1, engine="request", minutes=2)
    with pytest.raises(InvalidInput) as err:
        sim.step([(name, bad)])
    assert err.value.field == name and sim.minute == 0
    with pytest.raises(InvalidInput):
        Controls(**{name: bad})


def test_each_request_control_has_its_sentences() -> None:
    quiet = {"retry_base_ms", "retry_cap_ms"}  # the debrief says "set backoff base to 100 ms"; the zoom leaves them out
    for spec in REQUEST_SPECS:
        assert bool(spec.moves) != (spec.name in quiet), spec.name
        for value in _values(spec.name) if spec.is_setting else [3]:
            said = move(Action(minute=1, control=spec.name, value=value))
            assert said == spec.sentence(spec.moves, value) or spec.name in quiet, (spec.name, value, said)
    defaults = {name: CONTROL_SPECS[name].default for name in WORLD_SETTINGS}
    assert in_force(defaults | {"balancer": "p2c", "retries": 2}) == [
        "the p2c balancer", "FIFO queues", "up to 2 retries per request", "full-jitter backoff",
    ]  # fmt: skip
    assert in_force(defaults | {"retry_backoff": "none"}) == ["the pooled balancer", "FIFO queues", "no retries"]


def test_a_run_with_choice_actions_replays_from_its_run_file(tmp_path: Path) -> None:
    """A choice's value is its name in an actions file and a run file, as on the console and the API (run
    files with a balancer or a queue discipline change could be saved but not replayed); text for any other
    kind of control is refused there as it is by the API."""
    from oncallsim.simulation import load_actions

    sim = Simulation("retry-storm", seed=1, engine="request", minutes=3)
    sim.step([("balancer", "p2c"), ("queue_limit", 20)])
    sim.step([("queue_discipline", "adaptive-lifo"), ("retry_backoff", "none")])
    path = tmp_path / "run.json"
    path.write_text(sim.run_file().model_dump_json())
    assert Simulation.replay(path).timeline == sim.timeline
    assert load_actions([{"minute": 0, "control": "limiter", "value": "bbr"}])[0].value == "bbr"
    for control, text in (("floor", "12"), ("eject", "i-3"), ("client_throttle", "on")):
        with pytest.raises(InvalidInput) as err:
            load_actions([{"minute": 0, "control": control, "value": text}])
        assert "not text" in str(err.value) and err.value.field.endswith("value")
