"""An hour of play against a real server, and its memory (issue 29, item 5): does the server's RSS stay flat?

    python scripts/memory_hour.py [--minutes 60] [--players 2] [--sample-s 15]

Starts ``oncallsim serve`` on a free loopback port (a fresh database) with its idle times compressed (``--limit
idle_s=…``: what a person leaves for ten minutes leaves memory here in ``--idle-s``), then ``--players`` scripted
people each play in a loop until the wall-clock budget (``--minutes``) is spent: start a run (every ``--request-
every``-th on the request engine), watch it at 16x over a WebSocket to its end with a few actions on the way,
open its debrief page and zoom into a minute, ask for the run file, sometimes open a game-day room and its page,
then go idle a while. Every ``--sample-s`` the server's resident memory (VmRSS, /proc) is printed with what it
holds (``/api/stats``); at the end, after an idle pause of twice the idle times, the last figure. Stops by itself:
the budget is a deadline; a run that does not finish within its own deadline is left (it is idle then).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MINUTE_SCENARIOS = ("bad-deploy", "cache-flush", "tutorial", "surge")
REQUEST_SCENARIOS = ("slow-instance", "retry-storm", "cpu-herd", "flash-crowd")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def children_rss_mib(pid: int) -> tuple[int, float]:
    """The server's descendants (the worker pools, the engines' preparer): how many, and their summed VmRSS.
    Workers are fresh interpreters (not forks), so their resident pages are their own but for shared libraries."""
    import psutil

    total, count = 0.0, 0
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return 0, 0.0
    for child in children:
        try:
            total += child.memory_info().rss / 2**20
            count += 1
        except psutil.NoSuchProcess:
            continue  # ended between the listing and the reading
    return count, total


def call(base: str, method: str, path: str, body: Any = None, timeout: float = 120.0) -> tuple[int, bytes]:
    headers = {"Origin": base}
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    request = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


class Player(threading.Thread):
    """One scripted person: play, debrief, zoom, sometimes a room, idle; counts what was done."""

    def __init__(self, base: str, k: int, deadline: float, args: argparse.Namespace) -> None:
        super().__init__(daemon=True, name=f"player-{k}")
        self.base, self.k, self.deadline, self.args = base, k, deadline, args
        self.rng = random.Random(k)
        self.counts: dict[str, int] = {"runs": 0, "finished": 0, "debriefs": 0, "zooms": 0, "rooms": 0, "429": 0}
        self.errors: list[str] = []

    def run(self) -> None:
        cycle = 0
        while time.monotonic() < self.deadline - 30:
            cycle += 1
            try:
                self.play(cycle)
            except Exception as exc:  # a failure is counted and the hour goes on
                self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            idle = self.rng.uniform(0.5, 1.5) * self.args.idle_between_s
            time.sleep(max(0.0, min(idle, self.deadline - time.monotonic())))

    def play(self, cycle: int) -> None:
        from websockets.sync.client import connect

        base = self.base
        request = cycle % self.args.request_every == 0
        scenario = self.rng.choice(REQUEST_SCENARIOS if request else MINUTE_SCENARIOS)
        status, body = call(base, "POST", "/api/runs", {"scenario": scenario, "speed": 16, "seed": cycle})
        if status == 429:
            self.counts["429"] += 1
            return
        assert status == 201, (status, body[:200])
        run_id = json.loads(body)["id"]
        self.counts["runs"] += 1
        ends = time.monotonic() + self.args.run_deadline_s
        url = base.replace("http://", "ws://") + f"/api/runs/{run_id}/ws"
        finished = False
        with connect(url, origin=base, open_timeout=60, max_size=None) as ws:  # type: ignore[arg-type]
            minutes = 0
            while time.monotonic() < ends:
                try:
                    message = json.loads(ws.recv(timeout=5))
                except TimeoutError:
                    continue
                kind = message.get("type")
                if kind == "minute":
                    minutes += 1
                    if minutes % 17 == 0:  # a few actions on the way
                        ws.send(json.dumps({"type": "action", "control": "floor", "value": self.rng.randint(8, 20)}))
                if kind == "finished":
                    finished = True
                    break
        if not finished:
            return
        self.counts["finished"] += 1
        status, _ = call(base, "GET", f"/runs/{run_id}/debrief")
        self.counts["debriefs"] += status == 200
        status, _ = call(base, "GET", f"/runs/{run_id}/zoom?minute={self.rng.randint(0, 40)}")
        self.counts["zooms"] += status == 200
        call(base, "GET", f"/api/runs/{run_id}/runfile")
        if cycle % 3 == 0:
            status, body = call(base, "POST", "/api/gameday/rooms", {"scenario": "bad-deploy", "seed": cycle})
            if status == 201:
                room = json.loads(body)
                self.counts["rooms"] += 1
                call(base, "GET", f"/gameday/{room['id']}")
            elif status == 429:
                self.counts["429"] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=60.0, help="wall-clock budget of the play, minutes")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--sample-s", type=float, default=15.0, help="how often RSS is sampled, seconds")
    parser.add_argument("--idle-s", type=float, default=60.0, help="the server's idle times (compressed), seconds")
    parser.add_argument("--idle-between-s", type=float, default=20.0, help="a player's pause between runs, seconds")
    parser.add_argument("--request-every", type=int, default=3, help="every Nth run on the request engine")
    parser.add_argument("--run-deadline-s", type=float, default=180.0, help="a run not over by then is left")
    args = parser.parse_args()
    for name in ("minutes", "players", "sample_s", "idle_s", "idle_between_s", "request_every", "run_deadline_s"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be more than 0, got {getattr(args, name)}")
    from tests.server import start_server

    limits = [f"idle_s={args.idle_s}", f"finished_s={args.idle_s / 2}", f"room_idle_s={args.idle_s}"]
    with tempfile.TemporaryDirectory() as tmp:
        process, base, log = start_server(
            Path(tmp) / "runs.sqlite3", startup_timeout_s=120, extra=[a for x in limits for a in ("--limit", x)]
        )
        started = time.monotonic()
        deadline = started + args.minutes * 60
        samples: list[tuple[float, float]] = []
        workers: list[tuple[int, float]] = []  # per sample: the server's child processes and their RSS
        try:
            players = [Player(base, k, deadline, args) for k in range(args.players)]
            for p in players:
                p.start()
            print("t_s  rss_mib  children  children_mib  total_mib  runs_in_memory  evicted  rooms  load1", flush=True)
            while time.monotonic() < deadline + 2 * args.idle_s:
                t = time.monotonic() - started
                stats = json.loads(call(base, "GET", "/api/stats")[1])
                rss = rss_mib(process.pid)
                samples.append((t, rss))
                workers.append(children_rss_mib(process.pid))
                n, mib = workers[-1]
                print(
                    f"{t:5.0f}  {rss:7.1f}  {n:3d}  {mib:7.1f}  {rss + mib:7.1f}  "
                    f"{stats['runs_in_memory']:5d}  {stats['runs_evicted']:5d}  "
                    f"{stats['rooms_in_memory']:5d}  {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
                time.sleep(args.sample_s)
            for p in players:
                p.join(timeout=60)
        finally:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:  # a loaded machine: the figures still count, the server goes
                print("the server did not end within 60 s of SIGTERM: killed", flush=True)
                process.kill()
                process.wait(timeout=30)
            log.close()
    counts: dict[str, int] = {}
    for p in players:
        for key, value in p.counts.items():
            counts[key] = counts.get(key, 0) + value
    errors = [e for p in players for e in p.errors]
    played = [rss for t, rss in samples if t <= args.minutes * 60]
    totals = [rss + mib for (_, rss), (_, mib) in zip(samples, workers, strict=True)]
    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_minutes": args.minutes,
        "players": args.players,
        "counts": counts,
        "errors": len(errors),
        "rss_mib_first": round(samples[0][1], 1),
        "rss_mib_peak": round(max(r for _, r in samples), 1),
        "rss_mib_end_of_play": round(played[-1], 1) if played else None,
        "rss_mib_after_idle": round(samples[-1][1], 1),
        "workers_max": max(n for n, _ in workers),
        "workers_rss_mib_peak": round(max(mib for _, mib in workers), 1),
        "workers_rss_mib_after_idle": round(workers[-1][1], 1),
        "total_rss_mib_peak": round(max(totals), 1),
        "total_rss_mib_end_of_play": round(totals[len(played) - 1], 1) if played else None,
        "total_rss_mib_after_idle": round(totals[-1], 1),
        "load1_at_end": round(os.getloadavg()[0], 1),
    }
    for e in errors[:10]:
        print("error:", e)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
