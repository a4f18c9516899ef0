"""A bounded, deterministic fuzz suite (hypothesis, ``derandomize=True``) over the HTTP endpoints, the WebSocket
message types, run files, scenario content and the CLI's options: no 5xx, no dropped socket, no traceback, and
every error in the documented shape. ``scripts/fuzz_campaign.py`` runs the same properties far longer."""

from __future__ import annotations

import json
import os
import string
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oncallsim import Simulation
from oncallsim.web.app import create_app
from oncallsim.web.limits import Limits

BASE = "http://testserver"
HEADERS = {"Origin": BASE}
# per property: the whole file stays within a few seconds in CI; scripts/fuzz_campaign.py raises it and lets
# hypothesis draw fresh inputs (ONCALLSIM_FUZZ_RANDOM=1)
EXAMPLES = int(os.environ.get("ONCALLSIM_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=os.environ.get("ONCALLSIM_FUZZ_RANDOM") != "1",
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# --- what a careless user or an attacker sends ---------------------------------------------------------------

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 2**32, 2**32 - 1, 2**53 + 1, 2**70, -(2**70), 10**400, 10**4000, 1e308, -0.0]),
    st.sampled_from([float("inf"), float("nan"), -0, 1e-320]),  # 1e309 is inf; longer: raw_bodies
)
# Text that looks like a number: a digit that is no decimal digit, another script's digits, a huge whole number
NUMBER_TEXTS = ["³", "١٢", "²³", "-0", "+1", "1e309", "NaN", "-inf", "1_000", str(2**70), "1" + "0" * 400]
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "bad-deploy", "/dev/zero", "/etc/passwd", "x.toml", "../../x", "\x00", "16", "true", "nan"]),
    st.sampled_from(NUMBER_TEXTS),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4), max_leaves=12
)
KEYS = ["scenario", "seed", "speed", "clock", "minutes", "overrides", "paused", "scenario_toml", "control", "value"]
CONTROLS = ["floor", "autoscaler", "target_utilization", "ttl_s", "shed_share", "recommendations", "warmup", "rollback"]


@st.composite
def bodies(draw: Any) -> Any:
    """Mostly objects with the right keys and wrong values, sometimes anything at all."""
    if draw(st.integers(0, 4)) == 0:
        return draw(json_values)
    keys = draw(st.lists(st.sampled_from(KEYS), max_size=6, unique=True))
    body = {k: draw(json_values) for k in keys}
    if draw(st.booleans()):
        body["scenario"] = draw(st.sampled_from(["bad-deploy", "surge", "free-play", "cache-flush"]))
    if "control" in body and draw(st.booleans()):
        body["control"] = draw(st.sampled_from(CONTROLS))
    return body


def encode(body: Any) -> bytes:
    return json.dumps(body, allow_nan=True, default=str).encode()


raw_bodies = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"",
            b"{",
            b"[" * 5000 + b"]" * 5000,
            b'{"a":' * 3000 + b"1" + b"}" * 3000,
            b"\xff\xfe\x00{",
            b'{"seed": ' + b"9" * 5000 + b"}",
            b'{"scenario": "surge", "seed": 1e999}',
            b"NaN",
            b'{"scenario": "surge", "speed": Infinity}',
            b'{"scenario": "surge", "overrides": {"ttl_s": 1e309, "floor": 1' + b"0" * 400 + b"}}",
            b'{"scenario": "surge", "overrides": {"floor": NaN}}',
            b'{"control": "floor", "value": 1' + b"0" * 400 + b"}",
            b'{"control": "ttl_s", "value": 1e309}',
            b'{"control": "floor", "value": -0}',
        ]
    ),
)


def deep_json_bytes(depth: int) -> bytes:
    return b'{"x":' * depth + b"1" + b"}" * depth


COUNTS: Counter[str] = Counter()  # inputs sent, by kind: the campaign's figures


@pytest.fixture(autouse=True)
def report_counts() -> Iterator[None]:
    """After every property, so a campaign stopped at its deadline still knows how many inputs it sent."""
    yield
    out = os.environ.get("ONCALLSIM_FUZZ_COUNTS")
    if out:
        Path(out).write_text(json.dumps(COUNTS))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("fuzz") / "runs.sqlite3"
    # limits far above what the fuzz creates: refusals for being full (429) would hide the inputs' own checks
    limits = Limits(runs_per_client=10**6, new_runs_per_minute=10**6, runs=10**6, rooms_per_client=10**6,
                    new_rooms_per_minute=10**6, rooms=10**6, idle_s=5.0, finished_s=5.0)  # fmt: skip
    app = create_app(db, allow_hosts=["testserver"], limits=limits)
    with TestClient(app, base_url=BASE, headers=HEADERS) as c:
        yield c


