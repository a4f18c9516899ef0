"""A team's Prometheus rules evaluated over simulated runs by the real ``promtool test rules``.

Each run becomes one test group of a promtool unit-test file: its minutes as input series (the metrics of
docs/metrics.md, a sample a minute, those the rule file names), and one PromQL test a minute that asks for
``ALERTS`` and expects nothing. Prometheus' own rule manager evaluates the recording and alerting rules every
minute (their ``for:``, their order in a group, ``ALERTS`` itself); every minute an alert is pending or firing
fails its test, and promtool prints what it got. Those lines are the alerts' states, minute by minute.

Why promtool's unit tests and not a backfilled TSDB behind a Prometheus server (docs/alerts.md): a server
evaluates rules only at its own present, so a backfill would leave ``for:`` and the alert states to be
re-implemented here, and ``promtool tsdb create-blocks-from rules`` ignores alerting rules and cannot feed one
recording rule to another in a pass; the unit tests run the real rule manager over the whole run.

Time: the run's minute m is the sample at (m + 1) minutes, so an alert first firing at the evaluation at k
minutes is reported at minute k − 1, as the built-in page is (its record's minute).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from oncallsim.alerting.history import DEFAULT_HISTORY_MIN, MAX_HISTORY_MIN
from oncallsim.alerting.promtool import check_rules, unit_test_rules
from oncallsim.metrics.exposition import Accumulator
from oncallsim.metrics.names import METRICS
from oncallsim.model import InvalidInput, MinuteRecord
from oncallsim.simulation import Simulation
from oncallsim.validation import decode_text, read_bounded

__all__ = [
    "DEFAULT_HISTORY_MIN",
    "MAX_HISTORY_MIN",
    "PAGE_LABELS",
    "AlertSummary",
    "Episode",
    "RunAlerts",
    "alert_rules",
    "evaluate",
    "group_names",
    "input_series",
    "is_page",
    "rule_key",
    "summarize",
]

# An alert with one of these labels is a page (Sloth's ``sloth_severity``, the common ``severity``); others are
# reported too, and counted apart.
PAGE_LABELS: tuple[tuple[str, str], ...] = (("severity", "page"), ("severity", "critical"), ("sloth_severity", "page"))
MAX_JOBS = 4  # promtool processes at once, each over a share of the runs
BUILTIN = "built-in page"  # the model's multiwindow page (MODEL.md §8), as a row beside the team's alerts
_QUERY = "ALERTS # run {run} minute {minute}"
_FAILED_QUERY = re.compile(
    r'expr: "ALERTS # run (\d+) minute (\d+)", time: [^\n]*\n\s*exp: nil\n\s*got: ([^\n]*)', re.MULTILINE
)
_SAMPLE = re.compile(r'\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\}\s+(\S+?)(?:,\s+|$)')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
_GO_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[abfnrtv\\\"'])")
_SIMPLE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"', "'": "'"}


def _go_unquote(text: str) -> str:
    """A label value as Go's ``strconv.Quote`` printed it (promtool's labels), without its quotes."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        return _SIMPLE[code] if len(code) == 1 else chr(int(code[1:], 16))

    return _GO_ESCAPE.sub(one, text)


def is_page(labels: dict[str, str]) -> bool:
    return any(labels.get(name) == value for name, value in PAGE_LABELS)


def rule_key(alert: str, labels: dict[str, str]) -> str:
    """How a report names an alerting rule: its name, and its severity where it has one (Sloth names the page
    and the ticket of an SLO alike and tells them apart by ``sloth_severity``)."""
    severity = labels.get("sloth_severity") or labels.get("severity")
    return f"{alert} ({severity})" if severity else alert


@dataclass
class Episode:
    """One alert instance from pending to resolved (minutes of the run; None: not reached within the run)."""

    alert: str
    labels: dict[str, str]
    pending: int
    firing: int | None = None
    resolved: int | None = None

    @property
    def page(self) -> bool:
        """It pages someone: the built-in page, or an alert labelled as a page (``is_page``)."""
        return self.alert == BUILTIN or is_page(self.labels)

    @property
    def rule(self) -> str:
        return rule_key(self.alert, self.labels)


