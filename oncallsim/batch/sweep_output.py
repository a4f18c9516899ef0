"""A sweep's output: ``OUT`` (one Parquet file with the sweep's configuration in its metadata) and, while the
sweep runs, ``OUT.parts/`` (closed part files, so a kill keeps every finished chunk); resume checks and merge."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from oncallsim.batch.sweep_plan import SweepPlan, Task
from oncallsim.extras import require
from oncallsim.model import InvalidInput

__all__ = [
    "CONFIG_FILE",
    "CONFIG_KEY",
    "check_output",
    "config_difference",
    "merge_parts",
    "open_parts",
    "part_files",
    "parts_dir",
    "read_config",
    "write_part",
]

CONFIG_KEY = b"oncallsim.sweep"
CONFIG_FILE = "_sweep.json"


def parts_dir(out: Path) -> Path:
    return out.with_name(out.name + ".parts")


def part_files(parts: Path) -> list[Path]:
    return sorted(p for p in parts.glob("part-*.parquet")) if parts.is_dir() else []


def read_config(out: Path) -> dict[str, Any]:
    """The configuration a sweep wrote into its Parquet file's metadata."""
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_schema(out).metadata or {}
    except (OSError, ValueError) as exc:
        reason = (str(exc).splitlines() or ["unreadable"])[0]
        raise InvalidInput(str(out), f"is not a readable Parquet file ({reason}); choose another --out") from None
    if CONFIG_KEY not in metadata:
        raise InvalidInput(
            str(out), "has no sweep configuration in its metadata (an older or foreign file); choose another --out"
        )
    config: dict[str, Any] = json.loads(metadata[CONFIG_KEY])
    return config


_LABELS = {
    "scenario": "scenario",
    "overrides": "--set",
    "policy": "--policy",
    "minutes": "--minutes",
    "clock": "clock",
    "noise": "noise (--no-noise)",
    "grid": "--grid",
    "seed_start": "--seed-start",
    "engine": "--engine",
    "model_version": "model version",
    "format": "file format",
}


def _show(key: str, value: Any) -> str:
    if key == "scenario" and isinstance(value, dict):
        return str(value.get("id", "?"))
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "…"


def config_difference(saved: Mapping[str, Any], wanted: Mapping[str, Any]) -> str | None:
    """None when equal; otherwise one line naming each setting that differs, with its saved and new value."""
    diffs = []
    for key in _LABELS:
        a, b = saved.get(key), wanted.get(key)
        if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True):
            continue
        old, new = _show(key, a), _show(key, b)
        if old == new:  # e.g. a scenario of the same id with other content
            old, new = f"{old} (other content)", f"{new} (this content)"
        diffs.append(f"{_LABELS[key]} (file: {old}, now: {new})")
    if not diffs:
        return None
    return "; ".join(diffs)


@dataclass
class _Output:
    out: Path
    parts: Path
    done: dict[int, npt.NDArray[np.int64]]
    rows: int
    resuming: bool