@pytest.fixture(scope="module")
def run_id(client: TestClient) -> str:
    response = client.post("/api/runs", json={"scenario": "free-play", "seed": 1, "speed": 16, "paused": True})
    return str(response.json()["id"])


def check_http(response: Any) -> None:
    COUNTS["http"] += 1
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code >= 400 and response.headers.get("content-type", "").startswith("application/json"):
        body = response.json()
        assert set(body) == {"error", "field"}, body
        assert isinstance(body["error"], str) and isinstance(body["field"], str)


# --- HTTP ------------------------------------------------------------------------------------------------------


@FUZZ
@given(body=bodies())
def test_fuzz_new_run(client: TestClient, body: Any) -> None:
    check_http(client.post("/api/runs", content=encode(body), headers={"Content-Type": "application/json"}))


@FUZZ
@given(raw=raw_bodies, ctype=st.sampled_from(["application/json", "text/plain", "application/json; charset=latin-1"]))
def test_fuzz_raw_bodies(client: TestClient, run_id: str, raw: bytes, ctype: str) -> None:
    for path in ("/api/runs", f"/api/runs/{run_id}/actions", f"/api/runs/{run_id}/control"):
        check_http(client.post(path, content=raw, headers={"Content-Type": ctype}))


@FUZZ
@given(body=bodies())
def test_fuzz_actions_and_controls(client: TestClient, run_id: str, body: Any) -> None:
    headers = {"Content-Type": "application/json"}
    check_http(client.post(f"/api/runs/{run_id}/actions", content=encode(body), headers=headers))
    if isinstance(body, dict) and "type" not in body:
        body = {"type": "pause", **body}
    check_http(client.post(f"/api/runs/{run_id}/control", content=encode(body), headers=headers))


def run_file_mutations(draw: Any) -> bytes:
    sim = Simulation("bad-deploy", seed=3)
    sim.run(until=10)
    data = json.loads(sim.run_file().model_dump_json())
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from([*data, "scenario_spec", "extra"]))
        data[key] = draw(json_values)
    if draw(st.booleans()):  # a known setting or action with a nasty number: the core's refusal, never a 500
        name = draw(st.sampled_from([*CONTROLS, "boot_delay_min", "slo", "app_time_ms", "replace"]))
        value = draw(st.one_of(numbers, st.sampled_from(NUMBER_TEXTS)))
        if draw(st.booleans()):
            data["overrides"] = {name: value}
        else:
            data["actions"] = [
                {"minute": draw(st.sampled_from([0, 5, 2**70, 10**400])), "control": name, "value": value}
            ]
    return encode(data)


@FUZZ
@given(data=st.data())
def test_fuzz_run_file_import(client: TestClient, data: Any) -> None:
    payload = data.draw(st.one_of(raw_bodies, st.builds(lambda: b"").flatmap(lambda _: st.just(b"{}"))))
    if data.draw(st.booleans()):
        payload = run_file_mutations(data.draw)
    for path in ("/api/runs/import", "/runs/import"):
        check_http(client.post(path, files={"file": ("run.json", payload)}))


@FUZZ
@given(
    scenario=texts,
    seed=st.one_of(texts, numbers.map(str)),
    speed=st.one_of(texts, numbers.map(str)),
    clock=texts,
    param=st.tuples(st.one_of(texts, st.sampled_from(CONTROLS)), texts),
)
def test_fuzz_forms_and_share_links(
    client: TestClient, scenario: str, seed: str, speed: str, clock: str, param: tuple[str, str]
) -> None:
    form = {"scenario": scenario, "seed": seed, "speed": speed, "clock": clock, f"param.{param[0]}": param[1]}
    check_http(client.post("/runs", data=form, follow_redirects=False))
    check_http(client.get("/play", params={"scenario": scenario, "seed": seed}))
    check_http(client.get("/", params={"scenario": scenario, "seed": seed}))
    check_http(client.get("/leaderboard", params={"scenario": scenario, "seed": seed}))


@pytest.fixture(scope="module")
def finished_id(client: TestClient) -> str:
    """A finished run (an imported one), for the pages only a finished run has: the what-ifs."""
    sim = Simulation("bad-deploy", seed=3)
    sim.run(until=30)
    sim.step([("rollback", None)])
    sim.run(until=40)
    response = client.post("/api/runs/import", files={"file": ("run.json", sim.run_file().model_dump_json())})
    return str(response.json()["id"])


