"""Runs an agent plays: started, observed, acted on, advanced, ended and debriefed — as text a model reads.

The MCP server (``mcp_server.py``) is a thin layer over this module, which knows no protocol: every refusal is an
``InvalidInput`` naming the field and what is allowed, said as one line by whatever surface carries it.

What an agent sees is what a person sees in the console, in its units: the status table (its rows, units and
flags: web/static/js/format.js), the page banner, the log of events, the fleet view (request engine), the
controls and the actions queued for the next minute, and on the guided difficulty the scenario's hints. Never
the run's plan (the minutes of its future events, the drawn faults), its generator or its world's internals:
everything shown comes from the minute records already computed and the controls in force. The numbers of a run
never depend on the surface or the difficulty: the same scenario, seed, engine and actions at the same minutes
give the same run and the same debrief as ``Simulation`` does (tests/test_mcp.py).

Concurrency: a server's tools call these methods from worker threads; each run has a lock (an action is checked
against the state it applies to, with nothing stepping the run in between), and the registry one of its own.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oncallsim.cliff.zone import gauge as cliff_gauge
from oncallsim.debrief import make_report
from oncallsim.debrief.markdown import render_markdown
from oncallsim.debrief.summary import describe
from oncallsim.model import CONTROL_SPECS, DEFAULT_PARAMS, InvalidInput, MinuteRecord, param_info
from oncallsim.model.errors import quote
from oncallsim.model.formulas import FORMULAS, SOURCES
from oncallsim.policies import counterfactuals
from oncallsim.scenarios import Scenario, builtin_scenarios
from oncallsim.simulation import Action, Simulation
from oncallsim.web.pacing import DEFAULT_DIFFICULTY, check_difficulty, pause_reason, stop_for

__all__ = [
    "MAX_ADVANCE",
    "MAX_KEPT_RUNS",
    "MAX_LIVE_RUNS",
    "AgentRun",
    "Runs",
    "briefing_text",
    "model_reference",
    "observation_text",
    "scenario_list_text",
]

# Live runs (not over) one server keeps at once: a request-engine run holds its world (megabytes) in memory.
MAX_LIVE_RUNS = 8
# Runs kept in all (the live ones and those over, for their debrief); the oldest over leaves first.
MAX_KEPT_RUNS = 32
# Minutes one advance computes at most: a day (on the request engine a minute costs up to a second).
MAX_ADVANCE = 1440
# Events the observation lists (the newest last), and instances the fleet view lists in full.
RECENT_EVENTS = 12
FLEET_LISTED = 40


# --- the console's status table, in its units ------------------------------------------------------------------
def _pct(x: float, digits: int = 0) -> str:
    return f"{100 * x:,.{digits}f} %"


def _money(x: float) -> str:
    return f"${x:,.2f}"


# (key, label, value as the console shows it): the rows of web/templates/console.html, the formats of format.js
STATUS_ROWS: tuple[tuple[str, str, Callable[[MinuteRecord], str]], ...] = (
    ("burn_1h", "Burn rate (1 h)", lambda r: f"{r.burn_1h:,.1f}×"),
    ("requests_per_s", "Requests", lambda r: f"{round(r.requests_per_s):,} req/s"),
    ("serving", "Instances serving", lambda r: f"{r.serving:,}"),
    ("booting", "Instances booting", lambda r: f"{r.booting:,}"),
    ("cache_hit", "Cache hit rate", lambda r: _pct(r.cache_hit)),
    ("db_utilization", "Database utilization", lambda r: _pct(r.db_utilization)),
    ("shed_share", "Shed traffic", lambda r: _pct(r.shed_per_s / max(r.requests_per_s, 1e-9))),
    ("cost_per_hour", "Fleet cost", lambda r: f"{_money(r.cost_per_hour)}/h"),
    ("cost_so_far", "Cost so far", lambda r: _money(r.cost_so_far)),
    ("mean_age_s", "Mean age of cached answers", lambda r: f"{round(r.mean_age_s):,} s"),
    ("bad_build_share", "Traffic on the bad build", lambda r: _pct(r.bad_build_share)),
    ("recommendations_available", "Recommendations available", lambda r: _pct(r.recommendations_available)),
    ("p99_ms", "p99 latency", lambda r: f"{round(r.p99_ms):,} ms"),
    ("error_rate", "Error rate", lambda r: _pct(r.error_rate, 2)),
    ("budget_left", "Error budget left", lambda r: _pct(r.budget_left, 1)),
)


def _flag(key: str, r: MinuteRecord) -> str:
    """The word beside a value (format.js ``flag``): colour is never the only carrier of meaning, nor is it here."""
    checks: dict[str, list[tuple[bool, str]]] = {
        "burn_1h": [(r.page_firing, "paging"), (r.burn_1h > 1, "burning")],
        "db_utilization": [(r.db_utilization >= 1, "saturated"), (r.db_utilization >= 0.8, "high")],
        "error_rate": [(r.error_rate > 0.01, "high"), (r.error_rate > 0.001, "over the SLO")],
        "p99_ms": [(r.p99_ms >= 2000, "timeouts")],
        "booting": [(r.booting > 0, "booting")],
        "bad_build_share": [(r.bad_build_share > 0, "live")],
        "budget_left": [(r.budget_left <= 0, "exhausted")],
    }
    return next((word for hit, word in checks.get(key, []) if hit), "")


def _status_lines(sim: Simulation, r: MinuteRecord) -> list[str]:
    rows: list[tuple[str, str, str]] = []
    for key, label, show in STATUS_ROWS:
        rows.append((label, show(r), _flag(key, r)))
        if key == "burn_1h" and sim.engine.name == "request":
            cliff = cliff_gauge(r, sim.params, None, 0)  # the console's gauge (its trigger line needs a pilot run)
            value, zone = ("—", "") if cliff is None else (f"{cliff['amplified']:,.2f}×", str(cliff["zone"]))
            rows.append(("Distance to the cliff", value, zone))
    width = max(len(label) for label, _, _ in rows)
    return [f"  {label:<{width}}  {value}" + (f"  [{word}]" if word else "") for label, value, word in rows]


# --- the fleet view (request engine) ---------------------------------------------------------------------------
def _fleet_lines(r: MinuteRecord) -> list[str]:
    lines: dict[str, list[Any]] = (r.extras or {}).get("instances") or {}
    if not lines:
        return []
    count = max(len(v) for v in lines.values())
    workers = (r.extras or {}).get("workers_per_instance") or 0
    served_all = sum(lines.get("served", [])) or 0

    def at(name: str, i: int) -> Any:
        values = lines.get(name)
        return values[i] if values is not None and i < len(values) else None

    out = [
        "Fleet (each instance: state, build, rotation, in flight, queue, CPU, p99, share of traffic, errors):",
    ]
    for i in range(min(count, FLEET_LISTED)):
        served, errors, busy = at("served", i), at("errors", i), at("busy_s", i)
        health, speed, base = at("health", i), at("speed", i), at("base_speed", i)
        if at("replacing", i):
            state = "replacing"
        elif at("ejected", i):
            state = "ejected"
        elif health in ("refuse", "hang", "offline", "booting"):
            state = {"refuse": "down", "hang": "hangs", "offline": "offline", "booting": "booting"}[health]
        elif at("registered", i) == 0:
            state = "unregistered"
        elif speed is not None and speed < (base if base is not None else 1):
            state = "slow"
        elif at("bad_build", i):
            state = "bad build"
        elif errors is not None and served is not None and errors > 0.01 * max(served, 1):
            state = "errors"
        else:
            state = "ok"
        rotation = at("registered", i) and not at("ejected", i)
        p99 = at("p99_ms", i)
        p99_text = "—" if p99 is None else (f"{p99:,.0f} ms" if p99 < 1000 else f"{p99 / 1000:,.1f} s")
        cpu = "—" if busy is None or workers <= 0 else _pct(busy / (60 * workers))
        share = "—" if served is None or served_all <= 0 else _pct(served / served_all)
        out.append(
            f"  i-{i:02d} {state}, {'bad' if at('bad_build', i) else 'good'} build, "
            f"{'in rotation' if rotation else 'out of rotation'}, in flight {at('in_flight', i) or 0:,}, "
            f"queue {at('queue', i) or 0:,}, CPU {cpu}, p99 {p99_text}, share {share}, errors {round(errors or 0):,}"
        )
    if count > FLEET_LISTED:
        out.append(f"  … and {count - FLEET_LISTED} more instances")
    return out


# --- runs ------------------------------------------------------------------------------------------------------
@dataclass
class AgentRun:
    """One run an agent plays: the simulation, the actions queued for its next minute, and how it ended."""

    id: str
    sim: Simulation
    difficulty: str = DEFAULT_DIFFICULTY
    pending: list[Action] = field(default_factory=list)
    ended: bool = False  # ended early by the agent (debriefed on the minutes played)
    pause_reason: str | None = None  # why the last advance stopped early ("page", "incident")
    debrief_md: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def over(self) -> bool:
        return self.sim.done or self.ended

    def end_clock(self) -> str:
        return self.sim.plan.clock(self.sim.length)


def scenario_list_text() -> str:
    """The built-in scenarios, one line each (``oncallsim scenarios``): id, title, start, length, engine, summary."""
    lines = []
    for sc in builtin_scenarios().values():
        h, m = divmod(sc.minutes, 60)
        length = f"{h} h {m:02d} min" if h else f"{m} min"
        engine = sc.engine or "minute"
        lines.append(f"{sc.id}: {sc.title} — starts {sc.start}, {length}, {engine} engine. {sc.summary}")
    return "\n".join(lines)


def briefing_text(sc: Scenario) -> str:
    """A scenario as the console's briefing shows it (``oncallsim scenarios --show``): what the player is told."""
    h, m = divmod(sc.minutes, 60)
    lines = [
        f"# {sc.title} ({sc.id}, version {sc.version})",
        "",
        f"Starts {sc.start}, {h} h {m:02d} min; error budget at the start {sc.budget_start:.0%}; "
        f"engine: {sc.engine or 'minute'} unless another is asked for.",
        "",
        sc.briefing.strip(),
    ]
    if sc.key_controls:
        lines += ["", "Controls the briefing points at: " + ", ".join(sc.key_controls)]
    if sc.params or sc.controls:
        lines += ["", "## Settings", ""]
        lines += [
            f"- {k} = {v:g}" if isinstance(v, float) else f"- {k} = {v}"
            for k, v in {**sc.params, **sc.controls}.items()
        ]
    if sc.objectives:
        lines += ["", "## Objectives", ""] + [f"- {o.label()}" for o in sc.objectives]
    return "\n".join(lines) + "\n"


