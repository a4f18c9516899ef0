"""The arena's MCP agents (``mcp:COMMAND``, docs/arena.md "MCP agents"): the docs' agent, an SDK client in a
process of its own, plays the arena's run through the in-process server; the table with it beside hands-off is
the same twice, and its row's score is the one ``Simulation`` gives for the same actions played directly (the
oracle here replays the agent's rule on the simulation, without the server). An agent that never advances is
stopped and reported, the run played to its end hands off; a bad spec is refused in one line before any run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("mcp")

from oncallsim import Simulation
from oncallsim.arena import Settings, parse_contestant, play_run
from oncallsim.cli import app
from oncallsim.debrief import make_report
from oncallsim.model import InvalidInput
from oncallsim.policies import counterfactuals

ROOT = Path(__file__).resolve().parent.parent
SEED = 3000


def docs_agent(tmp_path: Path) -> Path:
    """The agent of docs/arena.md "MCP agents", written out as given there."""
    text = (ROOT / "docs" / "arena.md").read_text().split("## MCP agents", 1)[1]
    path = tmp_path / "rollback_agent.py"
    path.write_text(text.split("```python\n", 1)[1].split("```", 1)[0])
    return path


def expected_score() -> float:
    """The docs agent's rule played on ``Simulation`` directly: roll back the minute after the first one whose
    record shows the page firing, then hands off to the end."""
    sim = Simulation("bad-deploy", seed=SEED, engine="minute")
    rolled_back = False
    while not sim.done:
        paged = bool(sim.timeline) and sim.timeline[-1].page_firing
        sim.step([("rollback", None)] if paged and not rolled_back else [])
        rolled_back = rolled_back or paged
    assert rolled_back
    return make_report(sim, counterfactuals(sim), effects=False).score


def ranking(stdout: str) -> str:
    return stdout.split("Decisions (wall-clock")[0]


def test_an_mcp_agent_plays_beside_hands_off_the_same_table_twice(tmp_path: Path) -> None:
    spec = "bot=mcp:" + shlex.join([sys.executable, str(docs_agent(tmp_path))])
    args = ["arena", "--contestant", "hands-off=hands-off", "--contestant", spec, "--scenario", "bad-deploy"]
    args += ["--seeds", str(SEED), "--engine", "minute", "--workers", "1"]
    outs, rows = [], []
    for n in range(2):
        result = CliRunner().invoke(app, [*args, "--json", str(tmp_path / f"a{n}.json")])
        assert result.exit_code == 0, result.output
        outs.append(ranking(result.stdout))
        rows.append({r["contestant"]: r for r in json.loads((tmp_path / f"a{n}.json").read_text())["runs"]})
    assert outs[0] == outs[1] and "bot" in outs[0]
    timed = ("decisions", "decision_ms_mean", "decision_ms_max")
    assert [{k: v for k, v in r["bot"].items() if k not in timed} for r in rows] == [
        {k: v for k, v in rows[0]["bot"].items() if k not in timed}
    ] * 2
    bot, hands_off = rows[0]["bot"], rows[0]["hands-off"]
    assert bot["failure"] is None and bot["actions"] == 1 and bot["refused"] == 0 and bot["decisions"] > 1
    assert bot["score"] == expected_score()
    assert bot["score"] > hands_off["score"]


def test_an_agent_that_never_advances_is_stopped_and_the_run_played_hands_off() -> None:
    sleeper = shlex.join([sys.executable, "-c", "import time; time.sleep(600)"])
    row = play_run(parse_contestant(f"sleeper=mcp:{sleeper}"), "bad-deploy", SEED, "minute", Settings("normal", 0.5))
    hands_off = play_run(parse_contestant("h=hands-off"), "bad-deploy", SEED, "minute")
    assert row["failure"] == "minute 0: no advance within 0.5 s"
    assert row["actions"] == 0 and row["decisions"] == 1
    assert row["score"] == hands_off["score"] and row["budget_spent"] == hands_off["budget_spent"]


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("x=mcp:", "--contestant: mcp: needs a command"),
        ("x=mcp:'unclosed", "--contestant: mcp: cannot read the command"),
        ("x=mcp:no-such-command-of-oncallsim --flag", "--contestant: mcp: command not found: 'no-such-command"),
    ],
)
def test_a_bad_mcp_spec_is_refused_in_one_line(spec: str, said: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_contestant(spec)
    assert str(caught.value).startswith(said) and "\n" not in str(caught.value)
    result = CliRunner().invoke(app, ["arena", "--contestant", spec, "--seeds", str(SEED)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and said in result.output


def test_an_agent_that_fails_says_so_and_cannot_start_another_run(tmp_path: Path) -> None:
    """The server holds the arena's run and no other live one: ``start_run`` is refused (the agent plays the seed
    it is given); an agent exiting with a status other than 0 is a failure, the run played on hands off."""
    agent = tmp_path / "starter.py"
    agent.write_text(
        docs_agent(tmp_path).read_text().split("async def main", 1)[0]
        + """
async def main() -> int:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        streamable_http_client(URL, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("start_run", {"scenario": "surge", "seed": 5, "engine": "minute"})
        said = result.content[0].text
        return 3 if result.is_error and said.startswith("run: at most 1 live runs") else 4


raise SystemExit(anyio.run(main))
"""
    )
    row = play_run(parse_contestant(f"x=mcp:{shlex.join([sys.executable, str(agent)])}"), "bad-deploy", SEED, "minute")
    assert row["failure"] == "minute 0: the agent exited with status 3"
    assert row["scenario"] == "bad-deploy" and row["actions"] == 0 and row["decisions"] == 0
