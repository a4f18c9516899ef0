"""Runs, their action logs and their results in SQLite (WAL, ``synchronous=FULL``). The log is the truth: a run
is rebuilt by replaying it. Every write is one transaction that is on disk (fsync'd) when it returns, so an
acknowledged action survives a killed process and a power cut alike.

The web server writes through one writer thread (``await store.write(fn, …)``), as Datasette does: the event loop
never waits on the disk, and writes keep their order."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from oncallsim.model import MODEL_VERSION
from oncallsim.simulation import Action, RunFile

__all__ = ["RunRow", "RunStore", "default_db_path"]

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    scenario TEXT NOT NULL,
    scenario_spec TEXT,
    model_version TEXT NOT NULL,
    seed INTEGER NOT NULL,
    overrides TEXT NOT NULL,
    noise INTEGER NOT NULL,
    minutes INTEGER,
    clock TEXT,
    played INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'live',
    speed INTEGER NOT NULL DEFAULT 1,
    held INTEGER NOT NULL DEFAULT 0,
    summary TEXT,
    debrief_figure TEXT,
    difficulty TEXT NOT NULL DEFAULT 'normal',
    engine TEXT NOT NULL DEFAULT 'minute',
    imported INTEGER NOT NULL DEFAULT 0,
    player TEXT
);
CREATE TABLE IF NOT EXISTS actions (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    minute INTEGER NOT NULL,
    control TEXT NOT NULL,
    value TEXT,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at);
"""
# Columns added after the first release, with their declarations: an older store gains them on open.
ADDED_COLUMNS = {
    "debrief_figure": "TEXT",
    "difficulty": "TEXT NOT NULL DEFAULT 'normal'",
    "engine": "TEXT NOT NULL DEFAULT 'minute'",
    "imported": "INTEGER NOT NULL DEFAULT 0",
    "player": "TEXT",
}