def _raw(value: Any) -> str:
    """A setting as ``act`` takes it (JSON: true, 0.6, "p2c"), so what an agent reads it can send back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def controls_text(sim: Simulation) -> str:
    """The controls this run's engine has: each one's current value (a setting) and what it takes."""
    controls = sim.state.controls
    lines = ["Controls (act with the name and a value; a button takes none):"]
    for name, spec in CONTROL_SPECS.items():
        if sim.engine.name not in spec.engines:
            continue
        now = getattr(controls, name, None) if spec.is_setting else None
        current = "" if now is None else f" now {_raw(now)},"
        lines.append(f"  {name} ({spec.label}):{current} {spec.describe_range()}")
    return "\n".join(lines)


def _settings_line(sim: Simulation) -> str:
    controls = sim.state.controls
    shown = [
        f"{name}={_raw(getattr(controls, name))}"
        for name, spec in CONTROL_SPECS.items()
        if spec.is_setting and sim.engine.name in spec.engines and hasattr(controls, name)
    ]
    return "Settings: " + ", ".join(shown)


def _page_line(sim: Simulation) -> str:
    """The console's banner: the page, since when (its last firing), the burn rate and the budget left."""
    timeline = sim.timeline
    last = timeline[-1]
    if not last.page_firing:
        return "No page firing."
    since = last.clock
    for r in reversed(timeline):
        if not r.page_firing:
            break
        since = r.clock
    return (
        f"PAGE FIRING since {since}: error-budget burn {last.burn_1h:,.1f}× over the last hour, "
        f"{_pct(last.budget_left, 1)} of the budget left."
    )