@FUZZ
@given(kind=st.one_of(texts, st.sampled_from(["earlier", "without", "rollback_at_page"])), index=texts, minutes=texts)
def test_fuzz_what_ifs(client: TestClient, finished_id: str, kind: str, index: str, minutes: str) -> None:
    params = {"kind": kind, "index": index, "minutes": minutes}
    check_http(client.get(f"/runs/{finished_id}/whatif", params=params))


@FUZZ
@given(path=st.text(alphabet=string.ascii_letters + string.digits + "-_.%~", max_size=30))
def test_fuzz_run_ids(client: TestClient, path: str) -> None:
    for url in (f"/api/runs/{path}", f"/runs/{path}", f"/runs/{path}/debrief", f"/api/runs/{path}/debrief"):
        check_http(client.get(url))


@FUZZ
@given(toml=st.one_of(st.text(max_size=300), st.sampled_from(["peak = nan", "x = inf", "[[events]]\n" * 3])))
def test_fuzz_scenario_content(client: TestClient, toml: str) -> None:
    body = {"scenario": "x", "scenario_toml": toml}
    check_http(client.post("/api/runs", json=body))


# --- the WebSocket --------------------------------------------------------------------------------------------


@st.composite
def frames(draw: Any) -> tuple[str, Any]:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return "bytes", draw(st.binary(max_size=50))
    if kind == 1:
        return "text", draw(st.one_of(st.text(max_size=50), st.sampled_from(["", "{", "[" * 3000, "null", "1e999"])))
    message: dict[str, Any] = {"type": draw(st.one_of(st.sampled_from(["action", "speed", "pause", "x"]), texts))}
    if draw(st.booleans()):
        message["control"] = draw(st.one_of(st.sampled_from(CONTROLS), texts))
    if draw(st.booleans()):
        message["value"] = draw(json_values)
    if message["type"] in ("resume", "step"):
        message["type"] = "pause"  # the run stays put, so the probe below answers at once
    return "text", json.dumps(message, default=str)


@FUZZ
@given(sent=st.lists(frames(), min_size=1, max_size=5))
def test_fuzz_socket_messages_keep_the_socket_open(
    client: TestClient, run_id: str, sent: list[tuple[str, Any]]
) -> None:
    with client.websocket_connect(f"/api/runs/{run_id}/ws", headers=HEADERS) as ws:
        assert ws.receive_json()["type"] == "snapshot"
        for kind, payload in sent:
            COUNTS["websocket"] += 1
            if kind == "bytes":
                ws.send_bytes(payload)
            else:
                ws.send_text(payload)
        ws.send_json({"type": "pause"})  # the probe: the socket still answers
        for _ in range(10_000):
            message = ws.receive_json()
            assert message["type"] in ("error", "state", "ack", "minute"), message
            if message["type"] == "error":
                assert {"field", "message"} <= set(message)
            if message["type"] == "state" and message["paused"]:
                break


# --- game-day room messages -------------------------------------------------------------------------------

ROOM_TYPES = ["action", "message", "status", "note", "speed", "pause", "step", "inject", "reveal", "join", "x"]
FAULTS = ["bad_deploy", "slow_instance", "cache_flush", "surge", "db_slow", "zone_outage", "x"]


# a chain of services' room (the cascade): its services' controls and its service fault, near and far from right
CHAIN_CONTROLS = [*CONTROLS, "recs.timeout_ms", "api.retries", "catalog.instances", "api.instances", "nope.retries",
                  "recs.", ".retries", "recs.retries.x"]  # fmt: skip
CHAIN_FAULT_VALUES = st.dictionaries(
    st.one_of(st.sampled_from(["service", "minutes", "slowdown", "errors"]), texts),
    st.one_of(st.sampled_from(["recs", "api", "catalog", "nope", "RECS"]), scalars),
    max_size=4,
)


