"""The textbook operator's fleet playbook (request engine): read the fleet view, take bad instances out.

- An instance in rotation that fails most of what it is sent (refused, never answered, timing out) or whose
  p99 is several times the fleet's median is **ejected** — at most half the rotation, worst first.
- One or two bad instances are **replaced** (a slow disk or a crash does not heal); more at once look like a
  zone or network problem: eject them, raise the floor by as many so capacity holds, and wait.
- When the zone is back online, readmit what was ejected and restore the opening floor.
- Overload with FIFO queues (the fleet saturated and the p99 at the timeout): queues that outgrow the timeout
  serve only answers nobody waits for, so switch to CoDel, which answers the excess at once (a 503) and keeps
  the standing queue short. (Measured on flash-crowd: adding the BBR limiter as well spent more of the budget,
  17–21 % against 12–13 % over seeds 0–3: its cap, peak throughput × least latency, rejects more than the
  excess while the CPU average is above 80 %.) Back to FIFO once the fleet has room again: CoDel's 5 ms target
  also drops in the ordinary bursts of a fleet at 60 % (requests of 80 ms, 16 workers an instance).
- A retry storm (the clients' attempts amplify what is admitted by half again or more): a retry budget of 10 %
  (the SRE book's per-client rule) caps the amplification at 1.1×, and deadline propagation stops the fleet
  from serving the attempts whose clients already gave up, so the backlog drains at once. Both stay on: they
  cost nothing in calm times. (Measured on retry-storm, seed 7, acting 3 minutes after the trigger ended:
  deadlines alone recover within a minute, CoDel within two, the budget alone after 19 minutes — the stale
  backlog is served first — and jittered backoff, the BBR limiter or shedding the low-priority share not at
  all: backoff only defers the work of an open system, the limiter's least latency is the storm's, and the
  admitted load × 4 stays above capacity.)

- The article's "befores" (issue 23), each replaced by its "after" once its failure shows: a weighted balancer
  (static weights, or weights from the CPU each instance reports) whose p99 has doubled since the run began →
  p2c; classic circuit breakers while more than 2 % of requests fail → adaptive throttling (sre); a token bucket
  that rejects more than 1 % of the requests → the BBR limiter, which measures what each instance can take.

Only what the console shows is read: the per-instance lines of the last record and its events.
"""

from __future__ import annotations

import statistics
from typing import Any

from oncallsim.model.events import Event
from oncallsim.simulation import Observation

__all__ = ["FleetPlaybook"]

FAILING_SHARE = 0.5  # an instance failing this share of what it was sent is bad
MIN_FAILURES = 3  # … with at least this many failures in the minute (a trickle proves little)
SLOW_RATIO = 3.0  # an instance whose p99 is this many times the fleet's median is bad
SLOW_FLOOR_MS = 500.0  # … and above this
REPLACE_AT_MOST = 2  # more bad instances at once: a zone, not a machine
SATURATED = 0.95  # utilization of a saturated fleet
TIMED_OUT = 0.9  # a p99 at this share of the timeout: the queues outgrow it
ROOM_AGAIN = 0.6  # utilization at which the fleet has room again (back to FIFO)
CODEL_HOLD_MIN = 5  # … and not sooner than this after switching
FLEET_FAILING = 0.2  # when the median instance fails this share, it is the fleet, not an instance
AMPLIFIED = 1.5  # attempts per admitted request at which the clients' retries amplify the load
RETRY_BUDGET = 0.1  # the SRE book's per-client retry budget: retries under 10 % of requests
HERD_P99 = 2.0  # a weighted balancer whose p99 is this many times the run's first minute's: herding
BREAKER_ERRORS = 0.02  # classic breakers with this share of requests failing: flapping
BUCKET_LIMITED = 0.01  # a token bucket rejecting this share of the requests: its fixed rate is wrong