def _events_lines(sim: Simulation) -> list[str]:
    events = [(r.clock, str(e)) for r in sim.timeline for e in r.events]
    recent = events[-RECENT_EVENTS:]
    if not recent:
        return ["Events: none yet."]
    more = f" (the last {len(recent)} of {len(events)})" if len(events) > len(recent) else ""
    return [f"Events{more}:"] + [f"  {clock} {text}" for clock, text in recent]


def observation_text(run: AgentRun) -> str:
    """What the console shows now, compact: the position, the page, the status table of the last minute, the
    settings and the queued actions, the recent events, the fleet view, and on guided the hint."""
    sim = run.sim
    head = (
        f"Run {run.id}: {sim.scenario.id} ({sim.scenario.title}), seed {sim.seed}, {sim.engine.name} engine, "
        f"{run.difficulty} difficulty."
    )
    if run.ended:
        where = f"Ended by you at {sim.plan.clock(sim.minute)} after {sim.minute} minutes: call debrief."
    elif sim.done:
        where = f"Over: played to its end at {run.end_clock()} ({sim.length} minutes): call debrief."
    else:
        where = f"Now {sim.plan.clock(sim.minute)}: minute {sim.minute} of {sim.length} (ends {run.end_clock()})."
    lines = [head, where]
    if run.pause_reason is not None and not run.over:
        lines.append(f"The clock stopped: {'the page fired' if run.pause_reason == 'page' else 'the incident began'}.")
    if not sim.timeline:
        lines += ["Nothing computed yet: advance to start the clock.", _settings_line(sim)]
    else:
        last = sim.timeline[-1]
        lines += [_page_line(sim), f"Status (the minute of {last.clock}):", *_status_lines(sim, last)]
        lines.append(_settings_line(sim))
    if run.pending:
        lines.append(f"Queued for {sim.plan.clock(sim.minute)}: " + "; ".join(describe(a) for a in run.pending))
    lines += _events_lines(sim)
    if sim.timeline:
        lines += _fleet_lines(sim.timeline[-1])
    hint = _hint(run)
    if hint:
        lines.append(f"Hint (guided): {hint}")
    return "\n".join(lines)


