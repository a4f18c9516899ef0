"""oncallsim.model.jit's faster compile options give numba's own answers (values, equality, hash)."""

from __future__ import annotations

import itertools

from numba.core.compiler import Flags
from numba.core.cpu import FastMathOptions

import oncallsim.model.jit  # noqa: F401  (installs the faster comparisons)


def numba_values(flags: Flags) -> dict[str, object]:
    """numba's definition, written apart: each option read through its property."""
    return {name: getattr(flags, name) for name in flags.options}


def variants() -> list[Flags]:
    out = []
    for nrt, boundscheck, explicit_default in itertools.product((None, True, False), (None, True), (False, True)):
        flags = Flags()
        if nrt is not None:
            flags.nrt = nrt
        if boundscheck is not None:
            flags.boundscheck = boundscheck
        if explicit_default:
            flags.fastmath = FastMathOptions(False)  # set to what is also its default
        out.append(flags)
    return out


def test_values_equality_and_hash_are_numbas() -> None:
    flags = variants()
    for a in flags:
        assert a.values() == numba_values(a)
        assert hash(a) == hash(tuple(sorted(numba_values(a))))
        for b in flags:
            assert (a == b) == (numba_values(a) == numba_values(b))
