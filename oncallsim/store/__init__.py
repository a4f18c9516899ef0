"""Persistence of runs: SQLite by default (the standard library, WAL)."""

from oncallsim.store.sqlite import RunRow, RunStore, default_db_path

__all__ = ["RunRow", "RunStore", "default_db_path"]
