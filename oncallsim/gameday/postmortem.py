"""A game day's debrief: the run's own debrief (``debrief.make_report``) with its incident timeline, each action
given the name and role of who took it, and the room's log interleaved (injected faults revealed, the incident
channel, status-page updates, the facilitator's notes); the key intervals; and the blameless-postmortem draft in
Markdown. The same code serves the live room and ``oncallsim gameday export`` on an exported room file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from oncallsim.debrief import Report
from oncallsim.debrief.incident import recovery_minute
from oncallsim.debrief.markdown import render_markdown
from oncallsim.debrief.postmortem import TIMELINE_TEXTS
from oncallsim.gameday.faults import FAULT_LABELS
from oncallsim.gameday.roles import ROLE_LABELS
from oncallsim.model import InvalidInput
from oncallsim.simulation import RunFile, Simulation
from oncallsim.validation import decode_text, invalid_input, read_bounded

__all__ = [
    "ROOM_FILE_FORMAT",
    "ROW_TEXTS",
    "Intervals",
    "RoomFile",
    "TeamRow",
    "intervals",
    "postmortem_markdown",
    "team_timeline",
]

ROOM_FILE_FORMAT = "oncallsim-room"
# The rows the room adds to the debrief's timeline (gettext msgids with named arguments).
ROW_TEXTS = {
    "action": "%(who)s (%(role)s): %(action)s",
    "inject": "fault injected by the facilitator: %(fault)s",
    "inject_hidden": "fault injected by the facilitator, hidden from the players: %(fault)s",
    "message": "%(who)s (%(role)s) in the channel: %(text)s",
    "status": "status page (%(who)s): %(text)s",
    "note": "facilitator's note: %(text)s",
}
ORDER = {"scenario": 0, "inject": 0, "detection": 1, "action": 2, "message": 2, "status": 2, "mitigation": 3,
         "recovery": 4, "note": 5}  # fmt: skip


class LogLine(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    seq: int = Field(ge=0)
    minute: int = Field(ge=0)
    kind: str = Field(max_length=20)
    name: str = Field(max_length=80)
    role: str = Field(max_length=40)
    data: dict[str, Any]


class Player(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(max_length=80)
    role: str = Field(max_length=40)


class RoomFile(BaseModel):
    """An exported room: the run file (the scenario with its injected faults, every action) and the room's
    players and log, enough to rebuild the team's debrief offline."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    format: Literal["oncallsim-room"] = "oncallsim-room"
    id: str = Field(max_length=40)
    title: str = Field(max_length=200)
    created_at: str = Field(max_length=40)
    players: list[Player] = Field(default_factory=list, max_length=1000)
    log: list[LogLine] = Field(default_factory=list, max_length=50_000)
    run: RunFile

    @classmethod
    def load(cls, path: str | Path) -> RoomFile:
        """A room file on disk: a regular file of bounded size, parsed in memory; errors name the field."""
        return cls.parse(decode_text(read_bounded(Path(path), "room file"), str(path)), str(path))

    @classmethod
    def parse(cls, text: str, source: str = "room file") -> RoomFile:
        try:
            room = cls.model_validate_json(text)
        except ValidationError as exc:
            raise invalid_input(exc, source) from None
        except (ValueError, RecursionError):
            raise InvalidInput(source, "not valid JSON") from None
        RunFile.parse(room.run.model_dump_json(), f"{source}: run")  # the run file's own checks (model version)
        return room


class TeamRow(BaseModel):
    """A row of the team's timeline: a template (msgid) and its arguments, with who and when."""

    minute: int
    clock: str
    kind: str
    who: str = ""
    role: str = ""
    template: str
    args: dict[str, str] = {}
    seq: int = -1  # the room's log line (the order within a minute); -1: a row of the run's own debrief
    # an injected fault's kind, time and values: the page words it in its reader's language (``args["fault"]`` is
    # the English the postmortem's Markdown says)
    fault: dict[str, Any] | None = None

    def text(self) -> str:
        return self.template % self.args if self.args else self.template


class Intervals(BaseModel):
    """Minutes from the fault (the first injected fault, else the scenario's incident) to the team's first
    action or message (detect), first action (mitigate), and errors back under the SLO for good (recover)."""

    fault_minute: int | None
    fault_clock: str | None
    detect_min: int | None
    mitigate_min: int | None
    recover_min: int | None


