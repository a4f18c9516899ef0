"""Game-day rooms in the same SQLite store as the runs: the room, its players and its log (actions with who took
them, messages, status updates, notes, injected faults). The log is the truth: a room's run is rebuilt by
replaying its run file (the scenario with the injected events) and the actions of its log.

A room's run is kept in the rooms table, not in ``runs``: the runs API and the list of past runs never reach
it, so only the room's tokens do. ``RoomStore`` shares the run store's connection, lock and writer thread (one
writer for the whole file) and answers the run store's methods that a live run calls, keyed by the room's id.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from oncallsim.simulation import Action, RunFile
from oncallsim.store.sqlite import RunStore

__all__ = ["LogEntry", "RoomRow", "RoomStore"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    title TEXT NOT NULL,
    run_file TEXT NOT NULL,
    played INTEGER NOT NULL DEFAULT 0,
    speed INTEGER NOT NULL DEFAULT 1,
    held INTEGER NOT NULL DEFAULT 1,
    status TEXT NOT NULL DEFAULT 'open',
    summary TEXT,
    debrief_figure TEXT,
    facilitator_hash TEXT NOT NULL,
    player_token TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS room_players (
    room_id TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    joined_at TEXT NOT NULL,
    PRIMARY KEY (room_id, name)
);
CREATE TABLE IF NOT EXISTS room_log (
    room_id TEXT NOT NULL REFERENCES rooms(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    minute INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (room_id, seq)
);
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class LogEntry:
    """One line of a room's log: what happened (``kind``), at which minute, by whom, with its data."""

    seq: int
    minute: int
    kind: str  # action, message, status, note, inject, reveal, join, control, close
    name: str
    role: str
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "minute": self.minute, "kind": self.kind, "name": self.name, "role": self.role,
                "data": self.data}  # fmt: skip


@dataclass(frozen=True)
class RoomRow:
    id: str
    created_at: str
    title: str
    run_file: RunFile  # with the log's actions and the minutes played
    played: int
    speed: int
    held: bool
    status: str  # open, finished, closed
    summary: dict[str, Any] | None
    debrief_figure: str | None
    facilitator_hash: str
    player_token: str
    players: list[tuple[str, str]]  # (name, role) in the order they joined
    log: list[LogEntry]


