"""A run's minutes as OpenMetrics text: with a timestamp a minute (the export a TSDB backfills from), or as the
values now (what a scrape of a live run's ``/runs/{id}/metrics`` reads). One writer for both.

A record describes the minute [t, t + 1 min); its samples carry the time at the minute's end, start + (m + 1)
minutes, as a scrape at that instant would have seen them. A counter adds up the minutes' amounts from the
run's start, where it is 0 (the export writes that 0 a minute before a series first appears, so ``rate()`` sees
the first minute's increase); a gauge is the minute's value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from oncallsim.metrics.names import METRICS, Labels, Metric
from oncallsim.metrics.service import DEFAULT_SERVICE, check_service
from oncallsim.model import InvalidInput, MinuteRecord
from oncallsim.model.errors import quote

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_SERVICE",
    "TEXT_CONTENT_TYPE",
    "Accumulator",
    "check_service",
    "current_text",
    "default_start",
    "openmetrics_export",
    "parse_start",
]

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
# Prometheus' older text format, for a scraper that does not ask for OpenMetrics (and for `promtool check metrics`)
TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# The export's default epoch: 1 January 2026 (UTC), at the run's starting time of day.
DEFAULT_DAY = datetime(2026, 1, 1, tzinfo=UTC)
_EARLIEST, _LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)

_CUMULATIVE = ("counter", "histogram")  # their samples add up the minutes' amounts from the run's start
Point = tuple[str, Labels, float]  # a sample's full name, its labels (without service), its value


def default_start(clock_start_min: int) -> datetime:
    """Minute 0 of a run on the default day, at the run's starting time of day."""
    return DEFAULT_DAY + timedelta(minutes=clock_start_min)


def parse_start(value: str) -> datetime:
    """An ISO 8601 date and time with its time zone (``2026-03-02T09:00:00Z``), from 1970 to 2199."""
    try:
        start = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(
            "start", f"must be an ISO 8601 date and time with its zone, e.g. 2026-03-02T09:00:00Z; got {quote(value)}"
        ) from None
    if start.tzinfo is None:
        raise InvalidInput("start", f"must say its time zone (Z for UTC, or +01:00), got {quote(value)}")
    if not _EARLIEST <= start < _LATEST:
        raise InvalidInput("start", f"must be from 1970 to 2199, got {quote(value)}")
    return start


class Accumulator:
    """A run's metrics minute by minute: the counters' running totals, and each series' latest points.

    ``add`` takes the next record and returns its points, grouped by metric and series (a histogram's buckets,
    count and sum are one series); ``current`` gives the series of the last minute, as a scrape reads them."""

    def __init__(self) -> None:
        self.minutes = 0
        self._totals: dict[tuple[str, Labels], float] = {}
        self._latest: dict[tuple[str, Labels], tuple[int, list[Point]]] = {}

    def add(self, record: MinuteRecord) -> list[tuple[Metric, Labels, list[Point], bool]]:
        """The record's points: (metric, series labels, points, new: the series' first minute)."""
        out: list[tuple[Metric, Labels, list[Point], bool]] = []
        for m in METRICS:
            groups: dict[Labels, list[Point]] = {}
            for suffix, labels, value in m.read(record):
                name = m.sample_name + suffix if m.kind != "histogram" else m.name + suffix
                if m.kind in _CUMULATIVE:
                    key = (name, labels)
                    value = value if m.running else self._totals.get(key, 0.0) + value
                    self._totals[key] = value
                group = tuple(pair for pair in labels if pair[0] != "le")
                groups.setdefault(group, []).append((name, labels, value))
            for group, points in groups.items():
                new = (m.name, group) not in self._latest
                self._latest[(m.name, group)] = (record.minute, points)
                out.append((m, group, points, new))
        self.minutes = record.minute + 1
        return out

    def feed(self, records: Sequence[MinuteRecord]) -> None:
        """The records it has not seen yet (a live run's timeline grows at its end)."""
        for record in records[self.minutes :]:
            self.add(record)

    def current(self) -> list[tuple[Metric, list[Point]]]:
        """The series the last minute wrote, by metric in ``METRICS`` order."""
        last = self.minutes - 1
        by_metric: dict[str, list[Point]] = {}
        for (name, _), (minute, points) in self._latest.items():
            if minute == last:
                by_metric.setdefault(name, []).extend(points)
        return [(m, by_metric[m.name]) for m in METRICS if m.name in by_metric]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _header(m: Metric, openmetrics: bool = True) -> list[str]:
    """OpenMetrics names the family (a counter without ``_total``) and gives its unit; the older text format
    names the samples' metric and has no unit line."""
    if not openmetrics:
        name = m.sample_name
        return [f"# HELP {name} {_escape(m.help).replace(chr(34), chr(39))}", f"# TYPE {name} {m.kind}"]
    lines = [f"# TYPE {m.name} {m.kind}"]
    if m.unit:
        lines.append(f"# UNIT {m.name} {m.unit}")
    lines.append(f"# HELP {m.name} {_escape(m.help)}")
    return lines


def _sample(service: str, point: Point, timestamp: int | None) -> str:
    name, labels, value = point
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in (("service", service), *labels))
    line = f"{name}{{{inner}}} {_number(value)}"
    return line if timestamp is None else f"{line} {timestamp}"


def current_text(accumulator: Accumulator, service: str, openmetrics: bool = True) -> str:
    """The values now: what a scrape reads (no timestamps: the scraper stamps them), in OpenMetrics or in
    Prometheus' older text format (``TEXT_CONTENT_TYPE``)."""
    lines: list[str] = []
    for m, points in accumulator.current():
        lines.extend(_header(m, openmetrics))
        lines.extend(_sample(service, p, None) for p in points)
    if openmetrics:
        lines.append("# EOF")
    return "\n".join(lines) + "\n"


def openmetrics_export(records: Iterable[MinuteRecord], start: datetime, service: str) -> str:
    """Every minute of a run, each sample stamped with its minute's end (``start`` is minute 0's beginning);
    each series' samples together and in time order, as OpenMetrics asks and ``promtool tsdb
    create-blocks-from openmetrics`` reads."""
    epoch = int(start.timestamp())
    acc = Accumulator()
    series: dict[str, dict[Labels, list[tuple[int, list[Point]]]]] = {m.name: {} for m in METRICS}
    for record in records:
        end = epoch + (record.minute + 1) * 60
        for m, group, points, new in acc.add(record):
            rows = series[m.name].setdefault(group, [])
            if new and m.kind in _CUMULATIVE:  # a counter is 0 a minute before its first amount
                rows.append((end - 60, [(name, labels, 0.0) for name, labels, _ in points]))
            rows.append((end, points))
    lines: list[str] = []
    for m in METRICS:
        if not series[m.name]:
            continue
        lines.extend(_header(m))
        for rows in series[m.name].values():
            for timestamp, points in rows:
                lines.extend(_sample(service, p, timestamp) for p in points)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