@dataclass
class RunAlerts:
    """One run's alerts: the team's episodes and the built-in page's, beside the run's incident."""

    label: str
    sim: Simulation
    incident_start: int | None
    episodes: list[Episode]
    builtin: list[Episode]

    @property
    def minutes(self) -> int:
        return len(self.sim.timeline)

    @property
    def quiet(self) -> bool:
        """Nothing went wrong: no scripted incident, and the built-in page never fired."""
        return self.incident_start is None and not self.builtin

    def clock(self, minute: int | None) -> str:
        return "—" if minute is None else self.sim.plan.clock(minute)


def _rule_file(rules: Path) -> dict[str, Any]:
    """The rule file as data (it already passed ``promtool check rules``)."""
    data = yaml.safe_load(decode_text(read_bounded(rules, "rule file"), str(rules)))
    return data if isinstance(data, dict) else {}


def group_names(rules: Path) -> list[str]:
    """The rule groups' names, in the file's order."""
    return [str(g.get("name")) for g in _rule_file(rules).get("groups") or [] if isinstance(g, dict)]


def alert_rules(rules: Path) -> dict[str, bool]:
    """The alerting rules (``rule_key``), in the file's order, each with whether its labels make it a page (the
    file already passed ``promtool check rules``)."""
    data = _rule_file(rules)
    found: dict[str, bool] = {}
    for group in data.get("groups") or []:
        for rule in group.get("rules") or []:
            name = rule.get("alert")
            if isinstance(name, str):
                labels = {str(k): str(v) for k, v in (rule.get("labels") or {}).items()}
                found.setdefault(rule_key(name, labels), is_page(labels))
    return found


def _needed(rules_text: str) -> list[Any]:
    """The metrics the rule file names (all of them if it selects by ``__name__``)."""
    if "__name__" in rules_text:
        return list(METRICS)
    return [m for m in METRICS if m.name in rules_text]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def input_series(
    records: Sequence[MinuteRecord], service: str, metrics: Iterable[Any], history: int = 0
) -> list[dict[str, str]]:
    """promtool's ``input_series`` for a run: each series a value a minute from time 0 to the run's end, ``_``
    where a series has no sample. The run's minute m is at ``history + m + 1`` minutes; before it, ``history``
    minutes like the opening one (a counter growing by the opening minute's amount each minute, a gauge at the
    opening minute's value), as the built-in page's window is pre-filled with the opening minute (MODEL.md §8)."""
    wanted = {m.name for m in metrics}
    n = len(records)
    values: dict[tuple[str, tuple[tuple[str, str], ...]], list[float | None]] = {}
    offsets: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    acc = Accumulator()
    for record in records:
        at = history + record.minute + 1
        for m, _, points, _new in acc.add(record):
            if m.name not in wanted:
                continue
            cumulative = m.kind in ("counter", "histogram")
            for name, labels, value in points:
                key = (name, labels)
                row = values.get(key)
                if row is None:
                    row = values[key] = [None] * (history + n + 1)
                    if record.minute == 0:  # the opening minute, repeated back through the history
                        for j in range(history + 1):
                            row[j] = value * j if cumulative else (value if j > 0 else None)
                        offsets[key] = value * history if cumulative else 0.0
                    elif cumulative:
                        row[at - 1] = 0.0
                row[at] = value + offsets.get(key, 0.0) if cumulative else value
    out = []
    for (name, labels), row in values.items():
        inner = ",".join(f'{k}="{_escape(v)}"' for k, v in (("service", service), *labels))
        text = " ".join("_" if v is None else repr(v) for v in row)
        out.append({"series": f"{name}{{{inner}}}", "values": text})
    return out


