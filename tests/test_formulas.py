"""The model page's formulas carry no constants of their own: each is filled with the parameters in force."""

from __future__ import annotations

import re

from oncallsim.model import Params
from oncallsim.model.formulas import FORMULAS
from oncallsim.model.placeholders import PLACEHOLDER


def test_every_placeholder_names_a_parameter() -> None:
    names = set(Params.__dataclass_fields__) | {"error_budget"}
    for f in FORMULAS:
        for name, _pct in PLACEHOLDER.findall(f.latex + f.note):
            assert name in names, f"{f.key}: ⟪{name}⟫ is not a parameter"


def test_defaults_give_the_reference_numbers() -> None:
    rendered = {f.key: f.render(Params()) for f in FORMULAS}
    assert r"\ge 14.4" in rendered["page"][0]
    assert r"\frac{e}{0.1\,\%}" in rendered["budget"][0] and r"{43\,200}" in rendered["budget"][0]
    assert r"r = \frac{\lambda_a}{20\,000}" in rendered["cache"][0]
    assert "capped at the 2 s timeout" in rendered["p99"][1]


def test_overrides_reach_every_formula_that_uses_them() -> None:
    params = Params().with_overrides({"page_burn_threshold": 10.0, "slo": 0.99, "timeout_s": 5.0, "max_fleet": 60})
    rendered = {f.key: f.render(params) for f in FORMULAS}
    assert r"\ge 10 " in rendered["page"][0] and "14.4" not in rendered["page"][0]
    assert r"\frac{e}{1\,\%}" in rendered["budget"][0]
    assert "5 s timeout" in rendered["p99"][1] and r"P(W > 5\,\mathrm{s})" in rendered["timeouts"][0]
    assert "[floor, 60]" in rendered["autoscaler"][1]
    for key, (latex, note) in rendered.items():
        assert "⟪" not in latex + note, key
        assert not re.search(r"\{\s*\}", latex), key


def test_a_translated_note_is_filled_after_translation() -> None:
    page = next(f for f in FORMULAS if f.key == "p99")
    _, note = page.render(Params(), gettext=lambda text: text.replace("capped at", "kappet ved"))
    assert "kappet ved the 2 s timeout" in note
