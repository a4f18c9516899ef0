"""The two ways to evaluate a team's rules over simulated runs, timed on the same runs in one process:

- **promtool** (what ``oncallsim alerts`` does): ``promtool test rules`` on generated input series, the rule
  manager evaluating every rule each minute, ``ALERTS`` read a minute at a time;
- **a backfilled TSDB** (the peer): the runs exported, ``promtool tsdb create-blocks-from openmetrics``, a
  Prometheus started on them, and each alerting rule's condition asked of its HTTP API with ``query_range`` a
  minute apart, the recording rules it names written out inline (a server evaluates rules only at its own
  present, and the rule backfiller ignores alerts); the ``for:`` would then be done by hand, not timed here.

Prints wall-clock seconds and child-process CPU seconds for each, and their ratio. Run:
``python benchmarks/alerts.py [--runs bad-deploy:4 free-play:1 …]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oncallsim import Simulation
from oncallsim.alerting.evaluate import DEFAULT_HISTORY_MIN, evaluate
from oncallsim.metrics import openmetrics_export, parse_start

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "examples" / "rules" / "slo-99.9.yml"
SEL_ERR = 'http_server_requests_total{service="oncallsim",status_class="5xx"}'
SEL_ALL = 'http_server_requests_total{service="oncallsim",cause!="shed"}'
E = "0.0009999999999999432"


def _ratio(window: str) -> str:
    return f"(sum(rate({SEL_ERR}[{window}])) / sum(rate({SEL_ALL}[{window}])))"


# The shipped rules' alert conditions with their recording rules written out.
CONDITIONS = {
    "page": f"({_ratio('5m')} > 14.4*{E} and {_ratio('1h')} > 14.4*{E}) or "
    f"({_ratio('30m')} > 6*{E} and {_ratio('6h')} > 6*{E})",
    "ticket": f"({_ratio('2h')} > 3*{E} and {_ratio('1d')} > 3*{E}) or ({_ratio('6h')} > {E} and {_ratio('3d')} > {E})",
    "naive": f"{_ratio('5m')} > 0.01",
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def by_promtool(sims: list[Simulation]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), children_cpu()
    evaluate(RULES, sims, [f"run {i}" for i in range(len(sims))], "oncallsim", DEFAULT_HISTORY_MIN)
    return time.perf_counter() - wall, children_cpu() - cpu


def by_tsdb(sims: list[Simulation]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), children_cpu()
    folder = Path(tempfile.mkdtemp(prefix="oncallsim-bench-"))
    try:
        spans = []
        for i, sim in enumerate(sims):  # each run on its own day, one after another
            start = parse_start(f"2026-01-{i + 1:02d}T00:00:00Z")
            path = folder / f"run-{i}.om"
            path.write_text(openmetrics_export(sim.timeline, start, "oncallsim"))
            subprocess.run(
                ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(path), str(folder / "data")],
                check=True,
                capture_output=True,
            )
            spans.append((start.timestamp(), start.timestamp() + 60 * len(sim.timeline)))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        (folder / "p.yml").write_text("global: {}\n")
        server = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={folder / 'p.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=100y",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            while True:
                try:
                    with urllib.request.urlopen(base + "/-/ready", timeout=1) as r:
                        if r.status == 200:
                            break
                except OSError:
                    time.sleep(0.05)
            for begin, end in spans:
                for expr in CONDITIONS.values():
                    query = {"query": expr, "start": begin + 60, "end": end, "step": "60"}
                    with urllib.request.urlopen(f"{base}/api/v1/query_range?{urllib.parse.urlencode(query)}") as r:
                        assert json.load(r)["status"] == "success"
        finally:
            server.terminate()
            server.wait()
    finally:
        shutil.rmtree(folder)
    return time.perf_counter() - wall, children_cpu() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="*", default=["bad-deploy:4", "free-play:1"], help="SCENARIO:SEED …")
    args = ap.parse_args()
    sims = []
    for item in args.runs:
        scenario, seed = item.split(":")
        sim = Simulation(scenario, seed=int(seed))
        sim.run()
        sims.append(sim)
    minutes = sum(len(s.timeline) for s in sims)
    print(f"{len(sims)} run(s), {minutes} minutes, history {DEFAULT_HISTORY_MIN} min for promtool")
    for name, fn in (("promtool test rules", by_promtool), ("backfilled TSDB + query_range", by_tsdb)):
        wall, cpu = fn(sims)
        print(f"{name:32} {wall:6.2f} s wall, {cpu:6.2f} s of CPU in its processes")


if __name__ == "__main__":
    main()