@st.composite
def room_frames(draw: Any, chain: bool = False) -> tuple[str, Any]:
    """What a facilitator's (or a forger's) socket may send a room: wrong types, wrong fields, nasty values (on a
    chain's room, its own controls and faults too)."""
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return "bytes", draw(st.binary(max_size=50))
    if kind == 1:
        return "text", draw(st.one_of(st.text(max_size=50), st.sampled_from(["", "{", "[" * 3000, "null", "1e999"])))
    message: dict[str, Any] = {"type": draw(st.one_of(st.sampled_from(ROOM_TYPES), texts))}
    for key, values in (
        ("control", st.one_of(st.sampled_from(CHAIN_CONTROLS if chain else CONTROLS), texts)),
        ("value", json_values),
        ("text", st.one_of(texts, st.sampled_from(["\u202eevil", "a\u200bb", "x" * 300, "ok"]))),
        ("kind", st.one_of(st.sampled_from([*FAULTS, "service", "flush", "brownout"] if chain else FAULTS), texts)),
        ("at", st.one_of(st.sampled_from(["", "09:30", "25:00", "9:3", "00:00"]), texts)),
        ("values", CHAIN_FAULT_VALUES if chain else st.dictionaries(texts, scalars, max_size=3)),
        ("hidden", scalars),
        ("seq", numbers),
    ):
        if draw(st.integers(0, 3)) == 0:
            message[key] = draw(values)
    if message["type"] in ("resume", "close"):
        message["type"] = "pause"  # the room stays open and still, so the probe below answers at once
    return "text", json.dumps(message, default=str)


@pytest.fixture(scope="module")
def room_key(client: TestClient) -> tuple[str, str]:
    response = client.post("/api/gameday/rooms", json={"scenario": "bad-deploy", "seed": 2})
    assert response.status_code == 201, response.text
    room = response.json()
    return room["id"], room["facilitator_url"].split("#key=")[1]


@pytest.fixture(scope="module")
def chain_room_keys(client: TestClient) -> tuple[str, str, str]:
    response = client.post("/api/gameday/rooms", json={"scenario": "cascade", "seed": 2})
    assert response.status_code == 201, response.text
    room = response.json()
    return room["id"], room["facilitator_url"].split("#key=")[1], room["player_url"].split("#key=")[1]


@FUZZ
@given(sent=st.lists(room_frames(), min_size=1, max_size=5))
def test_fuzz_room_messages_keep_the_socket_open(
    client: TestClient, room_key: tuple[str, str], sent: list[tuple[str, Any]]
) -> None:
    probe_room(client, room_key, sent)


@FUZZ
@given(sent=st.lists(room_frames(chain=True), min_size=1, max_size=5), player=st.booleans())
def test_fuzz_chain_room_messages_keep_the_socket_open(
    client: TestClient, chain_room_keys: tuple[str, str, str], sent: list[tuple[str, Any]], player: bool
) -> None:
    """A chain's room, as its facilitator or as a player who may act (its services' controls reach the run)."""
    room_id, facilitator, team = chain_room_keys
    probe_room(client, (room_id, team if player else facilitator), sent, player)


def probe_room(
    client: TestClient, room_key: tuple[str, str], sent: list[tuple[str, Any]], player: bool = False
) -> None:
    """Send the frames to the room as its facilitator (or a player of the operations role): each is taken or refused
    naming its field, never an internal error, and the socket still answers after them."""
    room_id, key = room_key
    with client.websocket_connect(f"/gameday/{room_id}/ws", headers=HEADERS) as ws:
        ws.send_json({"type": "join", "token": key, **({"name": "Fuzz", "role": "operations"} if player else {})})
        assert ws.receive_json()["type"] == "snapshot"
        for kind, payload in sent:
            COUNTS["room"] += 1
            if kind == "bytes":
                ws.send_bytes(payload)
            else:
                ws.send_text(payload)
        probe = 10**6 + COUNTS["room"]  # the probe: the socket still answers (a value it refuses, naming it)
        if player:
            ws.send_json({"type": "action", "control": "recs.retries", "value": probe})
        else:
            ws.send_json({"type": "speed", "value": probe})
        for _ in range(10_000):
            message = ws.receive_json()
            assert message.get("field") != "server", message  # an internal error: a bug
            if message["type"] == "error" and f"got {probe}" in message["message"]:
                break


# --- scenario and rule files, by the CLI ------------------------------------------------------------------