def _test_file(rules: Path, runs: Sequence[tuple[int, Simulation, str]], service: str, history: int) -> dict[str, Any]:
    """A promtool unit-test file: a test group per run (``runs``: its index, simulation, label)."""
    metrics = _needed(rules.read_text(encoding="utf-8"))
    tests = []
    for i, sim, label in runs:
        n = len(sim.timeline)
        tests.append(
            {
                "name": label,
                "interval": "1m",
                "input_series": input_series(sim.timeline, service, metrics, history),
                "promql_expr_test": [
                    {"expr": _QUERY.format(run=i, minute=m), "eval_time": f"{history + m + 1}m", "exp_samples": []}
                    for m in range(n)
                ],
            }
        )
    return {
        "rule_files": [str(rules.resolve())],
        "evaluation_interval": "1m",
        # every minute the groups in the file's order: promtool's own order is a map's, so an alert reading
        # another group's recording rule would see it a minute late on some runs and not on others
        "group_eval_order": group_names(rules),
        "tests": tests,
    }


def _states(stderr: str, runs: int) -> list[dict[int, list[dict[str, str]]]]:
    """Each run's active alerts by minute, read from the failed tests' ``got:`` lines."""
    states: list[dict[int, list[dict[str, str]]]] = [{} for _ in range(runs)]
    for match in _FAILED_QUERY.finditer(stderr):
        run, minute, got = int(match.group(1)), int(match.group(2)), match.group(3)
        alerts = []
        for sample in _SAMPLE.finditer(got):
            alerts.append({k: _go_unquote(v) for k, v in _LABEL.findall(sample.group(1))})
        states[run][minute] = alerts
    return states


def _episodes(by_minute: dict[int, list[dict[str, str]]], minutes: int) -> list[Episode]:
    """An alerting rule's episodes: from the minute any of its instances (label sets) went pending to the minute
    none was left; firing from the first minute one fired. Instances are counted together, as an Alertmanager
    grouping by alert name and severity pages once (Sloth's page has an instance per pair of windows)."""
    open_: dict[str, Episode] = {}
    first: dict[str, tuple[str, dict[str, str]]] = {}
    done: list[Episode] = []
    for minute in range(minutes):
        active: dict[str, str] = {}
        for labels in by_minute.get(minute, []):
            state = labels.get("alertstate", "")
            named = {k: v for k, v in labels.items() if k not in ("__name__", "alertstate", "alertname")}
            identity = rule_key(labels.get("alertname", "?"), named)
            if active.get(identity) != "firing":  # one instance firing: the rule fires
                active[identity] = state
                first.setdefault(identity, (labels.get("alertname", "?"), named))
        for identity, state in active.items():
            episode = open_.get(identity)
            if episode is None:
                episode = open_[identity] = Episode(*first[identity], minute)
            if state == "firing" and episode.firing is None:
                episode.firing = minute
        for identity in [i for i in open_ if i not in active]:
            episode = open_.pop(identity)
            episode.resolved = minute
            done.append(episode)
    done.extend(open_.values())
    return sorted(done, key=lambda e: (e.pending, e.alert))


def builtin_pages(timeline: Sequence[MinuteRecord]) -> list[Episode]:
    """The built-in page's episodes (``page_firing``), each firing at once (no pending)."""
    page = {"alertname": BUILTIN, "alertstate": "firing"}
    return _episodes({r.minute: [page] for r in timeline if r.page_firing}, len(timeline))