def _hint(run: AgentRun) -> str:
    """The guided difficulty's hints, once their moment has come (web/pacing.py): the incident's at its start, the
    page's once the page has fired — never before (a hint names what happens, a future a person does not see)."""
    if run.difficulty != "guided":
        return ""
    sim = run.sim
    paged = any(getattr(e, "code", None) == "page_fired" for r in sim.timeline for e in r.events)
    if paged and sim.scenario.page_hint:
        return sim.scenario.page_hint.strip()
    hinted = bool(sim.scenario.incident_hint.strip())
    started = any(pause_reason(sim.plan, r, hint_at_start=hinted) == "incident" for r in sim.timeline)
    return sim.scenario.incident_hint.strip() if started else ""


def model_reference() -> str:
    """The model reference (the console's /model page) as Markdown: each formula with the defaults filled in, its
    sources, every parameter with its unit and range, every control with what it takes and does."""
    lines = ["# The oncallsim model", "", "Each formula with the default parameters filled in (LaTeX).", ""]
    for f in FORMULAS:
        latex, note = f.render(DEFAULT_PARAMS)
        lines += [f"## {f.title}", "", f"$$ {latex} $$", ""]
        if note:
            lines += [note, ""]
        lines += [f"Sources: {', '.join(f'[{n}]' for n in f.sources)}; code: `{f.code}`", ""]
    lines += ["## Parameters", "", "| name | default | unit | range | meaning |", "|---|---|---|---|---|"]
    lines += [f"| {p.name} | {p.default:g} | {p.unit} | {p.min:g}–{p.max:g} | {p.doc} |" for p in param_info()]
    lines += ["", "## Controls", "", "| name | engines | default | allowed | effect |", "|---|---|---|---|---|"]
    for s in CONTROL_SPECS.values():
        default = "" if s.default is None else str(s.default)
        effect = s.help_text(DEFAULT_PARAMS).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {s.name} | {', '.join(s.engines)} | {default} | {s.describe_range()} | {effect} |")
    lines += ["", "## Sources", ""] + [f"[{n}] {text}" for n, text in SOURCES.items()]
    return "\n".join(lines) + "\n"