class RoomStore(RunStore):
    """The rooms' tables on the run store's connection; a live run of a room writes here through the run
    store's methods (``append_actions``, ``set_progress``, ``finish``…), the room's id standing for the run's."""

    def __init__(self, base: RunStore) -> None:
        self.path = base.path
        self._lock = base._lock
        self._db = base._db
        self._writer = base._writer
        self._readers = base._readers
        with self._lock:
            self._db.executescript(SCHEMA)

    def close(self) -> None:
        """Nothing of its own to close: the run store owns the connection."""

    # --- rooms ----------------------------------------------------------------------------------------------

    def create_room(self, title: str, run: RunFile, speed: int, facilitator_hash: str, player_token: str) -> str:
        room_id = uuid.uuid4().hex[:12]
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO rooms (id, created_at, title, run_file, speed, facilitator_hash, player_token)"
                " VALUES (?,?,?,?,?,?,?)",
                (room_id, _now(), title, run.model_dump_json(), speed, facilitator_hash, player_token),
            )
        return room_id

    def get_room(self, room_id: str) -> RoomRow | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM rooms WHERE id = ?", (room_id,)).fetchone()
            if row is None:
                return None
            players = self._db.execute(
                "SELECT name, role FROM room_players WHERE room_id = ? ORDER BY rowid", (room_id,)
            ).fetchall()
            log = self._db.execute("SELECT * FROM room_log WHERE room_id = ? ORDER BY seq", (room_id,)).fetchall()
        entries = [_entry(r) for r in log]
        actions = [
            {
                "minute": e.minute,
                "control": e.data["control"],
                **({"value": e.data["value"]} if "value" in e.data else {}),
            }
            for e in entries
            if e.kind == "action"
        ]
        run = RunFile.model_validate_json(row["run_file"]).model_copy(
            update={"actions": actions, "played": max([row["played"], *(a["minute"] for a in actions)])}
        )
        return RoomRow(
            id=row["id"],
            created_at=row["created_at"],
            title=row["title"],
            run_file=run,
            played=row["played"],
            speed=row["speed"],
            held=bool(row["held"]),
            status=row["status"],
            summary=None if row["summary"] is None else json.loads(row["summary"]),
            debrief_figure=row["debrief_figure"],
            facilitator_hash=row["facilitator_hash"],
            player_token=row["player_token"],
            players=[(p["name"], p["role"]) for p in players],
            log=entries,
        )

    def add_player(self, room_id: str, name: str, role: str) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO room_players (room_id, name, role, joined_at) VALUES (?,?,?,?)",
                (room_id, name, role, _now()),
            )

    def append_log(self, room_id: str, minute: int, kind: str, name: str, role: str, data: dict[str, Any]) -> int:
        """One log line, committed (on disk) when this returns; its sequence number."""
        with self._lock, self._db:
            return self._append(room_id, minute, kind, name, role, data)

    def _append(self, room_id: str, minute: int, kind: str, name: str, role: str, data: dict[str, Any]) -> int:
        row = self._db.execute(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM room_log WHERE room_id = ?", (room_id,)
        ).fetchone()
        seq = int(row[0])
        self._db.execute(
            "INSERT INTO room_log (room_id, seq, minute, kind, name, role, data, created_at) VALUES (?,?,?,?,?,?,?,?)",
            (room_id, seq, minute, kind, name, role, json.dumps(data), _now()),
        )
        return seq

    def inject(self, room_id: str, run: RunFile, minute: int, data: dict[str, Any]) -> int:
        """An injected fault: the room's run file (its scenario now holding the event) and the log line, in one
        transaction."""
        with self._lock, self._db:
            self._db.execute(
                "UPDATE rooms SET run_file = ? WHERE id = ?",
                (run.model_copy(update={"actions": [], "played": None}).model_dump_json(), room_id),
            )
            return self._append(room_id, minute, "inject", "facilitator", "facilitator", data)

    def set_status(self, room_id: str, status: str) -> None:
        with self._lock, self._db:
            self._db.execute("UPDATE rooms SET status = ? WHERE id = ?", (status, room_id))

    # --- what a live run calls (the room's id as the run's) -----------------------------------------------------

    def append_actions(self, run_id: str, actions: list[Action]) -> None:
        """Actions without a name (a room's actions are written with who took them: ``append_log``)."""
        for a in actions:
            data: dict[str, Any] = {"control": a.control, **({"value": a.value} if a.value is not None else {})}
            self.append_log(run_id, a.minute, "action", "", "", data)

    def set_progress(self, run_id: str, played: int, speed: int | None = None) -> None:
        with self._lock, self._db:
            if speed is None:
                self._db.execute("UPDATE rooms SET played = ? WHERE id = ?", (played, run_id))
            else:
                self._db.execute("UPDATE rooms SET played = ?, speed = ? WHERE id = ?", (played, speed, run_id))

    def set_progress_many(self, positions: list[tuple[str, int]]) -> None:
        with self._lock, self._db:
            self._db.executemany("UPDATE rooms SET played = ? WHERE id = ?", [(m, r) for r, m in positions])

    def set_held(self, run_id: str, held: bool, played: int) -> None:
        with self._lock, self._db:
            self._db.execute("UPDATE rooms SET held = ?, played = ? WHERE id = ?", (int(held), played, run_id))

    def finish(self, run_id: str, played: int, summary: dict[str, Any], figure: str | None = None) -> None:
        with self._lock, self._db:
            self._db.execute(
                "UPDATE rooms SET played = ?, status = 'finished', summary = ?, debrief_figure = ? WHERE id = ?",
                (played, json.dumps(summary), figure, run_id),
            )

    def abandon(self, run_id: str, played: int) -> None:
        with self._lock, self._db:
            self._db.execute("UPDATE rooms SET played = ?, status = 'closed' WHERE id = ?", (played, run_id))

    def set_figure(self, run_id: str, figure: str) -> None:
        with self._lock, self._db:
            self._db.execute("UPDATE rooms SET debrief_figure = ? WHERE id = ?", (figure, run_id))


def _entry(row: sqlite3.Row) -> LogEntry:
    return LogEntry(
        seq=row["seq"], minute=row["minute"], kind=row["kind"], name=row["name"], role=row["role"],
        data=json.loads(row["data"]),
    )  # fmt: skip
