"""How the minute's formulas are compiled: one decorator, the parameters as a typed tuple, two special functions.

Every formula is written once, as plain scalar Python over floats and ints, and compiled with numba
(``cache=True``: once per machine). The scalar engine calls the compiled minute once per minute; the batch
engine calls it in a compiled loop over runs. Set ``NUMBA_DISABLE_JIT=1`` to run the same code interpreted
(slow, but steppable in a debugger; the tests compare both paths bit for bit).

Two special functions need care to stay bit-identical to CPython and SciPy:
- the Poisson cdf is SciPy's own ``pdtr`` (its Cython export, bound by symbol name so the cache holds);
- ln(N!) comes from a table filled with CPython's ``math.lgamma`` (numba's lgamma differs in the last bits).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from oncallsim.model.jit import positions

__all__ = [
    "JIT",
    "P",
    "compiled",
    "float_bits",
    "from_python",
    "inline_step",
    "kernel_params",
    "lgamma_table",
    "pdtr",
    "step",
    "unmanaged",
]

T = TypeVar("T", bound=Callable[..., Any])

from numba.core import config as _numba_config  # noqa: E402

JIT = not getattr(_numba_config, "DISABLE_JIT", False)

if JIT:
    import llvmlite.binding as _llvm
    from numba import njit, types
    from numba.core.registry import CPUDispatcher
    from numba.extending import get_cython_function_address

    from oncallsim.model.jit import LINK_ONLY

    _llvm.add_symbol("oncallsim_pdtr", get_cython_function_address("scipy.special.cython_special", "pdtr"))
    _pdtr = types.ExternalFunction("oncallsim_pdtr", types.float64(types.float64, types.float64, types.intc))

    def compiled(fn: T) -> T:
        """Compile a formula (no Python objects inside; cached on disk, a folder per version of the sources)."""
        return njit(cache=True, nogil=True)(fn)  # type: ignore[return-value]

    def unmanaged(fn: T) -> T:
        """Compile a step of a hot loop without numba's reference counting (``_nrt=False``): each array an
        event passes to a function would otherwise cost two atomic counts. Such a function must not
        allocate; the arrays it works on are made by Python and outlive the call."""
        return njit(cache=True, nogil=True, _nrt=False)(fn)  # type: ignore[call-overload,no-any-return]

    def _as_values(dispatcher: Any) -> Any:
        """Type the arguments of calls to ``dispatcher`` from compiled code as values, never as literals. numba
        types a constant argument (an outcome code, ``False``, a slot index) as its literal and compiles the
        callee once per constant (``decide`` was compiled 8 times, ``call_failed`` 8); a step never needs a
        literal."""
        typed = type(dispatcher).get_call_template

        def get_call_template(args: Any, kws: Any) -> Any:
            plain = tuple(types.unliteral(a) for a in args)  # type: ignore[no-untyped-call]
            return typed(dispatcher, plain, {k: types.unliteral(v) for k, v in kws.items()})  # type: ignore[no-untyped-call]

        dispatcher.get_call_template = get_call_template
        return dispatcher

    _STEP = {
        "cache": True,
        "nogil": True,
        "_nrt": False,
        "no_cpython_wrapper": True,
        "no_cfunc_wrapper": True,
        "pipeline_class": LINK_ONLY,
    }

    def _compiled_callers_only(dispatcher: Any) -> Any:
        """A step refuses a call from Python with a line that says what to use (it has no machine code of its own
        to run: numba would call a null pointer)."""
        dispatcher.__class__ = _Step
        return dispatcher

    class _Step(CPUDispatcher):  # type: ignore[misc]
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            raise TypeError(
                f"{self.py_func.__module__}.{self.py_func.__qualname__} is a step, compiled for compiled callers "
                "only: call kernel.from_python(step) from Python"
            )

    def step(fn: T) -> T:
        """``unmanaged``, and called from compiled code only: numba builds no CPython or C wrapper for it (a
        wrapper unboxes each argument from a Python object), and it is compiled only as its callers' code, never
        to machine code of its own (``jit.LINK_ONLY``)."""
        # forceinline=False said, not left unset: numba would take it from the caller being compiled
        return _compiled_callers_only(_as_values(njit(**_STEP, forceinline=False)(fn)))  # type: ignore[call-overload,no-any-return]

    def inline_step(fn: T) -> T:
        """``step``, inlined into its callers by LLVM (``forceinline``: LLVM's alwaysinline): the steps every
        request takes (a busy minute 59 → 21 ms when the world was passed as all its arrays). numba compiles such
        a step once; its own inlining (``inline="always"``) typed and lowered a copy of the body at every call
        site, which was most of the engine's compile time (70 → 34 s of CPU)."""
        return _compiled_callers_only(_as_values(njit(**_STEP, forceinline=True)(fn)))  # type: ignore[call-overload,no-any-return]

    @cache
    def _with_wrappers(py_func: Callable[..., Any]) -> Any:
        # not cached on disk: numba's cache names a function by module and name, so the twin and the step would
        # share one entry per signature, and Python would call the step's code, which has no wrapper
        return njit(cache=False, nogil=True, _nrt=False)(py_func)  # type: ignore[call-overload]

    def from_python(fn: T) -> T:
        """A compiled step callable from Python (a test or a check that drives one mechanism): a second
        dispatcher of the same function with its wrappers, compiled (in memory only) when Python calls it; the
        engine's own calls never build them (``step``)."""
        return _with_wrappers(getattr(fn, "py_func", fn))  # type: ignore[no-any-return]

    from llvmlite import ir as _ir
    from numba.extending import intrinsic

    @intrinsic
    def _bitcast_float(typingctx: Any, x: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return builder.bitcast(args[0], _ir.IntType(64))

        return types.int64(types.float64), codegen

    @step
    def float_bits(x: float) -> int:
        """A float64's bit pattern as an int64 (one register move: no memory, no call)."""
        return _bitcast_float(x)  # type: ignore[call-arg,no-any-return]

    @compiled
    def pdtr(k: float, m: float) -> float:
        """Poisson cdf P(X ≤ k), X ~ Poisson(m): SciPy's ``pdtr``, called from compiled code."""
        return _pdtr(k, m, 0)  # type: ignore[call-overload]

else:  # interpreted: the same functions, run by CPython
    from scipy.special import pdtr as _scipy_pdtr

    def compiled(fn: T) -> T:
        return fn

    unmanaged = compiled
    step = compiled
    inline_step = compiled

    def from_python(fn: T) -> T:
        return fn

    def float_bits(x: float) -> int:
        return int(np.float64(x).view(np.int64))

    def pdtr(k: float, m: float) -> float:
        return float(_scipy_pdtr(k, m))


def _param_names() -> tuple[str, ...]:
    from oncallsim.model.params import Params

    return (*Params.__dataclass_fields__, "error_budget")


# Positions of the parameters in the array compiled code reads: ``p[P.hot_objects]``. An array, not a named
# tuple: numba checks an array argument in well under a microsecond, a named tuple of forty fields in ~14 µs.
P: Any = positions("ParamIndex", _param_names())


@lru_cache(maxsize=64)
def kernel_params(params: Any) -> npt.NDArray[np.float64]:
    """The parameters as the float array compiled code reads (whole numbers are exact in a float64)."""
    values = np.array([float(getattr(params, name)) for name in P._fields])
    values.setflags(write=False)
    return values


@lru_cache(maxsize=8)
def lgamma_table(max_n: int) -> npt.NDArray[np.float64]:
    """ln(n!) = lgamma(n + 1) for n = 0…max_n, by CPython's ``math.lgamma`` (the scalar model's numbers)."""
    table = np.array([math.lgamma(n + 1.0) for n in range(max_n + 1)])
    table.setflags(write=False)
    return table