class FleetPlaybook:
    """Per-run memory: the instances it ejected, the floor it raised from."""

    def __init__(self) -> None:
        self.ejected: set[int] = set()
        self.replacing: set[int] = set()
        self.opening_floor: int | None = None
        self.codel_since: int | None = None  # the minute it switched the queues to CoDel

    def decide(self, observation: Observation) -> list[tuple[str, Any]]:
        last = observation.last
        if last is None or not last.extras or "instances" not in last.extras:
            return []
        if self.opening_floor is None:
            self.opening_floor = observation.controls.floor
        lines = last.extras["instances"]
        events = [e for e in last.events if isinstance(e, Event)]
        codes = {e.code for e in events}
        serving = len(lines["served"])
        if "scaled_in" in codes:  # the minute's lines still show the instances the autoscaler just removed
            serving = min(serving, last.desired)
        for e in events:
            if e.code == "instance_replaced":
                self.replacing.discard(int(e.args["instance"]))
        self.ejected = {i for i in self.ejected if i < serving and lines["ejected"][i]}
        actions: list[tuple[str, Any]] = (
            self._overload(observation) + self._retries(observation) + self._afters(observation)
        )
        if "zone_back" in codes and self.ejected:
            actions.extend(("readmit", i) for i in sorted(self.ejected))
            self.ejected.clear()
            if observation.controls.floor != self.opening_floor:
                actions.append(("floor", self.opening_floor))
            return actions
        rotation = [
            i
            for i in range(serving)
            if lines["registered"][i] and not lines["ejected"][i] and not lines.get("replacing", [0] * serving)[i]
        ]
        bad = self._bad(lines, rotation)[: len(rotation) // 2]
        if not bad:
            return actions
        actions.extend(("eject", i) for i in bad)
        self.ejected.update(bad)
        if len(bad) + len(self.replacing) <= REPLACE_AT_MOST:
            actions.extend(("replace", i) for i in bad)
            self.replacing.update(bad)
        else:
            floor = min(observation.controls.floor + len(bad), observation.params.max_fleet)
            actions.append(("floor", floor))
        return actions

    def _overload(self, observation: Observation) -> list[tuple[str, Any]]:
        last = observation.last
        assert last is not None
        controls = observation.controls
        # With a zone off the network the fleet's utilization averages its unreachable instances' idle workers in
        # (two thirds of a saturated fleet read 67 %): a p99 at the timeout then is the survivors' overload.
        busy = last.utilization >= SATURATED or _zone_lost(last)
        saturated = busy and last.p99_ms >= TIMED_OUT * observation.params.timeout_s * 1000
        if saturated and controls.queue_discipline == "fifo":
            self.codel_since = observation.minute
            return [("queue_discipline", "codel")]
        calm = last.utilization < ROOM_AGAIN and last.booting == 0
        if self.codel_since is not None and calm and observation.minute - self.codel_since >= CODEL_HOLD_MIN:
            self.codel_since = None
            return [("queue_discipline", "fifo")]
        return []

    @staticmethod
    def _retries(observation: Observation) -> list[tuple[str, Any]]:
        last = observation.last
        assert last is not None
        controls = observation.controls
        attempts = last.extra("attempts_per_s") or 0.0
        if last.admitted_per_s <= 0 or attempts <= AMPLIFIED * last.admitted_per_s:
            return []
        actions: list[tuple[str, Any]] = []
        if controls.retry_budget == 0:
            actions.append(("retry_budget", RETRY_BUDGET))
        if not controls.deadline_propagation:
            actions.append(("deadline_propagation", True))
        return actions

    @staticmethod
    def _afters(observation: Observation) -> list[tuple[str, Any]]:
        last = observation.last
        assert last is not None
        controls = observation.controls
        actions: list[tuple[str, Any]] = []
        first = observation.timeline[0].p99_ms
        if controls.balancer in ("weighted-round-robin", "dynamic-wrr") and last.p99_ms > HERD_P99 * first:
            actions.append(("balancer", "p2c"))
        if controls.breaker == "classic" and last.error_rate > BREAKER_ERRORS:
            actions.append(("breaker", "sre"))
        limited = last.extra("limited_per_s") or 0.0
        if controls.limiter == "token-bucket" and limited > BUCKET_LIMITED * last.requests_per_s:
            actions.append(("limiter", "bbr"))
        return actions

    @staticmethod
    def _bad(lines: dict[str, list[Any]], rotation: list[int]) -> list[int]:
        """The instances in rotation that fail or lag, worst first. Those the fleet view marks unreachable (their
        zone off the network) come first and alone: since model version 2 the clients' gRPC connections drop them
        within seconds, so they fail nothing they are no longer sent, yet they are capacity the fleet has lost."""
        health = lines.get("health", [])
        unreachable = [i for i in rotation if i < len(health) and health[i] == "offline"]
        if unreachable:
            return unreachable
        p99s = [lines["p99_ms"][i] for i in rotation if lines["p99_ms"][i] is not None]
        median = statistics.median(p99s) if p99s else None
        shares = [lines["errors"][i] / max(lines["served"][i], lines["errors"][i], 1) for i in rotation]
        if shares and statistics.median(shares) >= FLEET_FAILING:  # overload, a bad build: not one instance
            return []
        failing: list[tuple[float, int]] = []
        slow: list[tuple[float, int]] = []
        for i in rotation:
            served, errors, p99 = lines["served"][i], lines["errors"][i], lines["p99_ms"][i]
            sent = max(served, errors)
            if errors >= MIN_FAILURES and errors >= FAILING_SHARE * sent:
                failing.append((2.0 + errors / max(sent, 1), i))
            elif median is not None and p99 is not None and p99 > SLOW_FLOOR_MS and p99 > SLOW_RATIO * median:
                slow.append((p99 / median, i))
        if len(slow) > REPLACE_AT_MOST:  # many lag at once: the fleet is loaded (new idle instances lower the
            slow = []  # median), not its machines broken; ejecting them would take its capacity away
        return [i for _, i in sorted(failing + slow, reverse=True)]


def _zone_lost(last: Any) -> bool:
    """Whether the fleet view marks an instance unreachable (its zone off the network)."""
    return "offline" in (last.extras or {}).get("instances", {}).get("health", ())
