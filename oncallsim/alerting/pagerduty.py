"""Pages where a team receives them: PagerDuty's Events API v2 (a trigger when the page fires, a resolve when it
clears, one ``dedup_key`` for the two), posted to a URL the server was started with.

Nothing leaves the machine unless ``oncallsim serve --pagerduty-url URL --pagerduty-routing-key KEY`` (or their
environment variables) says where: the URL comes from whoever starts the server, never from a web request.
``oncallsim alerts … --pagerduty-url URL --pagerduty-routing-key KEY`` (the command line only) sends the pages a
team's own rules sent on the runs it evaluated. The
events of a run are posted in order, one at a time, on a thread of their own: the simulated clock never waits
for PagerDuty, and a failed post is logged (and tried twice more), not raised.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from oncallsim.alerting.evaluate import RunAlerts
from oncallsim.model import InvalidInput, MinuteRecord
from oncallsim.model.errors import quote

__all__ = [
    "PAGERDUTY_EVENTS_URL",
    "Pager",
    "PagerConfig",
    "check_routing_key",
    "check_url",
    "page_events",
    "rule_page_events",
]

PAGERDUTY_EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"  # PagerDuty's own, named in the docs only
_KEY = re.compile(r"[A-Za-z0-9]{1,64}")
MAX_URL = 2048
POST_TIMEOUT_S = 10.0
RETRIES_S = (1.0, 4.0)  # waits before the second and third tries of a post that failed

log = logging.getLogger("oncallsim.pagerduty")


def check_url(value: Any) -> str:
    """An http(s) URL with a host, no user or password in it and no fragment, at most 2,048 characters."""
    if not isinstance(value, str) or len(value) > MAX_URL:
        raise InvalidInput("pagerduty-url", f"must be an http(s) URL of at most {MAX_URL} characters")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("pagerduty-url", f"must be an http:// or https:// URL with a host, got {quote(value)}")
    if parts.username is not None or parts.password is not None or parts.fragment:
        raise InvalidInput("pagerduty-url", "must carry no user, password or #fragment (the key goes in the events)")
    try:
        parts.port  # noqa: B018  (a bad port raises)
    except ValueError:
        raise InvalidInput("pagerduty-url", f"has a bad port: {quote(value)}") from None
    return value


def check_routing_key(value: Any) -> str:
    """A PagerDuty integration's routing key: 1 to 64 letters and digits (PagerDuty's are 32)."""
    if not isinstance(value, str) or not _KEY.fullmatch(value):
        raise InvalidInput("pagerduty-routing-key", "must be 1 to 64 letters and digits (the integration's key)")
    return value


@dataclass(frozen=True)
class PagerConfig:
    url: str
    routing_key: str

    @classmethod
    def checked(cls, url: Any, routing_key: Any) -> PagerConfig | None:
        """Both or neither: a URL without a key (or a key without a URL) is refused."""
        if url is None and routing_key is None:
            return None
        if url is not None:
            check_url(url)
        if routing_key is not None:
            check_routing_key(routing_key)
        if url is None or routing_key is None:
            raise InvalidInput("pagerduty-url", "--pagerduty-url and --pagerduty-routing-key go together")
        return cls(check_url(url), check_routing_key(routing_key))


def _episode_start(timeline: Sequence[MinuteRecord], last: int) -> int:
    start = last
    while start > 0 and timeline[start - 1].page_firing:
        start -= 1
    return start


def page_events(
    routing_key: str, run_id: str, title: str, timeline: Sequence[MinuteRecord], clock: Any, now: datetime
) -> list[dict[str, Any]]:
    """The events the run's last minute calls for: a trigger when the built-in page began firing in it, a resolve
    when it stopped; none otherwise. ``dedup_key`` names the run and the minute the page began."""
    if not timeline:
        return []
    record = timeline[-1]
    before = timeline[-2].page_firing if len(timeline) > 1 else False
    if record.page_firing == before:
        return []
    began = _episode_start(timeline, record.minute if record.page_firing else record.minute - 1)
    dedup = f"oncallsim-{run_id}-page-{began}"
    if not record.page_firing:
        return [{"routing_key": routing_key, "event_action": "resolve", "dedup_key": dedup}]
    return [
        {
            "routing_key": routing_key,
            "event_action": "trigger",
            "dedup_key": dedup,
            "client": "oncallsim",
            "payload": {
                "summary": f"{title}: error budget burning {record.burn_1h:.1f}× over 1 h and "
                f"{record.burn_5m:.1f}× over 5 min (simulated {clock(record.minute)})",
                "source": f"oncallsim run {run_id}",
                "severity": "critical",
                "timestamp": now.astimezone(UTC).isoformat(),
                "component": "oncallsim",
                "class": "slo_burn_rate",
                "custom_details": {
                    "simulated_minute": record.minute,
                    "simulated_clock": clock(record.minute),
                    "error_rate": record.error_rate,
                    "burn_1h": record.burn_1h,
                    "burn_5m": record.burn_5m,
                    "budget_left": record.budget_left,
                },
            },
        }
    ]


def rule_page_events(routing_key: str, number: int, run: RunAlerts, now: datetime) -> list[tuple[int, dict[str, Any]]]:
    """The pages the team's own rules sent on an evaluated run (``oncallsim alerts``), each with the minute it
    belongs to: a trigger when a page began firing, a resolve when it resolved. ``number`` tells the runs of one
    command apart in the ``dedup_key``; tickets and other alerts that page no one are not sent."""
    out: list[tuple[int, dict[str, Any]]] = []
    for e in run.episodes:
        if not e.page or e.firing is None:
            continue
        rule = re.sub(r"[^A-Za-z0-9]+", "-", e.rule).strip("-")[:80]
        dedup = f"oncallsim-alerts-{number}-{rule}-{e.firing}"
        trigger = {
            "routing_key": routing_key,
            "event_action": "trigger",
            "dedup_key": dedup,
            "client": "oncallsim",
            "payload": {
                "summary": f"{e.rule} firing on {run.label[:200]} (simulated {run.clock(e.firing)})",
                "source": f"oncallsim alerts: {run.label[:200]}",
                "severity": "critical",
                "timestamp": now.astimezone(UTC).isoformat(),
                "component": "oncallsim",
                "class": e.alert[:200],
                "custom_details": {
                    "labels": e.labels,
                    "simulated_minute": e.firing,
                    "simulated_clock": run.clock(e.firing),
                    "incident_start": run.clock(run.incident_start),
                },
            },
        }
        out.append((e.firing, trigger))
        if e.resolved is not None:
            out.append((e.resolved, {"routing_key": routing_key, "event_action": "resolve", "dedup_key": dedup}))
    return sorted(out, key=lambda pair: pair[0])  # stable: a trigger stays before its own resolve


class Pager:
    """Posts a server's runs' page events to the configured URL, in order, on one thread."""

    def __init__(self, config: PagerConfig) -> None:
        self.config = config
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pagerduty")

    def minute(self, run_id: str, title: str, timeline: Sequence[MinuteRecord], clock: Any) -> list[Future[bool]]:
        """After a run's minute: its trigger or resolve, if any, queued to be posted."""
        return self.post(page_events(self.config.routing_key, run_id, title, timeline, clock, datetime.now(UTC)))

    def post(self, events: Sequence[dict[str, Any]]) -> list[Future[bool]]:
        """Events queued to be posted in their order (each future: posted, or not after three tries)."""
        return [self._pool.submit(self._post, event) for event in events]

    def _post(self, event: dict[str, Any]) -> bool:
        body = json.dumps(event).encode()
        for attempt, wait in enumerate((0.0, *RETRIES_S)):
            time.sleep(wait)
            request = urllib.request.Request(
                self.config.url, data=body, headers={"Content-Type": "application/json"}, method="POST"
            )
            final = False
            try:
                with urllib.request.urlopen(request, timeout=POST_TIMEOUT_S) as response:
                    if 200 <= response.status < 300:
                        return True
                    said = f"HTTP {response.status}"
            except urllib.error.HTTPError as exc:
                said = f"HTTP {exc.code}"
                final = 400 <= exc.code < 500 and exc.code != 429  # refused as it is: trying again will not help
            except OSError as exc:
                said = str(exc)[:200]
            log.warning("PagerDuty %s %s: %s (try %d)", event["event_action"], event["dedup_key"], said, attempt + 1)
            if final:
                break
        return False

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=False)