def _fault_text(data: dict[str, Any]) -> str:
    kind = str(data.get("kind", ""))
    label = FAULT_LABELS.get(kind, kind.replace("_", " "))
    values = data.get("values") or {}
    if kind == "service" and isinstance(values.get("service"), str):  # which of the chain's services
        label = f"{label} {values['service']}"
    details = ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in values.items() if isinstance(v, (int, float)))
    return f"{label} at {data.get('at', '')}" + (f" ({details})" if details else "")


def team_timeline(report: Report, log: Sequence[Any], clock: Any, reveal: bool = True) -> list[TeamRow]:
    """The debrief's incident timeline with each action attributed (the k-th action row is the k-th action of
    the log: both are in the order the actions were taken) and the room's lines interleaved by minute.
    ``reveal`` false leaves out hidden faults and notes (what a player sees during the run)."""
    actions = [e for e in log if e.kind == "action"]
    revealed = {e.data.get("seq") for e in log if e.kind == "reveal"}
    rows: list[TeamRow] = []
    k = 0
    for entry in report.incident_timeline:
        if entry.kind == "action":
            who = actions[k] if k < len(actions) else None
            k += 1
            if who is not None and who.name:
                role = ROLE_LABELS.get(who.role, who.role)
                args = {"who": who.name, "role": role, "action": entry.args.get("action", "")}
                rows.append(
                    TeamRow(
                        minute=entry.minute,
                        clock=entry.clock,
                        kind="action",
                        who=who.name,
                        role=who.role,
                        template=ROW_TEXTS["action"],
                        args=args,
                        seq=who.seq,
                    )
                )
                continue
            rows.append(
                TeamRow(
                    minute=entry.minute,
                    clock=entry.clock,
                    kind="action",
                    template=TIMELINE_TEXTS["action"],
                    args=entry.args,
                )
            )
            continue
        rows.append(TeamRow(minute=entry.minute, clock=entry.clock, kind=entry.kind, template=entry.template,
                            args=entry.args))  # fmt: skip
    for e in log:
        if e.kind == "inject":
            hidden = bool(e.data.get("hidden")) and e.seq not in revealed
            if hidden and not reveal:
                continue
            at = int(e.data.get("at_minute", e.minute))
            template = ROW_TEXTS["inject_hidden" if e.data.get("hidden") else "inject"]
            fault = {key: e.data[key] for key in ("kind", "at", "values") if key in e.data}
            rows.append(TeamRow(minute=at, clock=clock(at), kind="inject", who="facilitator", role="facilitator",
                                template=template, args={"fault": _fault_text(e.data)}, seq=e.seq,
                                fault=fault))  # fmt: skip
        elif e.kind in ("message", "status") or (e.kind == "note" and reveal):
            args = {"who": e.name, "role": ROLE_LABELS.get(e.role, e.role), "text": str(e.data.get("text", ""))}
            rows.append(TeamRow(minute=e.minute, clock=clock(e.minute), kind=e.kind, who=e.name, role=e.role,
                                template=ROW_TEXTS[e.kind], args=args, seq=e.seq))  # fmt: skip
    return sorted(rows, key=lambda r: (r.minute, ORDER.get(r.kind, 2), r.seq))


def intervals(sim: Simulation, report: Report, log: Sequence[Any]) -> Intervals:
    injected = [int(e.data.get("at_minute", e.minute)) for e in log if e.kind == "inject"]
    injected = [m for m in injected if m < len(sim.timeline)]
    fault = min(injected) if injected else report.incident_minute
    if fault is None:
        return Intervals(fault_minute=None, fault_clock=None, detect_min=None, mitigate_min=None, recover_min=None)
    team = [e for e in log if e.kind in ("action", "message", "status") and e.role != "facilitator"]
    first_any = next((e.minute for e in team if e.minute >= fault), None)
    first_action = next((e.minute for e in team if e.kind == "action" and e.minute >= fault), None)
    recovered = recovery_minute(sim.timeline, fault, sim.params)
    return Intervals(
        fault_minute=fault,
        fault_clock=sim.plan.clock(fault),
        detect_min=None if first_any is None else first_any - fault,
        mitigate_min=None if first_action is None else first_action - fault,
        recover_min=None if recovered is None else recovered - fault,
    )


