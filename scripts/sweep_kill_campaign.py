"""The sweep kill campaign, run before a release: interrupt real sweeps at random moments, resume, compare.

Each trial starts ``oncallsim sweep`` on worker processes, stops it at a random moment once it has started
(before or after the first chunks are written) with SIGKILL, SIGTERM or SIGINT, checks that every chunk that was
on disk before the signal is still there, that no process of the sweep survives it, that what is kept reads as
Parquet without duplicates, and then resumes (sometimes interrupted again) until the sweep is done and equal,
row for row, to an uninterrupted sweep.

    python scripts/sweep_kill_campaign.py [--trials 100] [--seeds 400] [--workers 2] [--chunk 10] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil
import pyarrow.parquet as pq

SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)
EXPECTED_CODE = {signal.SIGKILL: -signal.SIGKILL, signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGINT: 130}


def command(out: Path, seeds: int, workers: int, resume: bool) -> list[str]:
    args = [sys.executable, "-m", "oncallsim", "sweep", "bad-deploy", "--seeds", str(seeds), "--policy", "textbook"]
    args += ["--grid", "rollback_minutes=3,5", "--workers", str(workers), "--out", str(out)]
    return [*args, "--resume"] if resume else args


def parts_of(out: Path) -> Path:
    return out.with_name(out.name + ".parts")


def part_names(out: Path) -> set[str]:
    return {p.name for p in parts_of(out).glob("part-*.parquet")}


def rows(path: Path) -> list[tuple[object, ...]]:
    table = pq.read_table(path)
    names = sorted(table.column_names)
    return sorted(zip(*(table.column(n).to_pylist() for n in names), strict=True), key=repr)


def keys(path: Path) -> list[tuple[object, object]]:
    table = pq.read_table(path, columns=["grid_rollback_minutes", "seed"])
    return list(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def interrupt(out: Path, args: argparse.Namespace, rng: random.Random, resume: bool, tally: Counter[str]) -> None:
    """One run stopped at a random moment; every check of what a stop must keep."""
    env = {**os.environ, "ONCALLSIM_ROWS_PER_TASK": str(args.chunk)}
    cmd = command(out, args.seeds, args.workers, resume)
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    me = psutil.Process(process.pid)
    wanted_parts = rng.choice((0, 0, 1, 2, 5, 10, 20))
    deadline = time.monotonic() + 120
    children: set[int] = set()
    while process.poll() is None and time.monotonic() < deadline:
        try:
            children |= {c.pid for c in me.children(recursive=True)}
        except psutil.NoSuchProcess:
            break
        if children and len(part_names(out)) >= wanted_parts:  # its workers are up: the sweep has started
            break
        time.sleep(0.005)
    before = part_names(out)
    signum = rng.choice(SIGNALS)
    sent = process.poll() is None
    if sent:
        process.send_signal(signum)
        tally[f"signal {signal.Signals(signum).name}"] += 1
    else:
        tally["finished before the signal"] += 1
    _, err = process.communicate(timeout=120)
    if sent and process.returncode == 0:
        tally["exit 0 after a signal (the sweep had just ended, or the stop was lost)"] += 1
    if process.returncode not in (0, EXPECTED_CODE[signum]):
        tally["unexpected exit code"] += 1
        print(f"  exit code {process.returncode}: {err.strip()[-400:]}", flush=True)
    if "Traceback" in err:
        tally["tracebacks"] += 1
        print(f"  traceback: {err.strip()[-400:]}", flush=True)
    end = time.monotonic() + 30
    while any(alive(pid) for pid in children) and time.monotonic() < end:
        time.sleep(0.01)
    tally["processes outliving the sweep"] += sum(alive(pid) for pid in children)
    parts = parts_of(out)
    if signum == signal.SIGKILL and process.returncode == -signal.SIGKILL:
        tally["chunks on disk before a SIGKILL, lost"] += len(before - part_names(out))
        tally["chunks on disk before a SIGKILL, kept"] += len(before & part_names(out))
    kept = out if out.is_file() else parts
    if kept.exists() and (out.is_file() or part_names(out)):
        found = keys(kept)
        tally["duplicate rows"] += len(found) - len(set(found))
        tally["rows kept by stops"] += len(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=10, help="seeds per chunk (small: many chunks to lose)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tally: Counter[str] = Counter()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        clean = Path(tmp) / "clean.parquet"
        subprocess.run(command(clean, args.seeds, 1, False), check=True, stdout=subprocess.DEVNULL)
        reference = rows(clean)
        for trial in range(args.trials):
            out = Path(tmp) / f"trial-{trial}.parquet"
            interrupt(out, args, rng, resume=False, tally=tally)
            while rng.random() < 0.3:  # sometimes the resume is interrupted too
                interrupt(out, args, rng, resume=True, tally=tally)
            done = subprocess.run(
                command(out, args.seeds, args.workers, resume=out.exists() or parts_of(out).exists()),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            tally["trials"] += 1
            if done.returncode != 0 or rows(out) != reference:
                tally["trials not ending in the clean rows"] += 1
                print(f"  trial {trial}: exit {done.returncode} {done.stderr.strip()[-300:]}", flush=True)
            out.unlink(missing_ok=True)
            if (trial + 1) % 10 == 0:
                print(f"{trial + 1} trials, {time.monotonic() - started:.0f} s", flush=True)
    print("sweep kill campaign:")
    for name in sorted(tally):
        print(f"  {name:45s} {tally[name]:8d}")
    bad = ("trials not ending in the clean rows", "processes outliving the sweep", "duplicate rows", "tracebacks")
    failed = sum(tally[b] for b in bad) + tally["chunks on disk before a SIGKILL, lost"]
    failed += tally["unexpected exit code"]
    print("PASS" if not failed else "FAIL")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