def _whole(value: Any, name: str, lo: int, hi: int, what: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidInput(name, f"must be a whole number from {lo} to {hi}{what}, got {quote(value)}")
    return value


class Runs:
    """The runs one server keeps in memory, bounded (``MAX_LIVE_RUNS`` live, ``MAX_KEPT_RUNS`` in all)."""

    def __init__(self, max_live: int = MAX_LIVE_RUNS, max_kept: int = MAX_KEPT_RUNS) -> None:
        self.max_live = max_live
        self.max_kept = max_kept
        self.runs: OrderedDict[str, AgentRun] = OrderedDict()
        self._lock = threading.Lock()

    # --- the registry ---
    def get(self, run_id: Any) -> AgentRun:
        with self._lock:
            run = self.runs.get(run_id) if isinstance(run_id, str) else None
            known = list(self.runs)
        if run is None:
            listed = f"; runs here: {', '.join(known)}" if known else "; no runs here: start one with start_run"
            raise InvalidInput("run_id", f"unknown run {quote(run_id)}{listed}")
        return run

    def new_run(
        self, scenario: Any, seed: Any = 0, difficulty: Any = DEFAULT_DIFFICULTY, engine: Any = None
    ) -> Simulation:
        """The simulation a ``start_run`` asks for, checked (nothing kept yet: the caller prepares its engine
        first, then ``keep``s it). Only built-in scenarios: a path would let an agent read this machine's files."""
        known = builtin_scenarios()
        if not isinstance(scenario, str) or scenario not in known:
            raise InvalidInput(
                "scenario", f"unknown scenario {quote(scenario)}; known: {', '.join(known)} (list_scenarios)"
            )
        check_difficulty(difficulty)
        if engine is not None and not isinstance(engine, str):
            raise InvalidInput("engine", f"must be minute or request, got {quote(engine)}")
        self._check_room()
        return Simulation(known[scenario], seed=seed, engine=engine or None)

    def _check_room(self) -> None:
        """Refused when the live runs are at their limit (called with the registry's lock held, or before it)."""
        live = sum(not r.over for r in list(self.runs.values()))
        if live >= self.max_live:
            raise InvalidInput(
                "run",
                f"at most {self.max_live} live runs at once in this server; end one first (end with its run_id)",
            )

    def keep(self, sim: Simulation, difficulty: str = DEFAULT_DIFFICULTY) -> AgentRun:
        """Keep a new run (the limit checked again under the lock: two starts at once cannot both take the last
        place); the oldest runs that are over leave beyond ``max_kept``."""
        run = AgentRun(secrets.token_hex(4), sim, check_difficulty(difficulty))
        with self._lock:
            self._check_room()
            while run.id in self.runs:  # 32 bits: a clash is rare, never silent
                run.id = secrets.token_hex(4)
            self.runs[run.id] = run
            over = [r for r in self.runs.values() if r.over]
            for gone in over[: max(0, len(self.runs) - self.max_kept)]:  # the oldest over leave first
                del self.runs[gone.id]
        return run

    # --- playing ---
    def observe(self, run_id: Any) -> str:
        run = self.get(run_id)
        with run.lock:
            return observation_text(run)

    def act(self, run_id: Any, control: Any, value: Any = None) -> str:
        """Queue an action for the run's next minute, checked exactly as the console and the API check it."""
        run = self.get(run_id)
        with run.lock:
            if run.over:
                raise InvalidInput("run_id", f"run {run.id} is over: call debrief")
            action = run.sim.check_action(control, value)
            run.pending.append(action)
            return f"Queued for {run.sim.plan.clock(action.minute)} (the next minute): {describe(action)}."

    def advance(self, run_id: Any, minutes: Any = 1) -> str:
        """Compute ``minutes`` minutes (the queued actions apply to the first); stop early where the console's
        clock stops for a person on this difficulty (normal: the page; guided: the incident's start and the
        page; hard: never). Refused past the run's end."""
        run = self.get(run_id)
        with run.lock:
            sim = run.sim
            if run.over:
                raise InvalidInput("run_id", f"run {run.id} is over: call debrief")
            left = sim.length - sim.minute
            most = min(left, MAX_ADVANCE)
            _whole(minutes, "minutes", 1, most, f" (the run ends at {run.end_clock()}, {left} minutes from now)")
            run.pause_reason = None
            start = sim.minute
            for _ in range(minutes):
                record = sim.step(run.pending)
                run.pending = []
                reason = stop_for(run.difficulty, sim.plan, record, bool(sim.scenario.incident_hint.strip()))
                if reason is not None and not sim.done:
                    run.pause_reason = reason
                    break
            done = sim.minute - start
            said = f"Advanced {done} minute{'s' if done != 1 else ''} to {sim.plan.clock(sim.minute)}"
            if run.pause_reason is not None and done < minutes:
                said += f", stopped early: {'the page fired' if run.pause_reason == 'page' else 'the incident began'}"
            return said + ".\n" + observation_text(run)

    def end(self, run_id: Any) -> str:
        run = self.get(run_id)
        with run.lock:
            if run.over:
                raise InvalidInput("run_id", f"run {run.id} is over already: call debrief")
            if not run.sim.timeline:
                raise InvalidInput("run_id", f"run {run.id} has no minute yet to debrief: advance first")
            run.ended, run.pending = True, []
            return (
                f"Run {run.id} ended at {run.sim.plan.clock(run.sim.minute)} after {run.sim.minute} minutes "
                "(the counterfactuals of its debrief stop there too): call debrief."
            )

    def debrief(self, run_id: Any) -> str:
        """The debrief as Markdown (the postmortem the console exports): computed once, with its counterfactuals
        replayed to the same minute (seconds on the request engine)."""
        run = self.get(run_id)
        with run.lock:
            if not run.over:
                raise InvalidInput(
                    "run_id",
                    f"run {run.id} is not over: advance to its end ({run.end_clock()}) or end it first",
                )
            if run.debrief_md is None:
                report = make_report(run.sim, counterfactuals(run.sim))
                run.debrief_md = render_markdown(report)
            return run.debrief_md
