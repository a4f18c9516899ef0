"""Minute records of many runs as columns: one (minutes × runs) array per field, events kept sparse."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.model import MinuteRecord
from oncallsim.model.events import from_slots
from oncallsim.model.fields import NUMERIC_FIELDS
from oncallsim.model.plan import CLOCK_LABELS

__all__ = ["BOOL_FIELDS", "INT_FIELDS", "Columns"]

# dtypes from the field schema
INT_FIELDS = frozenset({"minute"} | {f.name for f in NUMERIC_FIELDS if f.dtype == "int"})
BOOL_FIELDS = frozenset(f.name for f in NUMERIC_FIELDS if f.dtype == "bool")
_ARRAY_FIELDS = tuple(f.name for f in NUMERIC_FIELDS)
_NONE = np.zeros(0, dtype=np.int64)


class Columns:
    """What a batch computed. ``keep`` limits the stored fields (a sweep needs a dozen of them, not all)."""

    def __init__(self, runs: int, minutes: int, keep: Iterable[str] | None = None) -> None:
        self.runs = runs
        self.minutes = minutes
        self.keep = frozenset(_ARRAY_FIELDS if keep is None else keep)
        self.data: dict[str, npt.NDArray[Any]] = {}
        for name in _ARRAY_FIELDS:
            if name in self.keep:
                dtype = np.int64 if name in INT_FIELDS else bool if name in BOOL_FIELDS else np.float64
                self.data[name] = np.zeros((minutes, runs), dtype=dtype)
        self.clock = np.zeros(minutes, dtype=np.int64)
        # events stay as the minute reported them: the operator's (few) as events, the model's as the slot
        # counts of the runs that had any; they become events only when a run's records are asked for
        self.action_events: list[Mapping[int, Sequence[str]]] = [{} for _ in range(minutes)]
        self.slot_runs: list[npt.NDArray[np.int64]] = [_NONE for _ in range(minutes)]
        self.slot_rows: list[npt.NDArray[np.int64]] = [_NONE for _ in range(minutes)]

    def write(
        self,
        t: int,
        clock: int,
        events: Mapping[int, Sequence[str]],
        slots: npt.NDArray[np.int64] | None = None,
        **fields: Any,
    ) -> None:
        """Minute t of every run; ``slots`` (runs × event slots) holds the model's events as counts."""
        self.clock[t] = clock
        self.action_events[t] = events
        if slots is not None:
            runs = np.flatnonzero(slots.any(axis=1))
            self.slot_runs[t], self.slot_rows[t] = runs, slots[runs]
        for name, column in self.data.items():
            column[t] = fields[name]  # fields not kept are computed (the full model runs) but not stored

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        return self.data[name]

    def events(self, t: int, run: int) -> tuple[str, ...]:
        """Run ``run``'s events of minute t: the operator's first, then the model's (as the scalar engine)."""
        out = list(self.action_events[t].get(run, ()))
        k = int(np.searchsorted(self.slot_runs[t], run))
        if k < len(self.slot_runs[t]) and self.slot_runs[t][k] == run:
            out.extend(from_slots(self.slot_rows[t][k].tolist()))
        return tuple(out)

    def records(self, run: int, upto: int | None = None) -> list[MinuteRecord]:
        """Run ``run``'s minute records, as the scalar engine makes them (Python ints, bools and floats)."""
        missing = set(_ARRAY_FIELDS) - self.keep
        if missing:
            raise ValueError(f"these columns were not kept: {sorted(missing)[:5]}")
        out = []
        for t in range(self.minutes if upto is None else upto):
            values: dict[str, Any] = {}
            for name in _ARRAY_FIELDS:
                value = self.data[name][t, run]
                values[name] = (
                    int(value) if name in INT_FIELDS else bool(value) if name in BOOL_FIELDS else float(value)
                )
            out.append(MinuteRecord(minute=t, clock=CLOCK_LABELS[self.clock[t]], events=self.events(t, run), **values))
        return out
