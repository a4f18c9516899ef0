"""Presets (issue 23, item 11): every control whose choices are presets shows what each sets, in ``oncallsim params``
and on the model page, from its declaration alone (``ControlSpec.presets``), in the page's language."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from oncallsim.model import CONTROL_SPECS, DEFAULT_PARAMS
from oncallsim.model.control_spec import REQUEST_ONLY, ControlSpec
from oncallsim.model.params import Params
from oncallsim.model.request import breaker
from tests.test_cli import invoke
from tests.test_web import console


def test_a_declared_preset_is_a_table_of_every_column_any_preset_declares() -> None:
    spec = ControlSpec(
        "made_up_preset",
        "choice",
        "Made up",
        "A control that exists only here.",
        "b",
        choices=("a", "b"),
        engines=REQUEST_ONLY,
        presets={"a": {"K": "⟪throttle_k⟫", "source": "here"}, "b": {"source": "there", "window": "3 s"}},
    )
    danish = {"source": "kilde", "here": "her"}
    columns, rows = spec.preset_table(Params(throttle_k=3.5), lambda t: danish.get(t, t))
    assert columns == ["K", "kilde", "window"] and rows[0] == ["a", "3.5", "her", "—"]  # translated, then filled
    columns, rows = spec.preset_table(Params(throttle_k=3.5))
    assert columns == ["K", "source", "window"]
    assert rows == [["a", "3.5", "here", "—"], ["b", "—", "there", "3 s"]]


def test_the_throttle_presets_carry_the_constants_the_breaker_uses() -> None:
    _, rows = CONTROL_SPECS["throttle_preset"].preset_table(DEFAULT_PARAMS)
    table = {row[0]: row[1:] for row in rows}
    assert list(table) == list(breaker.PRESETS)
    assert table["warden"][1:3] == [f"{breaker._WARDEN_K:g}", "100"]
    assert table["aegis"][1:3] == ["1/0.6 ≈ 1.67", "100"]
    assert table["v3"][1:3] == [f"{DEFAULT_PARAMS.throttle_k:g}", "20"]
    assert "429" in table["warden"][3] and "a 429 is accepted" in table["aegis"][3]


def test_params_lists_each_preset_of_every_control_that_declares_some() -> None:
    code, out, _ = invoke("params")
    assert code == 0
    declared = [s for s in CONTROL_SPECS.values() if s.presets]
    assert declared
    for spec in declared:
        assert f"Presets of {spec.name} (default {spec.default})" in out
        for choice in spec.presets:
            assert re.search(rf"│ {re.escape(choice)} +│", out), choice
    warden = next(line for line in out.splitlines() if line.startswith("│ warden "))
    assert "│ 1.5 " in warden and "│ 100 " in warden and "not counted" in warden


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with console(tmp_path / "runs.sqlite3") as c:
        yield c


def test_the_model_page_shows_the_presets_in_its_language(client: TestClient) -> None:
    english = client.get("/model?lang=en").text
    table = english[english.index('id="presets-throttle_preset"') :].split("</table>", 1)[0]
    assert "<code>v3</code> (default)" in table and "<td>1.5</td>" in table and "<td>20</td>" in table
    assert f"<td>{DEFAULT_PARAMS.throttle_k:g}</td>" in table  # v3's K is the parameter in force
    for spec in (s for s in CONTROL_SPECS.values() if s.presets):
        assert f'id="presets-{spec.name}"' in english
    danish = client.get("/model?lang=da").text
    table = danish[danish.index('id="presets-throttle_preset"') :].split("</table>", 1)[0]
    assert "Forudindstillinger" in table and "tælles ikke" in table and "(standard)" in table
    assert "not counted" not in table
    arabic = client.get("/model?lang=ar").text
    assert "الإعدادات المسبقة" in arabic and "لا يُحسب" in arabic
