"""Where numba keeps oncallsim's compiled machine code, and what makes it stale: the code, not its prose.

numba keys a cached function on a hash of its own source file and names its cache file by the function's
line number. Both are wrong for a project whose compiled functions call each other across modules and whose
modules also hold prose: a change in a callee's module would load stale machine code (numba does not look
there), while a changed docstring, comment, help text or label — or a blank line above a function —
recompiles. This locator, tried before numba's own for every file of the package, keys all of oncallsim's
compiled functions on one digest of *what is compiled*: the syntax trees of the modules that hold or feed
compiled code, without docstrings, with every string that holds white space (prose: messages, help texts)
blanked, and every string of a registry entry (``ControlSpec(…)``: labels, units, help) too; identifiers such
as the choice names of a module's constants stay in. Line numbers, comments and formatting are not
part of a syntax tree. The digest also names the cache's folder, so versions of the code (two branches, a
scratch copy) keep their own machine code side by side and identical code shares it.

The cache lives in ``$NUMBA_CACHE_DIR/oncallsim`` when that is set, else in ``$XDG_CACHE_HOME/oncallsim/numba`` (by
default ``~/.cache/oncallsim/numba``); the folders of the ``KEEP`` most recently used versions are kept.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["KEEP", "cache_folder", "code_digest", "install"]

PACKAGE = Path(__file__).resolve().parent  # oncallsim/
KEEP = 4  # versions of the compiled code kept on disk
_COMPILED_MARK = "oncallsim.model.kernel import"  # a module outside model/ that declares compiled functions


def _sources() -> list[Path]:
    """The modules whose content can change machine code: all of ``model/`` (compiled functions, and the
    constants and tables they read) and every other module that declares compiled functions."""
    model = sorted((PACKAGE / "model").rglob("*.py"))
    others = [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if "model" not in path.relative_to(PACKAGE).parts[:1] and _COMPILED_MARK in path.read_text("utf-8")
    ]
    return model + others


class _Prose(ast.NodeTransformer):
    """Drops docstrings and blanks the strings that hold white space (prose), keeping the code's shape."""

    def _body(self, node: Any) -> Any:
        self.generic_visit(node)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
        return node

    visit_Module = visit_ClassDef = visit_FunctionDef = visit_AsyncFunctionDef = _body

    def visit_Call(self, node: ast.Call) -> ast.Call:
        """A registry entry (``ControlSpec(…)``, any ``…Spec(…)``) is data for Python, never compiled: its
        strings (names, labels, units, help) are all blanked, with or without white space."""
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        self.generic_visit(node)
        if callee.endswith("Spec"):
            for part in ast.walk(node):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    part.value = ""
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, str) and any(ch.isspace() for ch in node.value):
            return ast.Constant(value="")
        return node


def _shape(source: str) -> str:
    """A module's syntax tree as text, without its prose, line numbers, comments or formatting."""
    return ast.dump(_Prose().visit(ast.parse(source)), include_attributes=False)


@lru_cache(maxsize=1)
def code_digest() -> str:
    """The digest of what is compiled (16 hex digits), the same for every copy of the same code."""
    digest = hashlib.sha256(f"{sys.version_info[:2]}".encode())
    for path in _sources():
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(_shape(path.read_text("utf-8")).encode())
    return digest.hexdigest()[:16]


def _base() -> Path:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"]) / "oncallsim"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "oncallsim" / "numba"


def cache_folder() -> Path:
    """This version's folder of machine code."""
    return _base() / code_digest()


def _prune(base: Path) -> None:
    """Keep the ``KEEP`` most recently used versions' folders (a folder is touched when a run uses it)."""
    try:
        folders = [p for p in base.iterdir() if p.is_dir() and len(p.name) == 16]
        folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in folders[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def install() -> None:
    """Put the locator in front of numba's own (before any compiled function is declared)."""
    from numba.core import caching

    impl: Any = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")  # noqa: B009  (public from numba 0.61)
    if any(cls.__name__ == "CompiledCodeLocator" for cls in impl._locator_classes):
        return

    class CompiledCodeLocator(caching._CacheLocator):  # type: ignore[misc]
        """A function of oncallsim: cached under the code's digest, named by its module and qualified name."""

        def __init__(self, py_func: Any, py_file: str) -> None:
            module = Path(py_file).resolve().relative_to(PACKAGE).with_suffix("")
            self._path = str(cache_folder() / ".".join(module.parts))
            self._py_file = py_file  # numba names it in a warning about a function it cannot cache

        def get_cache_path(self) -> str:
            return self._path

        def get_source_stamp(self) -> str:
            return code_digest()

        def get_disambiguator(self) -> str:
            return "code"  # the qualified name is unique in its module; no line number

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> CompiledCodeLocator | None:
            try:
                Path(py_file).resolve().relative_to(PACKAGE)
            except ValueError:
                return None  # not ours: numba's own locators
            self = cls(py_func, py_file)
            try:
                self.ensure_cache_path()  # type: ignore[no-untyped-call]
            except OSError:
                return None  # no writable cache folder: numba's own locators (beside the sources, or none)
            return self

    impl._locator_classes.insert(0, CompiledCodeLocator)
    try:
        base = _base()
        base.mkdir(parents=True, exist_ok=True)
        folder = cache_folder()
        folder.mkdir(exist_ok=True)
        os.utime(folder)
        _prune(base)
    except OSError:
        pass
