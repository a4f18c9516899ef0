"""Vectorized forms of the built-in policies: the same decisions as ``oncallsim.policies``, for all runs at once.

``VectorTextbook`` runs the textbook playbook's own compiled decision function (``textbook.decide_k``) in a
compiled loop over runs; there is no second copy of the playbook. tests/test_batch.py checks that a batch
with it gives the same records as scalar runs with ``Textbook``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from oncallsim.batch.engine import Coded
from oncallsim.model.kernel import unmanaged
from oncallsim.policies import textbook as tb
from oncallsim.simulation import Policy

__all__ = ["VECTOR_POLICIES", "VectorHandsOff", "VectorPolicy", "VectorTextbook", "vectorized"]

Decisions = dict[int, list[tuple[str, Any]]]


_NOTHING = Coded(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))


class VectorPolicy(Protocol):
    name: str

    def reset(self, batch: Any) -> None: ...

    def decide(self, batch: Any) -> Decisions: ...


class VectorHandsOff:
    name = "hands-off"

    def reset(self, batch: Any) -> None:
        pass

    def decide(self, batch: Any) -> Decisions:
        return {}

    def decide_coded(self, batch: Any) -> Coded:
        return _NOTHING


@unmanaged
def _decide_runs(
    last: Any,
    state: Any,
    opening: Any,
    memory: Any,
    history: Any,
    usual: float,
    p: Any,
    codes: Any,
    values: Any,
    counts: Any,
) -> None:
    """The playbook for every run: ``last`` is field-major (column i = run i), ``history`` minutes × runs;
    writes each run's number of decisions into ``counts`` (unmanaged: the row views cost no atomic counts)."""
    for i in range(state.shape[0]):
        counts[i] = tb.decide_k(
            last[:, i], state[i], opening[i], memory[i], history[:, i], usual, p, codes[i], values[i]
        )


class VectorTextbook:
    name = tb.Textbook.name

    def reset(self, batch: Any) -> None:
        n = batch.n
        self.opening = batch.state.copy()  # the controls at the start (read by their state-vector positions)
        self.memory = np.zeros((n, 3), dtype=np.int64)
        self.codes = np.zeros((n, tb.MAX_ACTIONS), dtype=np.int64)
        self.values = np.zeros((n, tb.MAX_ACTIONS))
        self.counts = np.zeros(n, dtype=np.int64)
        self.slots = np.arange(tb.MAX_ACTIONS)

    def decide(self, batch: Any) -> Decisions:
        return self.decide_coded(batch).as_mapping()

    def decide_coded(self, batch: Any) -> Coded:
        """The decisions as arrays (``BatchRun.step`` applies them without a Python object per action)."""
        if batch.last is None:
            return _NOTHING
        usual = tb.usual_rate_at((batch.clock_start + batch.t - 1) % 1440, batch.params)
        _decide_runs(
            batch.values,
            batch.state,
            self.opening,
            self.memory,
            np.stack(batch.request_history),
            usual,
            batch.kernel.params,
            self.codes,
            self.values,
            self.counts,
        )
        acting = np.flatnonzero(self.counts)
        if not len(acting):
            return _NOTHING
        taken = self.slots < self.counts[acting, None]  # row-major: runs ascending, each run's in its order
        runs = np.broadcast_to(acting[:, None], taken.shape)[taken]
        return Coded(runs, self.codes[acting][taken], self.values[acting][taken])


VECTOR_POLICIES: dict[str, Callable[[], VectorPolicy]] = {"hands-off": VectorHandsOff, "textbook": VectorTextbook}


def vectorized(policy: str | Policy | None) -> VectorPolicy | None:
    """The vectorized form of a built-in policy (by name or instance), or None: the scalar path then."""
    if policy is None:
        return VectorHandsOff()
    name = policy if isinstance(policy, str) else getattr(policy, "name", None)
    builtin = isinstance(policy, str) or type(policy).__module__.startswith("oncallsim.policies")
    if builtin and name in VECTOR_POLICIES:
        return VECTOR_POLICIES[name]()
    return None
