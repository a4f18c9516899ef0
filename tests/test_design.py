"""The design stays visible: curated exports, documented parameters, imports that only point down."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import oncallsim
import oncallsim.model
from oncallsim.model import CONTROL_SPECS, Params, param_info

PACKAGE = Path(oncallsim.__file__).parent

ROOT = PACKAGE.parent


def _layers() -> list[str]:
    """The layer list of docs/architecture.md (the line in its first code block), top first."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    line = text.split("```", 2)[1].strip()
    return [name.strip() for name in line.split("·")]


# Each layer may import only the layers listed after it (docs/architecture.md, "Layers").
LAYERS = _layers()
# Modules named for a layer they belong to: the entry point, and the CLI's helpers (``cli_*.py``).
MEMBERS = {"__main__": "cli"}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "oncallsim" or len(parts) < 2:
        return None
    return "cli" if parts[1].startswith("cli_") else MEMBERS.get(parts[1], parts[1])


def test_public_exports_are_curated() -> None:
    assert sorted(oncallsim.__all__) == sorted(set(oncallsim.__all__))
    for name in oncallsim.__all__:
        assert hasattr(oncallsim, name), name
    public = {n for n in dir(oncallsim) if not n.startswith("_") and not isinstance(getattr(oncallsim, n), type(ast))}
    assert public - set(oncallsim.__all__) <= {"__version__"}
    for name in oncallsim.model.__all__:
        assert hasattr(oncallsim.model, name), name


def test_every_parameter_is_documented_with_unit_source_and_range() -> None:
    infos = param_info()
    assert len(infos) == len(Params.__dataclass_fields__)
    for p in infos:
        assert p.doc.endswith(".") and p.unit and p.source in {"ref", "assumption", "decision"}
        assert p.min <= p.default <= p.max, p.name


def test_every_control_has_a_label_and_help() -> None:
    for spec in CONTROL_SPECS.values():
        assert spec.label and spec.help
        if spec.kind == "choice":
            assert spec.default in spec.choices, spec.name
        elif spec.kind not in {"bool", "button", "instance"}:
            assert spec.min is not None and spec.max is not None and spec.min <= spec.default <= spec.max


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_imports_only_point_down_the_layers() -> None:
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel == Path("__init__.py"):
            continue  # the package's front door re-exports the public API of the layers below the CLI
        own = layer_of("oncallsim." + ".".join(rel.with_suffix("").parts))
        assert own in LAYERS, f"{rel} belongs to no layer of docs/architecture.md"
        allowed = set(LAYERS[LAYERS.index(own) :])
        for module in _imports(path):
            target = layer_of(module)
            if target is not None and target in LAYERS:
                assert target in allowed, f"{rel} imports {module}: {own} may not depend on {target}"


def test_model_has_no_io_clock_or_global_randomness() -> None:
    forbidden = {"random", "time", "datetime", "os", "io", "pathlib", "socket", "json", "sqlite3", "numpy.random"}
    for path in (PACKAGE / "model").rglob("*.py"):
        bad = {m for m in _imports(path) if m in forbidden or m.split(".")[0] in {"random", "time", "os", "socket"}}
        assert not bad, f"{path.name} imports {bad}"


def test_the_record_and_the_state_are_laid_out_by_the_schema() -> None:
    """MinuteRecord, the compiled minute's vectors and the batch columns follow model/fields.py."""
    from oncallsim.batch.columns import BOOL_FIELDS, INT_FIELDS
    from oncallsim.model import MinuteRecord
    from oncallsim.model.fields import NUMERIC_FIELDS, REC, RECORD_SCHEMA, ST, STATE_SCHEMA

    assert MinuteRecord._fields == tuple(f.name for f in RECORD_SCHEMA)
    hints = typing.get_type_hints(MinuteRecord)
    for f in RECORD_SCHEMA:
        expected = {"int": int, "float": float, "bool": bool, "str": str, "extras": dict[str, typing.Any] | None}.get(
            f.dtype, tuple[str, ...]
        )
        assert hints[f.name] == expected, f.name
    assert REC._fields == tuple(f.name for f in NUMERIC_FIELDS) and ST._fields == tuple(f.name for f in STATE_SCHEMA)
    assert {f.name for f in NUMERIC_FIELDS if f.dtype == "int"} | {"minute"} == INT_FIELDS
    assert {f.name for f in NUMERIC_FIELDS if f.dtype == "bool"} == BOOL_FIELDS
    assert {f.role for f in RECORD_SCHEMA} <= {"record", "control", "derived", "label"}


def test_records_doc_table_is_the_schema() -> None:
    from oncallsim.model.fields import markdown_table

    text = (PACKAGE.parent / "docs" / "records.md").read_text()
    assert markdown_table() in text, "docs/records.md's field table differs from model/fields.py: regenerate it"


def test_every_record_field_is_documented() -> None:
    from oncallsim.model import RECORD_FIELDS

    text = (PACKAGE.parent / "docs" / "records.md").read_text()
    for name in RECORD_FIELDS:
        assert f"| `{name}` |" in text, f"docs/records.md does not document {name}"


def test_every_parameter_is_in_the_cli_table() -> None:
    from typer.testing import CliRunner

    from oncallsim.cli import app

    out = CliRunner().invoke(app, ["params"]).stdout
    for p in param_info():
        assert p.name in out