def evaluate(
    rules: Path,
    sims: Sequence[Simulation],
    labels: Sequence[str],
    service: str,
    history: int = DEFAULT_HISTORY_MIN,
    keep: Path | None = None,
) -> list[RunAlerts]:
    """Every run's alerts under ``rules``, evaluated by ``promtool test rules`` over ``history`` minutes like the
    opening one and then the run (``keep``: also write the generated unit-test file there, to run promtool on it
    by hand)."""
    check_rules(rules)
    indexed = [(i, sim, label) for i, (sim, label) in enumerate(zip(sims, labels, strict=True))]
    jobs = max(1, min(len(indexed), os.cpu_count() or 1, MAX_JOBS))
    shares = [indexed[j::jobs] for j in range(jobs)]  # every job a share of the runs: promtool uses one core
    with tempfile.TemporaryDirectory(prefix="oncallsim-alerts-") as folder:
        paths = []
        for j, share in enumerate(shares):
            path = Path(folder) / f"runs-{j}.test.yml"
            path.write_text(json.dumps(_test_file(rules, share, service, history)), encoding="utf-8")  # JSON is YAML
            paths.append(path)
        if keep is not None:
            keep.write_text(json.dumps(_test_file(rules, indexed, service, history)), encoding="utf-8")
        with ThreadPoolExecutor(jobs) as pool:
            outputs = list(pool.map(unit_test_rules, paths))
    stderr = "\n".join(output.stderr for output in outputs)
    for output in outputs:
        if output.returncode not in (0, 1):
            raise InvalidInput("promtool", _first_line(output.stderr or output.stdout) or f"exited {output.returncode}")
    leftover = _FAILED_QUERY.sub("", stderr)
    problems = [
        line.strip()
        for line in leftover.splitlines()
        if line.strip() and line.strip() != "FAILED:" and not line.startswith("Unit Testing")
    ]
    if problems:  # a rule that failed to evaluate, or anything else promtool said: its own words, one line
        raise InvalidInput(str(rules), "; ".join(problems)[:1000])
    states = _states(stderr, len(sims))
    out = []
    for sim, label, by_minute in zip(sims, labels, states, strict=True):
        timeline = sim.timeline
        out.append(
            RunAlerts(
                label,
                sim,
                sim.plan.first_event(len(timeline)),
                _episodes(by_minute, len(timeline)),
                builtin_pages(timeline),
            )
        )
    return out


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


@dataclass
class AlertSummary:
    """One alert over every run: incidents caught and how soon, and pages where nothing went wrong."""

    alert: str
    page: bool = False
    incidents: int = 0
    caught: int = 0
    after_start: list[int] = field(default_factory=list)  # first firing − the incident's start, per caught one
    after_builtin: list[int] = field(default_factory=list)  # first firing − the built-in page's, where both fired
    quiet_minutes: int = 0
    quiet_firings: int = 0
    unpaged_minutes: int = 0  # runs where the built-in page never fired, scripted incident or not
    unpaged_firings: int = 0

    @property
    def missed(self) -> int:
        return self.incidents - self.caught

    @property
    def per_week(self) -> float | None:
        """Firings per simulated week on the runs where nothing went wrong (None: no such run)."""
        return None if self.quiet_minutes == 0 else self.quiet_firings * 10_080 / self.quiet_minutes

    @property
    def unpaged_per_week(self) -> float | None:
        """Firings per simulated week on the runs the built-in page never fired on: pages for trouble that did not
        threaten the SLO (a small scripted incident counts here; None: no such run)."""
        return None if self.unpaged_minutes == 0 else self.unpaged_firings * 10_080 / self.unpaged_minutes


def summarize(runs: Sequence[RunAlerts], rules: dict[str, bool]) -> list[AlertSummary]:
    """Each alerting rule of the file (``alert_rules``; the built-in page first) over the runs."""
    rows = {BUILTIN: AlertSummary(BUILTIN, page=True)}
    for name, page in rules.items():
        rows[name] = AlertSummary(name, page=page)
    for run in runs:
        episodes = [*run.builtin, *run.episodes]
        for e in episodes:
            rows.setdefault(e.rule, AlertSummary(e.rule, page=e.page))
        builtin_first = _first_firing(run.builtin, run.incident_start)
        for name, row in rows.items():
            mine = [e for e in episodes if e.rule == name]
            if run.incident_start is not None:
                row.incidents += 1
                first = _first_firing(mine, run.incident_start)
                if first is not None:
                    row.caught += 1
                    row.after_start.append(first - run.incident_start)
                    if builtin_first is not None:
                        row.after_builtin.append(first - builtin_first)
            elif run.quiet:
                row.quiet_minutes += run.minutes
                row.quiet_firings += sum(1 for e in mine if e.firing is not None)
            if not run.builtin:
                row.unpaged_minutes += run.minutes
                row.unpaged_firings += sum(1 for e in mine if e.firing is not None)
    return list(rows.values())


def _first_firing(episodes: Iterable[Episode], since: int | None) -> int | None:
    if since is None:
        return None
    return min((e.firing for e in episodes if e.firing is not None and e.firing >= since), default=None)
