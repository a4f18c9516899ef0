"""Vectorized forms of the built-in policies: the same decisions as ``oncallsim.policies``, for all runs at once.

``VectorTextbook`` runs the textbook playbook's own compiled decision function (``textbook.decide_k``) in a
compiled loop over runs; there is no second copy of the playbook. tests/test_batch.py checks that a batch
with it gives the same records as scalar runs with ``Textbook``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from oncallsim.model.kernel import compiled
from oncallsim.policies import textbook as tb
from oncallsim.simulation import Policy

__all__ = ["VECTOR_POLICIES", "VectorHandsOff", "VectorPolicy", "VectorTextbook", "vectorized"]

Decisions = dict[int, list[tuple[str, Any]]]


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


@compiled
def _decide_runs(
    last: Any, state: Any, opening: Any, memory: Any, history: Any, usual: float, p: Any, codes: Any, values: Any
) -> Any:
    """The playbook for every run: ``last`` is field-major (column i = run i), ``history`` minutes × runs."""
    n = state.shape[0]
    counts = np.zeros(n, dtype=np.int64)
    for i in range(n):
        counts[i] = tb.decide_k(
            last[:, i], state[i], opening[i], memory[i], history[:, i], usual, p, codes[i], values[i]
        )
    return counts


class VectorTextbook:
    name = tb.Textbook.name

    def reset(self, batch: Any) -> None:
        n = batch.n
        self.opening = batch.state.copy()  # the controls at the start (read by their state-vector positions)
        self.memory = np.zeros((n, 3), dtype=np.int64)
        self.codes = np.zeros((n, tb.MAX_ACTIONS), dtype=np.int64)
        self.values = np.zeros((n, tb.MAX_ACTIONS))

    def decide(self, batch: Any) -> Decisions:
        if batch.last is None:
            return {}
        usual = tb.usual_rate_at((batch.clock_start + batch.t - 1) % 1440, batch.params)
        counts = _decide_runs(
            batch.values,
            batch.state,
            self.opening,
            self.memory,
            np.stack(batch.request_history),
            usual,
            batch.kernel.params,
            self.codes,
            self.values,
        )
        return {int(i): tb.to_actions(self.codes[i], self.values[i], int(counts[i])) for i in np.flatnonzero(counts)}


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
