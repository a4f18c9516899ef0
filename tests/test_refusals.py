"""Refusals of bad input in the page's language (oncallsim/refusals.py): every structured kind written in every
language with its placeholders filled, every control's range or choice refusal structured, the instance actions'
and the zoom's minute; the English message unchanged for the CLI and the API; the console's socket, its HTTP
actions and the zoom page answering a Danish (and an Arabic) page in its language, numbers the language's way.
The expected sentences are written out here, not produced by the code under test."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from oncallsim import Simulation
from oncallsim.i18n import LANGUAGES, format_number, translations
from oncallsim.model import CONTROL_SPECS, InvalidInput
from oncallsim.model.controls import coerce_control_value
from oncallsim.refusals import PLURAL_REFUSALS, REFUSAL_TEXTS, localize, localized_fields, render
from tests.test_web import console, new_run, receive_until

OTHERS = [language for language in LANGUAGES if language != "en"]

# A refusal of each kind, its details as a raise site gives them (the variants of "range" each once).
SAMPLES: dict[str, tuple[str, dict[str, Any]]] = {
    "range.whole": ("range", {"lo": 1, "hi": 40000, "unit": "", "whole": True, "got": 41000}),
    "range.whole.unit": ("range", {"lo": 1, "hi": 40, "unit": "instances", "whole": True, "got": 45}),
    "range.number": ("range", {"lo": 0.0, "hi": 1.0, "unit": "", "whole": False, "got": 1.5}),
    "range.number.unit": ("range", {"lo": 0.0, "hi": 600.0, "unit": "s", "whole": False, "got": 1234.5}),
    "choice": ("choice", {"allowed": ("fifo", "codel", "adaptive-lifo"), "got": "lifo"}),
    "switch": ("switch", {"got": 3}),
    "button": ("button", {"got": 1}),
    "instance_id": ("instance_id", {"got": -1}),
    "no_instance": ("no_instance", {"got": 9, "first": "i-00", "last": "i-03"}),
    "already_ejected": ("already_ejected", {"instance": "i-02"}),
    "last_in_rotation": ("last_in_rotation", {"instance": "i-01"}),
    "not_ejected": ("not_ejected", {"instance": "i-01"}),
    "already_replacing": ("already_replacing", {"instance": "i-03"}),
    "engine_only": ("engine_only", {"engines": "request", "engine": "minute"}),
    "minute": ("minute", {"lo": 0, "hi": 1234, "got": 5000}),
    "no_minute": ("no_minute", {"got": 5}),
    "run_over": ("run_over", {}),
    "pause_first": ("pause_first", {}),
    "speed_cap": ("speed_cap", {"difficulty": "guided", "max": 4}),
    "rate": ("rate", {"n": 30}),
    "lifo_needs_limit": ("lifo_needs_limit", {}),
    "lifo_keeps_limit": ("lifo_keeps_limit", {}),
    "role_cannot": ("role_cannot", {"role": "observer", "roles": ("incident commander", "operations")}),
    "room_closed": ("room_closed", {}),
    "text_rate_person": ("text_rate_person", {"n": 6}),
    "text_rate_link": ("text_rate_link", {"n": 20}),
    "event_too_early": ("event_too_early", {"at": "08:00", "earliest": "08:01"}),
    "event_past_end": ("event_past_end", {"at": "10:30"}),
    "worker_lost": ("worker_lost", {}),
    "surge_peak": ("surge_peak", {"peak": 9999, "rate": 12498750, "cap": 100000.0, "max": 80}),
}


def test_every_kind_has_a_sample() -> None:
    assert set(SAMPLES) == set(REFUSAL_TEXTS) | set(PLURAL_REFUSALS)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_kind_renders_in_every_language_with_its_placeholders_filled(language: str) -> None:
    for key, (kind, details) in SAMPLES.items():
        text = render(kind, details, language)
        assert text and not re.search(r"%\(\w+\)|\{\w+\}", text), (language, key, text)
        for name, value in details.items():
            if name in ("unit", "whole", "allowed", "role", "roles"):  # words, translated: below
                continue
            shown = format_number(value, language) if isinstance(value, (int, float)) else str(value)
            if name in ("got", "lo", "hi") and isinstance(value, float):
                shown = format_number(value, language, 1 if not value.is_integer() else 0)
            assert shown in text, (language, key, name, shown, text)
        if "allowed" in details:
            assert all(choice in text for choice in details["allowed"]), text
        for role in (details["role"], *details["roles"]) if "role" in details else ():
            assert translations(language).gettext(role) in text, (language, key, role, text)
        english = render(kind, details, "en")
        if language != "en":
            assert text != english, (language, key)


def test_the_danish_and_arabic_sentences() -> None:
    kind, details = SAMPLES["range.number.unit"]
    assert render(kind, details, "da") == "skal være et tal fra 0 til 600 s; fik 1.234,5"
    assert render(kind, details, "en") == "must be a number from 0 to 600 s; got 1,234.5"
    assert render(*SAMPLES["choice"], "da") == "skal være en af fifo, codel og adaptive-lifo; fik 'lifo'"
    assert render(*SAMPLES["no_minute"], "ar") == "لم تُلعب أي دقيقة بعد؛ القيمة المُدخلة 5"


def test_a_counted_refusal_takes_the_languages_plural_forms() -> None:
    danish = {n: render("rate", {"n": n}, "da") for n in (1, 30)}
    assert danish == {
        1: "højst 1 handling pr. spil pr. minut; vent et øjeblik",
        30: "højst 30 handlinger pr. spil pr. minut; vent et øjeblik",
    }
    arabic = {n: render("rate", {"n": n}, "ar") for n in (0, 1, 2, 3, 11, 100)}
    assert len(set(arabic.values())) >= 4, arabic  # 0-1 and 100, 2, 3-10, 11-99 say the noun differently
    assert "إجراءات" in arabic[3] and "إجراءين" in arabic[2] and "إجراءً" in arabic[11]


def bad_value(name: str) -> Any:
    """A value every control of this kind refuses."""
    spec = CONTROL_SPECS[name]
    return {"bool": 3, "choice": "nonesuch", "button": 1, "instance": -1}.get(spec.kind, (spec.max or 0) + 7)


@pytest.mark.parametrize("name", list(CONTROL_SPECS))
def test_every_control_refusal_is_structured_and_keeps_its_english(name: str) -> None:
    with pytest.raises(InvalidInput) as err:
        coerce_control_value(name, bad_value(name))
    exc = err.value
    assert exc.kind and exc.field == name
    assert localize(exc, "en") == str(exc) and localized_fields(exc, "en") == {}
    label = translations("da").gettext(CONTROL_SPECS[name].label)
    for language in OTHERS:
        text = localize(exc, language)
        assert text != str(exc) and not re.search(r"%\(\w+\)", text), (language, text)
    assert localize(exc, "da").startswith(label + ": ")
    assert localized_fields(exc, "da") == {"localized": localize(exc, "da")}


def test_the_english_messages_are_unchanged() -> None:
    cases = [
        ("floor", 41, "floor: 41 is out of range; allowed a whole number from 1 to 40 instances"),
        ("shed_share", "x", "shed_share: must be a number from 0 to 1, got 'x'"),
        ("autoscaler", 3, "autoscaler: must be true or false, got 3"),
        ("warmup", 1, "warmup: is a button and takes no value, got 1"),
        ("queue_discipline", "lifo", "queue_discipline: must be one of fifo, codel, adaptive-lifo, got 'lifo'"),
    ]
    for name, value, message in cases:
        with pytest.raises(InvalidInput) as err:
            coerce_control_value(name, value)
        assert str(err.value) == message


def test_a_refusal_without_a_kind_falls_back_to_english() -> None:
    exc = InvalidInput("message", "not valid JSON")
    assert localize(exc, "da") == "message: not valid JSON" and localized_fields(exc, "da") == {}


def test_the_instance_actions_say_it_in_the_language() -> None:
    sim = Simulation("free-play", seed=3, overrides={"floor": 2, "autoscaler": False}, minutes=5, engine="request")
    sim.step()
    expected = {
        ("eject", 9): "Tag ud: der er ingen instans 9: instanserne i drift er i-00 til i-01",
        ("readmit", 1): "Tag ind igen: instans i-01 er ikke taget ud",
    }
    for (control, value), danish in expected.items():
        with pytest.raises(InvalidInput) as err:
            sim.check_action(control, value)
        assert localize(err.value, "da") == danish
    sim.step([("eject", 0)])
    with pytest.raises(InvalidInput) as err:
        sim.check_action("eject", 1)
    assert str(err.value) == (
        "eject: instance i-01 is the last one in rotation: ejecting it would stop all traffic"
    )  # the English as it was
    assert localize(err.value, "da") == (
        "Tag ud: instans i-01 er den sidste i rotation: at tage den ud ville stoppe al trafik"
    )
    with pytest.raises(InvalidInput) as err:
        sim.check_action("eject", 0)
    assert localize(err.value, "ar").startswith("إخراج: المثيل i-00 خارج التناوب بالفعل")


# ---- the pages: the console's socket and HTTP actions, the zoom page ---------------------------------------------


def test_the_console_socket_refuses_in_the_pages_language(tmp_path: Path) -> None:
    with console(tmp_path / "runs.sqlite3") as client:
        run_id = new_run(client, paused=True)
        english = "floor: 41 is out of range; allowed a whole number from 1 to 40 instances"
        with client.websocket_connect(f"/api/runs/{run_id}/ws?lang=da") as ws:
            ws.receive_json()
            ws.send_json({"type": "action", "control": "floor", "value": 41})
            error = receive_until(ws, lambda m: m["type"] == "error")
            assert error["message"] == english  # the API's English, unchanged
            assert error["localized"] == "Bund for flåden: skal være et helt tal fra 1 til 40 instanser; fik 41"
            ws.send_json({"type": "action", "control": "queue_limit", "value": 123456})
            error = receive_until(ws, lambda m: m["type"] == "error")
            assert error["localized"] == "Køgrænse: skal være et helt tal fra 0 til 100.000 requests; fik 123.456"
        with client.websocket_connect(f"/api/runs/{run_id}/ws") as ws:  # English: the frame as it always was
            ws.receive_json()
            ws.send_json({"type": "action", "control": "floor", "value": 41})
            error = receive_until(ws, lambda m: m["type"] == "error")
            assert error == {"type": "error", "field": "floor", "message": english}


def test_the_http_actions_refuse_in_the_pages_language(tmp_path: Path) -> None:
    with console(tmp_path / "runs.sqlite3") as client:
        run_id = new_run(client, paused=True)
        body = {"control": "ttl_s", "value": 1234.5}
        english = {"error": "ttl_s: 1234.5 is out of range; allowed a number from 0 to 600 s", "field": "ttl_s"}
        answer = client.post(f"/api/runs/{run_id}/actions", json=body)
        assert answer.status_code == 422 and answer.content == (
            b'{"error":"ttl_s: 1234.5 is out of range; allowed a number from 0 to 600 s","field":"ttl_s"}'
        )
        danish = client.post(f"/api/runs/{run_id}/actions?lang=da", json=body).json()
        assert danish == {**english, "localized": "Cachens TTL: skal være et tal fra 0 til 600 s; fik 1.234,5"}
        arabic = client.post(f"/api/runs/{run_id}/actions", json=body, headers={"Accept-Language": "ar"}).json()
        said = "مدة التخزين المؤقت (TTL): يجب أن يكون رقمًا من 0 إلى 600 s؛ القيمة المُدخلة 1,234.5"
        assert arabic["localized"] == said
        assert arabic["error"] == english["error"]


def test_the_zoom_page_refuses_a_minute_in_the_pages_language(tmp_path: Path) -> None:
    with console(tmp_path / "runs.sqlite3") as client:
        run_id = new_run(client, paused=True)  # no minute played yet
        page = client.get(f"/runs/{run_id}/zoom?minute=5&lang=da")
        assert page.status_code == 422 and "Minut: der er endnu ikke spillet noget minut; fik 5" in page.text
        page = client.get(f"/runs/{run_id}/zoom?minute=5&lang=en")  # the cookie remembers Danish otherwise
        assert "minute: must be a minute of the run, none: no minute played yet; got 5" in page.text
        assert client.post(f"/api/runs/{run_id}/control", json={"type": "step"}).status_code == 200
        page = client.get(f"/runs/{run_id}/zoom?minute=1234&lang=da")
        assert "Minut: skal være et minut i spillet, fra 0 til 0; fik 1.234" in page.text
        answer = client.get(f"/api/runs/{run_id}/zoom?minute=1234&lang=ar").json()
        assert answer["error"] == "minute: must be a minute of the run, 0 to 0; got 1234"
        assert answer["localized"] == "الدقيقة: يجب أن تكون دقيقة من الجولة، من 0 إلى 0؛ القيمة المُدخلة 1,234"


def test_a_game_day_room_refuses_a_players_control_in_the_pages_language(tmp_path: Path) -> None:
    from tests.test_gameday import join, key, new_room, until

    with console(tmp_path / "runs.sqlite3") as client:
        room = new_room(client)
        path = f"/gameday/{room['id']}/ws"
        with (
            client.websocket_connect(path + "?lang=hy") as ann,
            client.websocket_connect(path) as bob,
            client.websocket_connect(path + "?lang=da") as olu,
        ):
            join(ann, key(room["player_url"]), "Ann", "operations")
            join(bob, key(room["player_url"]), "Bob", "commander")
            join(olu, key(room["player_url"]), "Olu", "observer")
            olu.send_json({"type": "action", "control": "rollback"})  # an observer cannot act
            refused = until(olu, lambda m: m["type"] == "error")
            assert refused["message"] == (
                "role: the observer cannot do this; allowed: incident commander, operations, communications"
            )
            assert refused["localized"] == (
                "Rolle: rollen observatør kan ikke gøre dette; tilladt: incidentleder, drift og kommunikation"
            )
            for ws in (ann, bob):
                ws.send_json({"type": "action", "control": "target_utilization", "value": 0.95})
            armenian, english = (until(ws, lambda m: m["type"] == "error") for ws in (ann, bob))
        message = "target_utilization: 0.95 is out of range; allowed a number from 0.3 to 0.9"
        assert english == {"type": "error", "field": "target_utilization", "message": message}
        label = translations("hy").gettext(CONTROL_SPECS["target_utilization"].label)
        assert armenian["message"] == message
        assert armenian["localized"] == f"{label}: պետք է լինի թիվ 0,3-ից մինչև 0,9․ ստացվել է՝ 0,95"


def test_the_new_run_form_refuses_a_parameter_in_the_pages_language(tmp_path: Path) -> None:
    with console(tmp_path / "runs.sqlite3") as client:
        form = {"scenario": "bad-deploy", "seed": "7", "speed": "4", "param.max_fleet": "2.5"}
        page = client.post("/runs?lang=da", data=form)
        assert page.status_code == 422
        assert "max_fleet: skal være et helt tal fra 1 til 1.000 instanser; fik 2,5" in page.text
        english = client.post("/runs?lang=en", data=form)
        assert "max_fleet: must be a whole number in" in english.text and "got 2.5" in english.text
