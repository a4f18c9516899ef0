"""What oncallsim teaches numba so that its engines compile in seconds: three extensions, each measured.

numba compiles each function on its own (typing, lowering to LLVM's intermediate code, LLVM's optimisation,
machine code) and links a callee's intermediate code into each caller. Three habits of our code made that
cost five times what it needs to:

1. **Steps are only ever linked** (``LINK_ONLY``, used by ``kernel.step``): a step is called from compiled code
   alone, and its callers inline it. numba still optimised each step's module and made machine code for it,
   then did both again for every caller up to the engine's loop. A step's library now keeps its function-
   optimised intermediate code for its callers; the loop's module is optimised and compiled once.
2. **Pieces by reference** (``by_reference``): numba passes a named tuple between functions as every scalar of
   every member — seven for an array, some 650 for the request engine's world at each call, packed again in
   each callee. A piece (a named tuple of arrays) is instead held as one pointer to its members, kept by the
   function that took it from Python; ``piece.name`` loads that member. Compiled code never changes a tuple,
   so the memory is only read: each such argument is ``noalias`` and LLVM keeps the loaded members in
   registers across the stores into the arrays (the chain's world also marks each load of a member invariant:
   ``by_reference_invariant``).
3. **Positions are constants** (``positions``): ``rec[REC.error_rate]`` with ``REC`` a global named tuple built
   the whole tuple (sixty fields) at every use before picking one field; each field is now a constant.
4. **Compile options compared by what is set**: numba looks up each typed call of a library function (``min``,
   ``math.log``, an array's method) in a cache keyed by the compile's options, some sixty of them, each read
   through a property at every hash and comparison — 140,000 times for the request engine, about a seventh of
   its compile. Two options are now compared on those either sets (every other one is its default on both
   sides), the values read from the dictionary of those set, the hash (numba's sorts the names alone) once per
   class: numba's own answers (tests/test_jit_options.py).

Measured (2026-12-02, this 2-core machine; ``benchmarks/compile.py``, numba's compile events): both engines from
an empty cache in a fresh process 34.7 → 23.0 s of CPU (with the minute model's internal functions as steps too);
the intermediate code 187,000 → 90,000 instructions; every number the same to the bit
(``scripts/engine_fingerprint.py``) and the busy minute no slower (docs/architecture.md, "First contact").
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, TypeVar

from oncallsim.compiled_cache import install as _install_cache

_install_cache()  # before any compiled function is declared: numba's cache keyed on the code, not its prose

from numba import types  # noqa: E402
from numba.core import callconv, cgutils, targetconfig  # noqa: E402
from numba.core import codegen as numba_codegen  # noqa: E402
from numba.core.boxing import unbox_tuple  # noqa: E402
from numba.core.compiler import CompilerBase, DefaultPassBuilder  # noqa: E402
from numba.core.compiler_lock import require_global_compiler_lock  # noqa: E402
from numba.core.compiler_machinery import register_pass  # noqa: E402
from numba.core.imputils import impl_ret_borrowed, impl_ret_untracked, lower_constant  # noqa: E402
from numba.core.pythonapi import NativeValue  # noqa: E402
from numba.core.typed_passes import NativeLowering  # noqa: E402
from numba.core.typing.templates import AttributeTemplate, infer_getattr  # noqa: E402
from numba.extending import lower_getattr_generic, models, register_model, typeof_impl, unbox  # noqa: E402

__all__ = ["LINK_ONLY", "PieceType", "by_reference", "by_reference_invariant", "positions"]

C = TypeVar("C", bound=type)


# 1. Steps are only ever linked ------------------------------------------------------------------------------


class _WithoutEnvironment:
    """The code generator as a link-only library shows it to numba: a step's environment (numba's link to
    Python objects, which a step never uses) lives in no machine code, so there is no address to set."""

    def __init__(self, codegen: Any) -> None:
        self._codegen = codegen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._codegen, name)

    def set_env(self, env_name: str, env: Any) -> None:
        pass


class _LinkOnlyLibrary(numba_codegen.JITCodeLibrary):
    """A step's code: its function-optimised intermediate code, linked into each caller, which optimises and
    compiles it with its own; never optimised as a module nor compiled to machine code by itself. Kept in the
    cache as that intermediate code (numba's "bitcode" form)."""

    @property
    def codegen(self) -> Any:
        return _WithoutEnvironment(self._codegen)

    def finalize(self) -> None:
        require_global_compiler_lock()
        self._raise_if_finalized()
        seen = set()
        for library in self._linking_libraries:  # as numba's finalize: the callees' code, for inlining
            if library not in seen:
                seen.add(library)
                self._reload_init.update(library._reload_init)
                self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._final_module.verify()
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True

    def get_pointer_to_function(self, name: str) -> int:
        self._ensure_finalized()
        return 0  # no machine code: a step has no wrapper to call it from Python (kernel.from_python has)

    def serialize_using_object_code(self) -> Any:
        return self.serialize_using_bitcode()


@register_pass(mutates_CFG=True, analysis_only=False)
class _LinkOnlyLowering(NativeLowering):
    """numba's lowering into a link-only library."""

    _name = "oncallsim_link_only_lowering"

    def run_pass(self, state: Any) -> bool:
        if state.library is None:
            state.library = _LinkOnlyLibrary(state.targetctx.codegen(), state.func_id.func_qualname)
            state.library.enable_object_caching()
        return super().run_pass(state)  # type: ignore[no-any-return]


class LinkOnlyCompiler(CompilerBase):
    """numba's nopython pipeline with the link-only lowering (``njit(pipeline_class=LINK_ONLY)``)."""

    def define_pipelines(self) -> list[Any]:
        pipeline = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pipeline.passes = [(_LinkOnlyLowering if p is NativeLowering else p, d) for p, d in pipeline.passes]
        return [pipeline]


LINK_ONLY = LinkOnlyCompiler


# 2. Pieces by reference -------------------------------------------------------------------------------------


class PieceType(types.Type):
    """A named tuple of arrays (or of pieces), as compiled code holds it: a pointer to its members."""

    def __init__(self, members: Any, cls: type) -> None:
        self.types = tuple(members)
        self.fields: tuple[str, ...] = tuple(cls._fields)  # type: ignore[attr-defined]
        self.instance_class = cls
        self.as_struct = types.NamedTuple(self.types, cls)  # the members' layout in memory
        super().__init__(f"{cls.__name__}&")

    @property
    def key(self) -> Any:
        return self.instance_class, self.types


@register_model(PieceType)
class _PieceModel(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, dmm.lookup(fe_type.as_struct).get_value_type().as_pointer())


@infer_getattr
class _PieceMembers(AttributeTemplate):
    key = PieceType

    def generic_resolve(self, typ: Any, attr: str) -> Any:  # type: ignore[override]
        return typ.types[typ.fields.index(attr)] if attr in typ.fields else None


@lower_getattr_generic(PieceType)
def _member(context: Any, builder: Any, typ: Any, value: Any, attr: str) -> Any:
    index = typ.fields.index(attr)
    member = builder.load(cgutils.gep_inbounds(builder, value, 0, index))
    if getattr(typ.instance_class, "__invariant_loads__", False):
        # the members never change while compiled code holds the piece: LLVM may load each once per function and
        # keep it across stores into the arrays (``noalias`` alone did not stop it loading a member again after
        # each store). Asked for by the chain's world only: the one-service engine compiled ~3 s longer with it
        member.set_metadata("invariant.load", builder.module.add_metadata([]))
    return impl_ret_borrowed(context, builder, typ.types[index], member)


@unbox(PieceType)
def _unbox_piece(typ: Any, obj: Any, c: Any) -> Any:
    """From Python: the members as numba unboxes a named tuple, stored in the calling wrapper's frame (which
    outlives the call), and their address."""
    native = unbox_tuple(typ.as_struct, obj, c)
    slot = cgutils.alloca_once(c.builder, native.value.type)
    c.builder.store(native.value, slot)
    return NativeValue(slot, is_error=native.is_error, cleanup=native.cleanup)


_decorate_function = callconv.CPUCallConv.decorate_function


def _with_noalias_pieces(self: Any, fn: Any, args: Any, fe_argtypes: Any, noalias: bool = False) -> None:
    """numba's argument attributes, and ``noalias`` on each piece: its memory is only ever read, so no store
    into an array changes it (LLVM may keep what it loaded)."""
    _decorate_function(self, fn, args, fe_argtypes, noalias)
    values = self._get_arg_packer(fe_argtypes)._unflattener.unflatten(self.get_arguments(fn))
    for value, fe_type in zip(values, fe_argtypes, strict=True):
        if isinstance(fe_type, PieceType):
            value.add_attribute("noalias")


callconv.CPUCallConv.decorate_function = _with_noalias_pieces  # type: ignore[method-assign]


def by_reference(cls: C) -> C:
    """Register a named tuple class of arrays (or of such pieces) as a piece: compiled code holds it by
    reference. A piece must never be built or returned by compiled code (it is made in Python, read there)."""

    @typeof_impl.register(cls)
    def _typeof(value: Any, context: Any) -> Any:
        return PieceType([typeof_impl(v, context) for v in value], cls)

    return cls


def by_reference_invariant(cls: C) -> C:
    """``by_reference``, each load of a member marked invariant (``!invariant.load``): LLVM keeps the members in
    registers across the stores into the arrays. Measured 2026-12-03 in paired runs: the chain's busy minute up
    to 15 % faster (within the noise in other pairs) at no cost in compiling it; the one service's busy minute
    with every mechanism ~4 % faster but its engines ~3 s of CPU longer to compile from an empty cache
    (28.2–34.5 s against 26.0–32.2), over the first start's budget: so the chain's world only."""
    cls.__invariant_loads__ = True  # type: ignore[attr-defined]
    return by_reference(cls)


# 3. Positions are constants ---------------------------------------------------------------------------------


class PositionsType(types.Dummy):
    """A named tuple of positions, as numba sees it: no value at run time, each field a constant."""

    def __init__(self, cls: type) -> None:
        self.instance_class = cls
        super().__init__(f"positions[{cls.__name__}:{','.join(cls._fields)}]")  # type: ignore[attr-defined]


register_model(PositionsType)(models.OpaqueModel)


@lower_constant(PositionsType)
def _no_value(context: Any, builder: Any, typ: Any, value: Any) -> Any:
    return cgutils.get_null_value(context.get_value_type(typ))


def positions(name: str, fields: Any) -> Any:
    """Positions by name in a vector compiled code reads: a named tuple ``(0, 1, 2, …)`` for Python, and for
    numba a constant per field."""
    index: Any = namedtuple(name, list(fields))(*range(len(fields)))  # type: ignore[misc]
    cls = type(index)
    numba_type = PositionsType(cls)
    names: tuple[str, ...] = index._fields

    @typeof_impl.register(cls)
    def _typeof(value: Any, context: Any) -> Any:
        return numba_type

    @infer_getattr
    class _Positions(AttributeTemplate):
        key = numba_type

        def generic_resolve(self, typ: Any, attr: str) -> Any:  # type: ignore[override]
            return types.intp if attr in names else None

    @lower_getattr_generic(numba_type)
    def _position(context: Any, builder: Any, typ: Any, value: Any, attr: str) -> Any:
        return impl_ret_untracked(context, builder, types.intp, context.get_constant(types.intp, names.index(attr)))

    return index


# 4. Compile options compared by what is set -----------------------------------------------------------------


def _values(self: Any) -> dict[str, Any]:
    """Every option's value: what is set, else its default (numba's own ``values`` through each property)."""
    own = self._values
    return {name: own.get(name, option.default) for name, option in self.options.items()}


_options_equal = targetconfig.TargetConfig.__eq__
_class_hash: dict[type, int] = {}


def _equal(self: Any, other: Any) -> Any:
    """numba's ``self.values() == other.values()`` for options of one class, reading only the options either
    sets: every other one is its default on both sides."""
    if type(self) is not type(other):
        return _options_equal(self, other)
    mine, theirs = self._values, other._values
    if mine == theirs:
        return True
    options = self.options
    for name in mine.keys() | theirs.keys():
        default = options[name].default
        if mine.get(name, default) != theirs.get(name, default):
            return False
    return True


def _hash(self: Any) -> int:
    """numba's hash, ``hash(tuple(sorted(self.values())))``, sorts the dictionary's keys: the options' names,
    the same for every instance of a class. Computed once per class."""
    cls = type(self)
    value = _class_hash.get(cls)
    if value is None:
        value = _class_hash[cls] = hash(tuple(sorted(self.values())))
    return value


targetconfig.TargetConfig.values = _values  # type: ignore[method-assign]
targetconfig.TargetConfig.__eq__ = _equal  # type: ignore[method-assign]
targetconfig.TargetConfig.__hash__ = _hash  # type: ignore[method-assign,assignment]