scenario_files = st.one_of(
    st.text(max_size=300),
    st.sampled_from(
        [
            'id = "x"\ntitle = "x"\nminutes = 99999999999',
            'id = "x"\ntitle = "x"\n[[events]]\nkind = "surge"\nat = "25:00"',
            'id = "x"\ntitle = "x"\nseed = 1e999',
            'id = "x"\ntitle = "x"\nengine = "request"\n[params]\nbase_requests_per_s = 1e400',
            'id = "x"\ntitle = "x"\n[params]\nfloor = "³"',
            "a = " + "[" * 3000,
        ]
    ),
)
rule_files = st.one_of(
    st.text(max_size=300),
    st.sampled_from(
        [
            "groups: []",
            "groups:\n- name: x\n  rules:\n  - alert: A\n    expr: up ==\n",
            "groups:\n- name: x\n  rules:\n  - alert: A\n    expr: vector(1)\n    for: 99999999999h\n",
            "groups: &a [*a]",
            "!!python/object/apply:os.system ['true']",
            "groups:\n" + "- " * 2000,
        ]
    ),
)


@pytest.fixture(scope="module")
def small_run_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzzfiles") / "run.json"
    path.write_text(Simulation("bad-deploy", seed=1, minutes=5).run_file().model_dump_json())
    return path


@FUZZ
@given(content=st.one_of(scenario_files, rule_files), which=st.sampled_from(["scenario", "rules"]))
def test_fuzz_scenario_and_rule_files_never_print_a_traceback(small_run_file: Path, content: str, which: str) -> None:
    """A scenario file for ``run``, a Prometheus rule file for ``alerts``: refused in one line, never a traceback
    (the rules go to promtool only once they parse)."""
    from typer.testing import CliRunner

    from oncallsim.cli import app

    COUNTS["files"] += 1
    path = small_run_file.with_name("scenario.toml" if which == "scenario" else "rules.yml")
    path.write_text(content, encoding="utf-8", errors="surrogatepass")
    args = ["run", str(path), "--minutes", "3"] if which == "scenario" else ["alerts", str(path), str(small_run_file)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


# --- the CLI --------------------------------------------------------------------------------------------------


@FUZZ
@given(
    args=st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "--seed",
                    "--minutes",
                    "--clock",
                    "--set",
                    "--format",
                    "--policy",
                    "surge",
                    "/dev/zero",
                    "x.toml",
                    "true",
                    "4294967296",
                    "-1",
                    "nan",
                    "ttl_s=inf",
                    "floor=1e400",
                    "9" * 5000,
                    *("³", "١٢", "-0", str(2**70), "floor=³", "floor=١٢", f"ttl_s={10**400}", "ttl_s=-0", "slo=NaN"),
                    "--debrief",
                ]
            ),
            st.text(alphabet=string.printable, max_size=12),
        ),
        max_size=6,
    )
)
def test_fuzz_cli_never_prints_a_traceback(tmp_path_factory: pytest.TempPathFactory, args: list[str]) -> None:
    from typer.testing import CliRunner

    from oncallsim.cli import app

    COUNTS["cli"] += 1
    result = CliRunner().invoke(app, ["run", *args, "--minutes", "3"] if "--minutes" not in args else ["run", *args])
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


@FUZZ
@given(
    command=st.sampled_from(["debrief", "scenarios", "serve"]),
    args=st.lists(
        st.one_of(
            st.sampled_from(
                [
                    *("/dev/zero", "/etc/passwd", "/nonexistent.json", "--show", "surge", "--html", "--json"),
                    *("--port", "0", "70000", "-1", "--token", "short", "--host", "--allow-host", "x" * 300),
                ]
            ),
            st.text(alphabet=string.printable, max_size=12),
        ),
        max_size=4,
    ),
)
def test_fuzz_other_commands_never_print_a_traceback(command: str, args: list[str]) -> None:
    from typer.testing import CliRunner

    from oncallsim.cli import app

    if command == "serve":
        args = [*args, "--port", "0"]  # never start a server here: only its refusals are fuzzed
    COUNTS["cli"] += 1
    result = CliRunner().invoke(app, [command, *args])
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


def test_a_run_file_naming_a_device_does_not_grow_the_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from oncallsim.cli import app

    sim = Simulation("surge", seed=1)
    data = json.loads(sim.run_file().model_dump_json())
    for scenario in ("/dev/zero", "/dev/zero.toml", "/etc"):
        path = tmp_path / "r.json"
        path.write_text(json.dumps({**data, "scenario": scenario}))
        result = CliRunner().invoke(app, ["debrief", str(path)])
        assert result.exit_code == 2 and "scenario" in result.output, result.output
    result = CliRunner().invoke(app, ["debrief", "/dev/zero"])
    assert result.exit_code == 2 and "not a regular file" in result.output


# --- the page's language (?lang=, its cookie, Accept-Language) on the pages and the sockets ---------------------