def check_output(plan: SweepPlan, out: Path, resume: bool) -> _Output:
    """Refuse an existing output without ``resume``, or with another configuration; read the seeds done.

    Changes nothing on disk. Without pyarrow (the ``sweep`` extra) one line says which extra to install, before
    any worker starts."""
    require("pyarrow.parquet", "sweep")
    parts = parts_dir(out)
    exists = out.exists() or parts.exists()
    if not exists:
        return _Output(out, parts, {}, 0, False)
    if not resume:
        what = out if out.exists() else parts
        raise InvalidInput(str(what), "exists; pass --resume to continue it, or choose another --out")
    sources: list[Path] = []
    if out.exists():
        if out.is_dir():
            raise InvalidInput(str(out), "is a directory; choose another --out")
        saved = read_config(out)
        sources.append(out)
    if parts.is_dir() and not out.exists():
        try:
            saved = json.loads((parts / CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise InvalidInput(str(parts), "is not a sweep in progress (no readable _sweep.json); remove it") from None
        sources.extend(part_files(parts))
    elif parts.exists() and not parts.is_dir():
        raise InvalidInput(str(parts), "is in the way (not a folder); remove it")
    difference = config_difference(saved, plan.config)
    if difference is not None:
        raise InvalidInput("--resume", f"{out} was made by a different sweep: {difference}")
    done, rows = _seeds_done(plan, sources)
    return _Output(out, parts, done, rows, True)


def _seeds_done(plan: SweepPlan, files: Sequence[Path]) -> tuple[dict[int, npt.NDArray[np.int64]], int]:
    """Per grid point, the sorted seeds that have a row in ``files``; and the number of rows."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    names = list(plan.spec.grid)
    found: dict[int, list[npt.NDArray[np.int64]]] = {}
    rows = 0
    for path in files:
        try:
            table = pq.read_table(path, columns=[*(f"grid_{n}" for n in names), "seed"])
        except (OSError, ValueError, KeyError) as exc:
            reason = (str(exc).splitlines() or ["unreadable"])[0]
            raise InvalidInput(str(path), f"cannot be read ({reason}); move it away, then --resume") from None
        rows += table.num_rows
        for p, point in enumerate(plan.points):
            mask = None
            for name, value in point.items():
                hit = pc.equal(table.column(f"grid_{name}"), value)
                mask = hit if mask is None else pc.and_(mask, hit)
            seeds = table.column("seed") if mask is None else table.filter(mask).column("seed")
            found.setdefault(p, []).append(seeds.to_numpy().astype(np.int64))
    return {p: np.unique(np.concatenate(arrays)) for p, arrays in found.items()}, rows


def _clear_temporaries(parts: Path) -> None:
    for tmp in parts.glob(".tmp-*"):
        tmp.unlink(missing_ok=True)


def merge_parts(out: Path, parts: Path, config: Mapping[str, Any]) -> int:
    """Parts → OUT in one file (streamed part by part), then the folder goes; returns the rows in OUT.

    Safe to interrupt anywhere: until the rename, the parts are intact; after it, OUT has every row and a
    later ``resume`` (which sees both) drops the parts."""
    import pyarrow.parquet as pq

    files = part_files(parts)
    if not files:
        _remove_parts(parts)
        return 0
    tmp = parts / ".tmp-merged.parquet"
    schema = pq.read_schema(files[0]).with_metadata({CONFIG_KEY: json.dumps(config).encode()})
    rows = 0
    with pq.ParquetWriter(tmp, schema) as writer:
        for path in files:
            table = pq.read_table(path).replace_schema_metadata(schema.metadata)
            writer.write_table(table.cast(schema))
            rows += table.num_rows
    _fsync(tmp)
    tmp.replace(out)
    _remove_parts(parts)
    return rows


def _remove_parts(parts: Path) -> None:
    if not parts.is_dir():
        return
    for path in parts.iterdir():
        path.unlink(missing_ok=True)
    parts.rmdir()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_parts(state: _Output, config: Mapping[str, Any]) -> None:
    """Make OUT.parts/ the one place of the rows: the configuration first, then OUT (if any) moved in."""
    out, parts = state.out, state.parts
    if out.exists() and parts.exists():  # a merge was interrupted after its rename: OUT has every row
        _remove_parts(parts)
    parts.mkdir(exist_ok=True)
    _clear_temporaries(parts)
    config_file = parts / CONFIG_FILE
    if not config_file.exists():
        tmp = parts / ".tmp-config"
        tmp.write_text(json.dumps(config), encoding="utf-8")
        tmp.replace(config_file)
    if out.exists():
        base = parts / "part-00000-base.parquet"
        k = 0
        while base.exists():
            k += 1
            base = parts / f"part-00000-base-{k}.parquet"
        out.replace(base)


def write_part(parts: Path, task: Task | None, index: int, table: Any) -> None:
    import pyarrow.parquet as pq

    first = int(table.column("seed")[0].as_py()) if table.num_rows else 0
    point = task.point_index if task is not None else 0
    name = parts / f"part-{point:05d}-{first:010d}.parquet"
    if name.exists():
        name = parts / f"part-{point:05d}-{first:010d}-{index}-{time.time_ns()}.parquet"
    tmp = parts / f".tmp-{name.name}"
    pq.write_table(table, tmp)
    tmp.replace(name)  # the part is complete, with its footer, before it has its name
