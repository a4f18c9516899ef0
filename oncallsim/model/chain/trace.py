"""The zoom's trace of a chain minute (world.py ``T_*``, ``TR_*``; zoom/chain.py): a span per traced attempt,
with its moments (sent, arrived, started, own work done, ended, its caller's end) and outcome.

Kept on its own because of its promise: every step here writes only the trace's rows and an attempt's
``A_SPAN``; none draws a number or pushes an event, so a minute traced is the same minute, bit for bit, as one
not traced (zoom/chain.py checks it on every zoom).
"""

from __future__ import annotations

import math
from typing import Any

from oncallsim.model.chain.world import (
    A_SPAN,
    A_SVC,
    AR_DEADLINE,
    CALLER_WAITING,
    OUT_OPEN,
    T_CALLER,
    T_GROUP,
    T_KIND,
    T_OUTCOME,
    T_PARENT,
    T_REQUEST,
    T_SVC,
    T_TRY,
    TI_LOST,
    TI_ROWS,
    TR_CALLER_END,
    TR_COLUMNS,
    TR_DEADLINE,
    TR_END,
    TR_SENT,
)
from oncallsim.model.kernel import step

__all__ = ["span_at", "span_caller", "span_end", "span_open"]

_NAN = math.nan


@step
def span_open(w: Any, a: int, request: int, parent: int, kind: int, try_no: int, group: int, x: float) -> int:
    """A span for attempt ``a`` (its row; −1 when the trace has no row left: counted as lost)."""
    row = w.tr_ints[TI_ROWS]
    if row >= len(w.tr_i):
        w.tr_ints[TI_LOST] += 1
        return -1
    w.tr_ints[TI_ROWS] = row + 1
    ti = w.tr_i
    tr = w.tr_r
    ti[row, T_REQUEST] = request
    ti[row, T_SVC] = w.att_i[a, A_SVC]
    ti[row, T_PARENT] = parent
    ti[row, T_KIND] = kind
    ti[row, T_TRY] = try_no
    ti[row, T_GROUP] = group if group >= 0 else row
    ti[row, T_OUTCOME] = OUT_OPEN
    ti[row, T_CALLER] = CALLER_WAITING
    for k in range(TR_COLUMNS):
        tr[row, k] = _NAN
    tr[row, TR_SENT] = x
    tr[row, TR_DEADLINE] = w.att_r[a, AR_DEADLINE]
    w.att_i[a, A_SPAN] = row
    return row


@step
def span_at(w: Any, a: int, column: int, x: float) -> None:
    """A traced attempt's moment (TR_ARRIVED, TR_START, TR_WORKED)."""
    row = w.att_i[a, A_SPAN]
    if row >= 0:
        w.tr_r[row, column] = x


@step
def span_end(w: Any, a: int, outcome: int, x: float) -> None:
    """A traced attempt's service is done with it (the first outcome stands)."""
    row = w.att_i[a, A_SPAN]
    if row >= 0 and w.tr_i[row, T_OUTCOME] == OUT_OPEN:
        w.tr_i[row, T_OUTCOME] = outcome
        w.tr_r[row, TR_END] = x


@step
def span_caller(w: Any, a: int, status: int, x: float) -> None:
    """A traced attempt's caller stops waiting for it (the first reason stands)."""
    row = w.att_i[a, A_SPAN]
    if row >= 0 and w.tr_i[row, T_CALLER] == CALLER_WAITING:
        w.tr_i[row, T_CALLER] = status
        w.tr_r[row, TR_CALLER_END] = x