def default_db_path() -> Path:
    """The user's data directory ($XDG_DATA_HOME/oncallsim/runs.sqlite3 or ~/.local/share/…)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "oncallsim" / "runs.sqlite3"


@dataclass(frozen=True)
class RunRow:
    id: str
    created_at: str
    scenario: str
    seed: int
    played: int
    status: str
    speed: int
    held: bool
    run_file: RunFile
    summary: dict[str, Any] | None
    model_version: str = MODEL_VERSION
    debrief_figure: str | None = None
    imported: bool = False  # uploaded as a run file, not played on this server
    player: str | None = None  # the name the player gave for the leaderboard (optional)

    @property
    def difficulty(self) -> str:
        return self.run_file.difficulty


class RunStore:
    """One connection, serialized by a lock: every write is one short transaction (``with self._db`` commits)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: the WAL is fsync'd at every commit, so a commit (an acknowledged action) survives a power cut;
        # NORMAL would survive a killed process only. Measured cost: see docs/web.md.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(SCHEMA)
        columns = {r[1] for r in self._db.execute("PRAGMA table_info(runs)")}
        for column, declaration in ADDED_COLUMNS.items():  # a store made before the column existed
            if column not in columns:
                self._db.execute(f"ALTER TABLE runs ADD COLUMN {column} {declaration}")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oncallsim-writer")
        # reads on threads of their own: never behind other work of the process's default pool (issue 30)
        self._readers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="oncallsim-reader")

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a store method on the one writer thread; returns once it is committed (and on disk)."""
        return await asyncio.get_running_loop().run_in_executor(self._writer, fn, *args)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a read off the event loop (on the store's reader threads; the connection's lock serializes it)."""
        return await asyncio.get_running_loop().run_in_executor(self._readers, fn, *args)

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        with self._lock:
            self._db.close()

    def create_run(
        self, run: RunFile, speed: int = 1, status: str = "live", imported: bool = False, player: str | None = None
    ) -> str:
        run_id = uuid.uuid4().hex[:12]
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO runs (id, created_at, scenario, scenario_spec, model_version, seed, overrides, noise,"
                " minutes, clock, played, status, speed, difficulty, engine, imported, player)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    datetime.now(UTC).isoformat(timespec="seconds"),
                    run.scenario,
                    None if run.scenario_spec is None else json.dumps(run.scenario_spec),
                    run.model_version,
                    run.seed,
                    json.dumps(run.overrides),
                    int(run.noise),
                    run.minutes,
                    run.clock,
                    run.played or 0,
                    status,
                    speed,
                    run.difficulty,
                    run.engine,
                    int(imported),
                    player,
                ),
            )
            self._insert_actions(run_id, 0, [Action(a["minute"], a["control"], a.get("value")) for a in run.actions])
        return run_id

    def _insert_actions(self, run_id: str, first_seq: int, actions: list[Action]) -> None:
        self._db.executemany(
            "INSERT INTO actions (run_id, seq, minute, control, value) VALUES (?,?,?,?,?)",
            [
                (run_id, first_seq + i, a.minute, a.control, None if a.value is None else json.dumps(a.value))
                for i, a in enumerate(actions)
            ],
        )

    def append_actions(self, run_id: str, actions: list[Action]) -> None:
        """Write actions to the log (before they take effect)."""
        with self._lock, self._db:
            row = self._db.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM actions WHERE run_id = ?", (run_id,)
            ).fetchone()
            self._insert_actions(run_id, int(row[0]), actions)

    def set_progress(self, run_id: str, played: int, speed: int | None = None) -> None:
        with self._lock, self._db:
            if speed is None:
                self._db.execute("UPDATE runs SET played = ? WHERE id = ?", (played, run_id))
            else:
                self._db.execute("UPDATE runs SET played = ?, speed = ? WHERE id = ?", (played, speed, run_id))

    def set_progress_many(self, positions: list[tuple[str, int]]) -> None:
        """Many runs' positions in one transaction (the clock's tick)."""
        with self._lock, self._db:
            self._db.executemany("UPDATE runs SET played = ? WHERE id = ?", [(m, r) for r, m in positions])

    def set_held(self, run_id: str, held: bool, played: int) -> None:
        """The operator paused (held) or resumed the run: kept across a restart."""
        with self._lock, self._db:
            self._db.execute("UPDATE runs SET held = ?, played = ? WHERE id = ?", (int(held), played, run_id))

    def finish(self, run_id: str, played: int, summary: dict[str, Any], figure: str | None = None) -> None:
        with self._lock, self._db:
            self._db.execute(
                "UPDATE runs SET played = ?, status = 'finished', summary = ?, debrief_figure = ? WHERE id = ?",
                (played, json.dumps(summary), figure, run_id),
            )

    def abandon(self, run_id: str, played: int) -> None:
        """The player gave the run up: kept (and listed) without a debrief, never resumed."""
        with self._lock, self._db:
            self._db.execute("UPDATE runs SET played = ?, status = 'abandoned' WHERE id = ?", (played, run_id))

    def delete_run(self, run_id: str) -> bool:
        """The run and its action log are gone (the log's rows go with it: ON DELETE CASCADE)."""
        with self._lock, self._db:
            return self._db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0

    def set_figure(self, run_id: str, figure: str) -> None:
        """The debrief's charts, computed once (the counterfactuals are the costly part) and kept."""
        with self._lock, self._db:
            self._db.execute("UPDATE runs SET debrief_figure = ? WHERE id = ?", (figure, run_id))

    def get(self, run_id: str) -> RunRow | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            actions = self._db.execute(
                "SELECT minute, control, value FROM actions WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
        return self._row(row, actions)

    def leaderboard(self, scenario: str, seed: int, limit: int = 50) -> list[RunRow]:
        """The finished runs played here (not imported) of one scenario and seed, best score first (then the
        earliest): everyone who played the same draws, side by side."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM runs WHERE scenario = ? AND seed = ? AND status = 'finished' AND imported = 0"
                " AND summary IS NOT NULL ORDER BY created_at, rowid",
                (scenario, seed),
            ).fetchall()
        found = [self._row(r, []) for r in rows]
        found.sort(key=lambda r: -int((r.summary or {}).get("score", 0)))
        return found[:limit]

    def recent(self, limit: int = 200) -> list[RunRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
            ).fetchall()
        return [self._row(r, []) for r in rows]

    @staticmethod
    def _row(row: sqlite3.Row, actions: list[sqlite3.Row]) -> RunRow:
        log = []
        for a in actions:
            item: dict[str, Any] = {"minute": a["minute"], "control": a["control"]}
            if a["value"] is not None:
                item["value"] = json.loads(a["value"])
            log.append(item)
        run = RunFile(
            scenario=row["scenario"],
            scenario_spec=None if row["scenario_spec"] is None else json.loads(row["scenario_spec"]),
            model_version=row["model_version"] or MODEL_VERSION,
            seed=row["seed"],
            overrides=json.loads(row["overrides"]),
            noise=bool(row["noise"]),
            minutes=row["minutes"],
            clock=row["clock"],
            engine=row["engine"],
            difficulty=row["difficulty"],
            actions=log,
            # an action is stamped with the next minute to compute: the run had reached it
            played=max([row["played"], *(a["minute"] for a in log)]),
        )
        return RunRow(
            id=row["id"],
            created_at=row["created_at"],
            scenario=row["scenario"],
            seed=row["seed"],
            played=row["played"],
            status=row["status"],
            speed=row["speed"],
            held=bool(row["held"]),
            run_file=run,
            summary=None if row["summary"] is None else json.loads(row["summary"]),
            model_version=row["model_version"],
            debrief_figure=row["debrief_figure"],
            imported=bool(row["imported"]),
            player=row["player"],
        )
