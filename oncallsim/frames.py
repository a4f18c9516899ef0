"""Runs as pandas data frames: one row per minute, the columns of the CSV contract (docs/records.md) and, on the
request engine, its scalar extras. pandas is the ``notebook`` extra (``pip install 'oncallsim[notebook]'``);
without it the call is refused in one line.

>>> from oncallsim import Simulation
>>> sim = Simulation("bad-deploy", seed=7, minutes=30)
>>> _ = sim.run()
>>> frame = sim.to_pandas()
>>> frame.shape[0], frame.index.name, frame.loc[28, "clock"], frame.attrs["scenario"]
(30, 'minute', '09:28', 'bad-deploy')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oncallsim.extras import require
from oncallsim.model import CSV_FIELDS, MinuteRecord
from oncallsim.model.fields import EXTRA_SCHEMA

__all__ = ["records_frame"]

# The request engine's extras that are one number a minute (the per-instance lines and settings are not).
SCALAR_EXTRAS = tuple(f.name for f in EXTRA_SCHEMA)


def records_frame(records: Sequence[MinuteRecord], **attrs: Any) -> Any:
    """A ``pandas.DataFrame`` of ``records``, indexed by minute; ``attrs`` go to ``DataFrame.attrs`` (the
    scenario, seed and engine of the run)."""
    pd = require("pandas", "notebook")
    rows = []
    for r in records:
        row = r.to_row()
        if r.extras is not None:
            row.update({name: r.extras.get(name) for name in SCALAR_EXTRAS})
        rows.append(row)
    columns = [*CSV_FIELDS, *(SCALAR_EXTRAS if any(r.extras is not None for r in records) else ())]
    frame = pd.DataFrame(rows, columns=columns).set_index("minute")
    frame.attrs.update(attrs)
    return frame
