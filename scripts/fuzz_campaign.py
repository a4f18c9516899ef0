"""The long fuzz and kill campaign, run before a release (not in CI): issue 13's "done when" figures.

    python scripts/fuzz_campaign.py --examples 4000 --kills 100 --room-kills 100

1. The fuzz properties of tests/test_fuzz_web.py with many more examples and fresh random inputs: every HTTP
   endpoint, every WebSocket message type, game-day room messages, run files, scenario content, scenario and
   rule files and the CLI's options; no 5xx, no dropped socket, no traceback (a failure stops the campaign and
   prints hypothesis's minimal example). ``--examples`` is per property: 4,000 send over 10⁵ inputs (150 sent 4,106; the
   figures count every input sent, by kind).
2. Raw HTTP against a real uvicorn server on loopback: malformed requests, bodies and headers; the server must
   answer each with a 4xx (or a clean close) and stay up.
3. Kill trials: the real server SIGKILLed while actions arrive (``--kills``: live runs; ``--room-kills``: a
   game-day room's players); every acknowledged action must be in the log after a restart, and ``PRAGMA
   integrity_check`` must say ok.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def fuzz(examples: int, counts_file: Path | None = None) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        counts = counts_file or Path(tmp) / "counts.json"  # rewritten after every property: partial figures
        env = {
            **os.environ,
            "ONCALLSIM_FUZZ_EXAMPLES": str(examples),
            "ONCALLSIM_FUZZ_RANDOM": "1",
            "ONCALLSIM_FUZZ_COUNTS": str(counts),
        }
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fuzz_web.py"],
            cwd=ROOT,
            env=env,
        )
        found = json.loads(counts.read_text()) if counts.exists() else {}
        found["failures"] = int(result.returncode != 0)
        found["seconds"] = round(time.monotonic() - started)
        return found


JSON_POST = b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
RAW_REQUESTS = [
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    JSON_POST + b"Content-Length: 4\r\n\r\n{\xff\xfe}",
    JSON_POST + b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    JSON_POST + b"Content-Length: 99999999\r\n\r\n{}",
    b"GET /play?scenario=surge&seed=99999999999999999999 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /api/runs/%00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
]


def raw_http(requests: int, seed: int) -> dict[str, int]:
    from tests.server import start_server

    rng = random.Random(seed)
    answered = errors_5xx = closed = hung = 0
    with tempfile.TemporaryDirectory() as tmp:
        process, base, log = start_server(Path(tmp) / "runs.sqlite3")
        port = int(base.rsplit(":", 1)[1])
        try:
            for i in range(requests):
                if i % 3 == 0:
                    raw = rng.choice(RAW_REQUESTS)
                else:
                    body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
                    path = rng.choice(["/api/runs", "/api/runs/import", "/runs", "/api/runs/abc/actions"])
                    ctype = rng.choice(["application/json", "text/plain", "multipart/form-data; boundary=x", ""])
                    raw = (
                        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {base}\r\n"
                        f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
                    ).encode() + body
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                connection.connect()
                assert connection.sock is not None
                connection.sock.sendall(raw)
                try:
                    response = http.client.HTTPResponse(connection.sock, method="POST")
                    response.begin()
                    answered += 1
                    errors_5xx += response.status >= 500
                except TimeoutError:
                    hung += 1  # no answer within 10 s: a failure
                except (http.client.HTTPException, OSError):
                    closed += 1  # h11 may close the connection on a request it cannot parse: an answer too
                finally:
                    connection.close()
                assert process.poll() is None, "the server died"
        finally:
            process.terminate()
            process.wait(timeout=10)
            log.close()
    return {"raw_requests": requests, "answered": answered, "closed": closed, "hung": hung, "5xx": errors_5xx}


def patient_trials() -> None:
    """The trials' own waits (a server up within 30 s, an answer within 10 s) are sized for CI on an idle machine;
    the campaign runs niced beside other work, where a restart's first answer may take longer. A slow answer is
    no loss: wait longer (a server that never answers still fails the trial, at these bounds)."""
    import functools

    import tests.test_durability as durability
    from tests.server import start_server

    def get(base: str, path: str) -> Any:
        with urllib.request.urlopen(base + path, timeout=180) as response:
            return json.loads(response.read())

    durability.start_server = functools.partial(start_server, startup_timeout_s=900)  # type: ignore[assignment]
    durability.get = get  # type: ignore[assignment]
    durability.post = functools.partial(durability.post, timeout=180)  # type: ignore[assignment]


def kills(trials: int) -> dict[str, int]:
    from tests.test_durability import kill_trial

    patient_trials()

    acknowledged = kept_extra = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, trials + 1):
            result = kill_trial(Path(tmp), seed)
            acknowledged += result["acknowledged"]
            kept_extra += result["unacknowledged_kept"]
            print(f"kill trial {seed}/{trials}: {acknowledged} acknowledged so far, 0 lost", flush=True)
            (Path(tmp) / f"trial-{seed}.sqlite3").unlink(missing_ok=True)
    return {"trials": trials, "acknowledged": acknowledged, "lost": 0, "unacknowledged_kept": kept_extra}


def room_kills(trials: int) -> dict[str, int]:
    from tests.test_durability import room_kill_trial

    patient_trials()

    acknowledged = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, trials + 1):
            acknowledged += room_kill_trial(Path(tmp), seed)["acknowledged"]
            print(f"room kill trial {seed}/{trials}: {acknowledged} acknowledged so far, 0 lost", flush=True)
            (Path(tmp) / f"room-trial-{seed}.sqlite3").unlink(missing_ok=True)
    return {"trials": trials, "acknowledged": acknowledged, "lost": 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=2000, help="hypothesis examples per fuzz property")
    parser.add_argument("--raw", type=int, default=3000, help="raw HTTP requests against a real server")
    parser.add_argument("--kills", type=int, default=100, help="SIGKILL trials with live runs")
    parser.add_argument("--room-kills", type=int, default=100, help="SIGKILL trials with a game-day room")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--counts", type=Path, help="where the fuzz counts are kept (rewritten after every property)")
    args = parser.parse_args()
    for name, value in (
        ("--examples", args.examples),
        ("--raw", args.raw),
        ("--kills", args.kills),
        ("--room-kills", args.room_kills),
    ):
        if value < 0:
            parser.error(f"{name} must be 0 or more, got {value}")
    figures: dict[str, dict[str, int]] = {}
    if args.examples:
        figures["fuzz"] = fuzz(args.examples, args.counts)
        figures["fuzz"]["inputs"] = sum(v for k, v in figures["fuzz"].items() if k not in ("failures", "seconds"))
        print("fuzz:", figures["fuzz"], flush=True)
    if args.raw:
        figures["raw_http"] = raw_http(args.raw, args.seed)
        print("raw http:", figures["raw_http"], flush=True)
    if args.kills:
        figures["kills"] = kills(args.kills)
        print("kills:", figures["kills"], flush=True)
    if args.room_kills:
        figures["room_kills"] = room_kills(args.room_kills)
        print("room kills:", figures["room_kills"], flush=True)
    print(json.dumps(figures, indent=2))
    raw = figures.get("raw_http", {})
    failed = figures.get("fuzz", {}).get("failures", 0) or raw.get("5xx", 0) or raw.get("hung", 0)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