def _cell(text: object) -> str:
    """A table cell or a line: a user's text cannot break the Markdown (pipes, line breaks, HTML escaped)."""
    out = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("\r", " ")
    return out.replace("<", "&lt;").replace(">", "&gt;")


def _minutes(value: int | None) -> str:
    return "—" if value is None else f"{value} min"


def postmortem_markdown(
    title: str, sim: Simulation, report: Report, log: Sequence[Any], players: Sequence[tuple[str, str]]
) -> str:
    """The blameless-postmortem draft: summary, impact, key intervals, timeline, what went well and wrong, action
    items left for the team, and the run's debrief (``debrief.markdown``) as an appendix."""
    rows = team_timeline(report, log, sim.plan.clock)
    span = intervals(sim, report, log)
    failed = [o for o in report.objectives if not o.passed]
    passed = [o for o in report.objectives if o.passed]
    team = ", ".join(f"{_cell(n)} ({ROLE_LABELS.get(r, r)})" for n, r in players) or "—"
    faults = [e for e in log if e.kind == "inject"]
    lines = [
        f"# Postmortem (draft) — {_cell(title)}",
        "",
        "*Blameless: this reviews what the system and the process did, not who is to blame.*",
        "",
        "## Summary",
        "",
        f"- Game day on the scenario {_cell(report.scenario_title)} (seed {report.seed}, {sim.engine.name} engine), "
        f"{report.minutes} minutes from {sim.plan.clock(0)}.",
        f"- Team: {team}.",
        f"- Faults injected: {len(faults)}; " + ("; ".join(_cell(_fault_text(f.data)) for f in faults) or "none") + ".",
        f"- Result: {'all objectives met' if report.passed else 'objectives missed'}; score {report.score} / 100.",
        *[f"- {_cell(h)}" for h in report.headline],
        "",
        "## Impact",
        "",
        f"- Error budget spent: {report.budget_spent:.2%} of the 30-day budget ({report.budget_left:.2%} left).",
        f"- Users turned away (shed): {report.turned_away_share:.2%} of {report.requests:,.0f} requests.",
        f"- Worst p99 latency: {report.worst_p99_ms:,.0f} ms; minutes over the latency target: "
        f"{report.minutes_over_latency_target}.",
        f"- Cost of the fleet: ${report.cost:,.2f}.",
        "",
        "## Key intervals",
        "",
        f"- The fault: {span.fault_clock or '—'}.",
        f"- Time to detect (first action or message after the fault): {_minutes(span.detect_min)}.",
        f"- Time to mitigate (first action after the fault): {_minutes(span.mitigate_min)}.",
        f"- Time to recover (errors back under the SLO for good): {_minutes(span.recover_min)}.",
        "",
        "## Timeline",
        "",
        "| time | who | what |",
        "|---|---|---|",
        *[f"| {r.clock} | {_cell(r.who or '—')} | {_cell(r.text())} |" for r in rows],
        "",
        "## What went well",
        "",
        *([f"- Objective met: {_cell(o.name)}." for o in passed] or ["- (for the team to fill in)"]),
        "",
        "## What went wrong",
        "",
        *([f"- Objective missed: {_cell(o.name)}." for o in failed] or ["- (for the team to fill in)"]),
        *[
            f"- Error budget spent on {c.replace('_', ' ')}: {v:.2%}."
            for c, v in report.budget_spent_by_cause.items()
            if v > 0
        ],
        "",
        "## Action items",
        "",
        "| action | owner | due |",
        "|---|---|---|",
        "| (for the team to fill in) | | |",
        "",
        "## Appendix: the run's debrief",
        "",
    ]
    # the debrief one level down: its sections (and a chain's "Contradictions in the graph" under its origins)
    appendix = (
        render_markdown(report)
        .replace("\n### ", "\n#### ")
        .replace("\n## ", "\n### ")
        .replace("# Postmortem", "### Debrief", 1)
    )
    return "\n".join(lines) + appendix