# What a forged link or a careless hand puts in ?lang=: too long, unknown, a path, another script, control bytes,
# a language tag in another case or with a region, a list. The documented fallback (docs/web.md): a value that
# names no language the console speaks is passed over (the cookie, then Accept-Language, then English).
NASTY_LANGS = [
    "",
    "xx",
    "da" * 5_000,
    "x" * 60_000,
    "../../etc/passwd",
    "../locales/da",
    "da/../../../../etc",
    "..\\..\\en",
    "日本語",
    "\u202eda",
    "da\x00",
    "\x00",
    "\ufffd",
    "DA",
    "da-DK",
    "da_DK",
    "zu-ZA-x-private",
    "ar;q=0.5",
    "da,ar",
    "*",
    "İ",
    "hy\n",
    "%",
    "%2e%2e%2f",
    "en" + "\u0301",
    "lang=da",
    "1e309",
]
LANGS = ["en", "da", "zu", "hy", "ar"]


def expected_language(values: list[str]) -> str:
    """The oracle, written from the documented rule and not from the code: the last ?lang= counts; its part before
    the first "-", in lower case, if that is one of the five languages; else English (no cookie, no header)."""
    if not values:
        return "en"
    code = values[-1].lower().split("-")[0]
    return code if code in LANGS else "en"


def lang_queries() -> list[list[tuple[str, str]]]:
    """Each nasty value alone, and repeated with a good one before and after it (which one counts)."""
    queries = [[("lang", v)] for v in NASTY_LANGS]
    queries += [[("lang", "da"), ("lang", v)] for v in NASTY_LANGS[:8]]
    queries += [[("lang", v), ("lang", "ar")] for v in NASTY_LANGS[:8]]
    return queries


def page_language(html: str) -> str:
    start = html.index('<html lang="') + len('<html lang="')
    return html[start : html.index('"', start)]


@pytest.mark.parametrize("query", lang_queries(), ids=lambda q: repr([v[:12] for _, v in q])[:40])
def test_a_nasty_lang_on_the_pages_falls_back_and_never_fails(
    client: TestClient, run_id: str, room_key: tuple[str, str], query: list[tuple[str, str]]
) -> None:
    want = expected_language([v for _, v in query])
    for path in ("/", "/runs", "/model", "/gameday", f"/runs/{run_id}", f"/gameday/{room_key[0]}", "/runs/nope"):
        COUNTS["lang"] += 1
        response = client.get(path, params=query)
        check_http(response)
        assert response.status_code in (200, 404), (path, response.status_code)
        assert page_language(response.text) == want, (path, query)
    # the same values remembered in the cookie, or sent as the browser's Accept-Language, are passed over alike
    value = query[-1][1].replace("\x00", "").replace("\n", "")
    check_http(client.get("/", headers={"Accept-Language": value.encode("utf-8")}))  # raw bytes, as sent
    client.cookies.set("oncallsim_lang", value.encode("ascii", "replace").decode())
    try:
        check_http(client.get("/"))
    finally:
        client.cookies.clear()


@pytest.mark.parametrize("value", [*NASTY_LANGS, "da"], ids=lambda v: repr(v[:12]))
def test_a_nasty_lang_on_the_sockets_keeps_them_open_and_refuses_in_the_fallback(
    client: TestClient, run_id: str, room_key: tuple[str, str], value: str
) -> None:
    """A run's socket and a room's, opened with the value: the snapshot comes, a refused action is said (in
    English with no ``localized`` unless the value names a language), the socket stays open."""
    from urllib.parse import urlencode

    want = expected_language([value])
    query = "?" + urlencode({"lang": value})
    room_id, key = room_key
    with client.websocket_connect(f"/api/runs/{run_id}/ws{query}", headers=HEADERS) as ws:
        assert ws.receive_json()["type"] == "snapshot"
        ws.send_json({"type": "action", "control": "floor", "value": 9999})
        error = next(m for m in iter(ws.receive_json, None) if m["type"] == "error")
        assert error["field"] == "floor" and ("localized" in error) == (want != "en"), (value, error)
    with client.websocket_connect(f"/gameday/{room_id}/ws{query}", headers=HEADERS) as ws:
        ws.send_json({"type": "join", "token": key})
        assert ws.receive_json()["type"] == "snapshot"
        ws.send_json({"type": "speed", "value": 10**6})
        error = next(m for m in iter(ws.receive_json, None) if m["type"] == "error")
        assert error["field"] == "speed", error
        COUNTS["lang"] += 2
