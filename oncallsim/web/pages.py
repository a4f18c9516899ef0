"""The HTML pages: home, the live console, the debrief, the model reference, the list of runs.

Every user-facing string goes through the translation layer (``_`` in templates, ``t()`` in scripts)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from datetime import UTC, date, datetime
from functools import cache, partial
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from latex2mathml.converter import convert as latex_to_mathml

from oncallsim.debrief.html import (
    CAUSE_LABELS,
    COMPARISONS,
    fmt,
    fmt_objective,
    fmt_part,
    localize_args,
    localize_figure,
    render_html,
    sentence,
    value_text,
)
from oncallsim.debrief.markdown import render_markdown
from oncallsim.debrief.report import COUNTERFACTUAL_LABELS, REQUEST_COMPARISONS
from oncallsim.debrief.whatif import rollback_matters, what_if
from oncallsim.i18n import (
    DEFAULT_LANGUAGE,
    LANGUAGE_NAMES,
    direction,
    format_datetime,
    format_money,
    format_number,
    format_percent,
    languages,
    number_patterns,
    number_symbols,
    page_catalog,
    translations,
)
from oncallsim.model import CONTROL_SPECS, DEFAULT_PARAMS, InvalidInput, param_info
from oncallsim.model.chain.controls import graph_view
from oncallsim.model.chain.engine import CHAIN_CONTROLS
from oncallsim.model.engine import DEFAULT_ENGINE, ENGINES, get_engine
from oncallsim.model.errors import whole_number
from oncallsim.model.formulas import FORMULAS, SOURCES
from oncallsim.policies import counterfactuals
from oncallsim.refusals import localize
from oncallsim.scenarios import builtin_scenarios, graph_scenarios, registered_scenarios
from oncallsim.scenarios.registry import MAX_SCENARIO_BYTES, scenario_from_text
from oncallsim.scenarios.texts import scenario_text
from oncallsim.simulation import MAX_SEED
from oncallsim.web.api import NewRun, get_live, import_file, manager_of, random_seed, start_run
from oncallsim.web.labels import control_label, main_control, resilience_controls
from oncallsim.web.language import LANG_COOKIE as LANG_COOKIE
from oncallsim.web.language import language_of as language_of
from oncallsim.web.limits import client_of
from oncallsim.web.live import SPEEDS, LiveRun
from oncallsim.web.pacing import (
    DEFAULT_DIFFICULTY,
    DIFFICULTIES,
    MAX_SPEED,
    REALTIME,
    check_difficulty,
    check_speed_for,
    minute_seconds,
)
from oncallsim.web.tutorial import TUTORIAL_ID, TUTORIAL_SEED, is_tutorial, tutorial_scenario
from oncallsim.web.workers import job_call

__all__ = ["REFUSALS", "router"]

router = APIRouter(include_in_schema=False)


LANG_COOKIE_MAX_AGE_S = 365 * 24 * 3600


def with_lang(url: str, language: str) -> str:
    """An internal link that keeps the page's language (a share link opens in the language it was shared in)."""
    if language == DEFAULT_LANGUAGE:
        return url
    return url + ("&" if "?" in url else "?") + urlencode({"lang": language})


@cache
def environment(language: str) -> Environment:
    env = Environment(
        loader=PackageLoader("oncallsim.web", "templates"),
        autoescape=select_autoescape(),
        extensions=["jinja2.ext.i18n"],
    )
    env.install_gettext_translations(translations(language), newstyle=False)  # type: ignore[attr-defined]
    env.globals.update(fmt=partial(fmt, language=language), fmt_objective=partial(fmt_objective, language=language))
    env.globals["fmt_part"] = partial(fmt_part, language=language)
    env.globals.update(comparisons=COMPARISONS, causes=CAUSE_LABELS, counterfactual_labels=COUNTERFACTUAL_LABELS)
    env.globals.update(request_comparisons=REQUEST_COMPARISONS)
    env.globals.update(control_label=control_label, control_value_text=partial(value_text, language=language))
    env.globals.update(resilience_controls=resilience_controls, main_control=main_control)
    env.globals["rollback_matters"] = rollback_matters
    env.globals.update(
        difficulties=DIFFICULTIES, max_speed=MAX_SPEED, engines=list(ENGINES), default_engine=DEFAULT_ENGINE
    )
    env.globals["translate"] = translations(language).gettext  # for Python code called from a template
    env.globals["realtime"] = REALTIME  # the speed named "real time" (a minute a minute)
    env.globals["minute_ms"] = lambda speed: round(minute_seconds(speed) * 1000)
    env.globals["sc_text"] = lambda scenario, field: scenario_text(scenario, field, language)
    env.globals["link"] = lambda url: with_lang(url, language)
    env.globals["localize_args"] = lambda args: localize_args(args, language)
    env.globals["sentence"] = lambda template, args=None: sentence(template, args, language)
    # numbers as the language writes them (Babel): {{ x | number(1) }}, {{ share | percent(2) }}, {{ usd | money }}
    env.filters["number"] = lambda value, digits=0: format_number(value, language, digits)
    env.filters["percent"] = lambda value, digits=0: format_percent(value, language, digits)
    env.filters["money"] = lambda value: format_money(value, language)
    env.filters["when"] = lambda value: format_datetime(value, language)
    env.filters["short"] = lambda value: format_number(value, language, -3)  # up to 3 decimals, as many as needed
    return env


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    language = language_of(request)
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "lang"]
    pickable = [(code, LANGUAGE_NAMES.get(code, code)) for code in languages()]
    html = (
        environment(language)
        .get_template(template)
        .render(
            language=language,
            direction=direction(language),
            language_name=LANGUAGE_NAMES.get(language, language),
            number_symbols=number_symbols(language),
            number_patterns=number_patterns(language),
            languages=[
                (code, name, request.url.path + "?" + urlencode([*query, ("lang", code)])) for code, name in pickable
            ],
            catalog_json=json.dumps(page_catalog(language), ensure_ascii=False),
            path=request.url.path,
            **context,
        )
    )
    return remember_language(request, HTMLResponse(html, status_code=status))


def remember_language(request: Request, response: HTMLResponse) -> HTMLResponse:
    """A language chosen by ?lang= is remembered (a cookie): the next page (a redirect, a form's answer) comes in
    the same language."""
    chosen = request.query_params.get("lang")
    if chosen and chosen.lower() in languages() and request.cookies.get(LANG_COOKIE) != chosen.lower():
        response.set_cookie(LANG_COOKIE, chosen.lower(), max_age=LANG_COOKIE_MAX_AGE_S, samesite="lax", path="/")
    return response


# The sentences the pages refuse bad input with (a field's name stays as the form and the API spell it).
REFUSALS = {
    "unknown": "unknown scenario %(name)s; known: %(known)s",
    "share_seed": "a share link needs a seed, a whole number from 0 to %(max)s; got %(got)s",
    "params": "at most 64 parameters of at most 64 characters",
    "whole": "must be a whole number from 0 to %(max)s, got %(got)s",
    "one_of": "must be one of %(allowed)s, got %(got)s",
    "no_run": "no run %(run)s",
    "whole_index": "index and minutes must be whole numbers",
    "busy": "busy (%(waiting)s imports and debriefs waiting for a worker); try again in a minute",
}


def refusal(request: Request, field: str, kind: str, **args: Any) -> InvalidInput:
    """Bad input named by its field, in the page's language."""
    return InvalidInput(field, translations(language_of(request)).gettext(REFUSALS[kind]) % args)


def error_page(request: Request, exc: InvalidInput, status: int = 422) -> HTMLResponse:
    """The refusal in the page's language (``refusals.localize``: English when it has no structured kind)."""
    return render(request, "error.html", status=status, message=localize(exc, language_of(request)))


@router.get("/", response_class=HTMLResponse)
async def home(
    request: Request,
    scenario: str | None = Query(default=None, max_length=200),
    seed: int | None = Query(default=None, ge=0, le=MAX_SEED),
) -> HTMLResponse:
    return render(
        request,
        "home.html",
        scenarios=[s for s in builtin_scenarios().values() if s.id != TUTORIAL_ID],  # the tutorial has its card
        chains=list(graph_scenarios().values()),  # chains of services: a section of their own
        tutorial=tutorial_scenario(),
        daily=daily_seed(),
        seed=random_seed() if seed is None else seed,
        chosen=scenario,
        speeds=SPEEDS,
        params=param_info(),
    )


@router.get("/play", response_class=HTMLResponse)
async def play(
    request: Request,
    scenario: str = Query(default="", max_length=200),
    seed: str = Query(default="", max_length=40, description="0 to 4294967295"),
    difficulty: str = Query(default="", max_length=40, description="guided, normal or hard (preselected)"),
    engine: str = Query(default="", max_length=40, description="an engine's name (preselected)"),
    speed: str = Query(default="", max_length=40, description="1, 2, 4, 8 or 16 (preselected)"),
) -> HTMLResponse:
    """A share link: the same scenario and seed, one click from starting ("Play again" also keeps the run's
    difficulty, engine and speed). A link cut short or edited by hand gets the error page with a sentence a
    person reads, never a parser's message."""
    known = registered_scenarios()
    if scenario not in known:
        return error_page(
            request,
            refusal(request, "scenario", "unknown", name=repr(scenario[:80]), known=", ".join(known)),
            404,
        )
    seed_value = whole_number(seed)
    if seed_value is None or not 0 <= seed_value <= MAX_SEED:
        return error_page(
            request,
            refusal(request, "seed", "share_seed", max=MAX_SEED, got=repr(seed[:40])),
        )
    chosen: dict[str, Any] = {}
    try:
        if difficulty:
            chosen["chosen_difficulty"] = check_difficulty(difficulty)
        if engine:
            chosen["chosen_engine"] = get_engine(engine).name
        if speed:
            speed_value = whole_number(speed)
            if speed_value is None or speed_value not in SPEEDS:
                raise refusal(request, "speed", "one_of", allowed=", ".join(map(str, SPEEDS)), got=repr(speed[:40]))
            check_speed_for(chosen.get("chosen_difficulty", "guided"), speed_value)
            chosen["chosen_speed"] = speed_value
    except InvalidInput as exc:
        return error_page(request, exc)
    return render(request, "play.html", scenario=known[scenario], seed=seed_value, speeds=SPEEDS, **chosen)


@router.post("/runs")
async def start(
    request: Request,
    scenario: str = Form(..., max_length=200),
    seed: str = Form("", max_length=40),
    speed: str = Form("4", max_length=40),
    clock: str = Form("", max_length=40),
    difficulty: str = Form(DEFAULT_DIFFICULTY, max_length=40),
    engine: str = Form("", max_length=40),
    player: str = Form("", max_length=80),
) -> Response:
    """The card's Start: the run opens paused on its briefing and starts when the player says so."""
    form = await request.form()
    overrides = {
        k.removeprefix("param."): v
        for k, v in form.items()
        if k.startswith("param.") and isinstance(v, str) and v.strip()
    }
    if any(isinstance(v, str) and len(v) > 64 for v in overrides.values()) or len(overrides) > 64:
        return error_page(request, refusal(request, "param", "params"))
    seed_value = whole_number(seed) if seed.strip() else None
    if seed.strip() and (seed_value is None or not 0 <= seed_value <= MAX_SEED):
        return error_page(request, refusal(request, "seed", "whole", max=MAX_SEED, got=repr(seed)))
    speed_value = whole_number(speed)
    if speed_value is None:
        return error_page(
            request, refusal(request, "speed", "one_of", allowed=", ".join(map(str, SPEEDS)), got=repr(speed))
        )
    try:
        difficulty_value = check_difficulty(difficulty)
    except InvalidInput as exc:
        return error_page(request, exc)

    def new() -> NewRun:
        return NewRun(
            scenario=scenario,
            paused=True,
            difficulty=difficulty_value,
            engine=engine or None,
            player=player or None,
            seed=seed_value,
            speed=speed_value,
            clock=clock or None,
            overrides={k: str(v) for k, v in overrides.items()},
        )

    return await open_paused(request, new, "run")


async def open_paused(request: Request, new: Callable[[], NewRun], field: str) -> Response:
    """A run from a form, opened paused on its briefing: its page, or the refusal's (a check of ``new`` that is not
    one of ours named after ``field``)."""
    try:
        live = await start_run(manager_of(request), new(), client_of(request))
    except (InvalidInput, ValueError) as exc:
        if not isinstance(exc, InvalidInput):
            exc = InvalidInput(field, str(exc).splitlines()[0])
        return error_page(request, exc)
    return RedirectResponse(f"/runs/{live.id}", status_code=303)


RUN_FILTERS = ("all", "live", "finished", "imported", "abandoned")


def daily_seed(day: date | None = None) -> int:
    """Today's seed (UTC): the same for everyone on every server, a new one each day."""
    day = day or datetime.now(UTC).date()
    return int.from_bytes(hashlib.sha256(f"oncallsim-daily-{day.isoformat()}".encode()).digest()[:4], "big")


@router.get("/leaderboard", response_class=HTMLResponse)
async def leaderboard(
    request: Request, scenario: str = Query(default="", max_length=200), seed: str = Query(default="", max_length=40)
) -> HTMLResponse:
    """The finished runs of one scenario and seed, best score first (local to this server)."""
    known = registered_scenarios()
    if scenario not in known:
        return error_page(
            request, refusal(request, "scenario", "unknown", name=repr(scenario[:80]), known=", ".join(known))
        )
    seed_value = whole_number(seed)
    if seed_value is None or not 0 <= seed_value <= MAX_SEED:
        return error_page(request, refusal(request, "seed", "whole", max=MAX_SEED, got=repr(seed[:40])))
    store = manager_of(request).store
    rows = await store.read(store.leaderboard, scenario, seed_value)
    return render(request, "leaderboard.html", rows=rows, scenario=known[scenario], seed=seed_value, daily=daily_seed())


@router.post("/tutorial")
async def start_tutorial(request: Request) -> Response:
    """The tutorial's card: a guided run of the built-in tutorial scenario, opening on its tour."""
    new = NewRun(scenario=TUTORIAL_ID, seed=TUTORIAL_SEED, speed=2, paused=True, difficulty="guided")
    live = await start_run(manager_of(request), new, client_of(request))
    return RedirectResponse(f"/runs/{live.id}", status_code=303)


@router.get("/runs", response_class=HTMLResponse)
async def runs(request: Request, show: str = Query(default="all", max_length=20)) -> HTMLResponse:
    """Past runs, filtered: in progress (live), finished (played here), imported, abandoned, or all."""
    if show not in RUN_FILTERS:
        return error_page(request, refusal(request, "show", "one_of", allowed=", ".join(RUN_FILTERS), got=repr(show)))
    language = language_of(request)
    shown = {**registered_scenarios(), TUTORIAL_ID: tutorial_scenario()}
    titles = {sid: scenario_text(s, "title", language) for sid, s in shown.items()}
    store = manager_of(request).store
    rows = await store.read(store.recent)
    if show == "imported":
        rows = [r for r in rows if r.imported]
    elif show == "finished":
        rows = [r for r in rows if r.status == "finished" and not r.imported]
    elif show != "all":
        rows = [r for r in rows if r.status == show]
    return render(request, "runs.html", runs=rows, titles=titles, show=show, filters=RUN_FILTERS)


@router.post("/runs/{run_id}/delete")
async def delete_run(request: Request, run_id: str) -> Response:
    if not await manager_of(request).delete(run_id[:40]):
        return error_page(request, refusal(request, "run", "no_run", run=repr(run_id[:40])), 404)
    return RedirectResponse("/runs", status_code=303)


async def live_or_404(request: Request, run_id: str) -> LiveRun | HTMLResponse:
    try:
        return await get_live(request, run_id)
    except InvalidInput as exc:
        return error_page(request, exc, 404)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def console(request: Request, run_id: str) -> HTMLResponse:
    live = await live_or_404(request, run_id)
    if isinstance(live, HTMLResponse):
        return live
    tutorial = is_tutorial(live.sim.scenario)
    layout = live.sim.plan.graph
    return render(
        request,
        "console.html",
        live=live,
        sim=live.sim,
        controls=CONTROL_SPECS,
        speeds=SPEEDS,
        tutorial=tutorial,
        # a chain of services: the diagram and the services' panel are drawn from its graph (services.js)
        graph=None if layout is None else graph_view(layout),
        shown_controls=CONTROL_SPECS if layout is None else {name: CONTROL_SPECS[name] for name in CHAIN_CONTROLS},
    )


@router.get("/runs/{run_id}/debrief", response_class=HTMLResponse)
async def debrief_page(request: Request, run_id: str) -> HTMLResponse:
    live = await live_or_404(request, run_id)
    if isinstance(live, HTMLResponse):
        return live
    if not await live.debrief_ready():
        return render(request, "not_over.html", live=live, status=409)
    return render(
        request,
        "debrief.html",
        live=live,
        r=live.report,
        clock=live.sim.plan.clock,
        # a scenario file of one's own has no /play link: it is played again from its file (the home page)
        registered=registered_scenarios().get(live.sim.scenario.id) == live.sim.scenario,
        # computed once (with the counterfactuals), off the event loop; its words and numbers in the page's language
        figure_json=localized_figure(await live.figure(), language_of(request)),
    )


def localized_figure(figure_json: str, language: str) -> str:
    """The stored debrief figure in the page's language (English: as stored), safe inside a script element."""
    if language == DEFAULT_LANGUAGE:
        return figure_json
    return json.dumps(localize_figure(json.loads(figure_json), language), ensure_ascii=False).replace("</", "<\\/")


async def finished_or_error(request: Request, run_id: str) -> LiveRun | HTMLResponse:
    live = await live_or_404(request, run_id)
    if isinstance(live, HTMLResponse):
        return live
    if not await live.debrief_ready() or live.report is None:
        return render(request, "not_over.html", live=live, status=409)
    return live


@router.get("/runs/{run_id}/whatif", response_class=HTMLResponse)
async def whatif_page(
    request: Request,
    run_id: str,
    kind: str = Query(default="", max_length=40),
    index: str = Query(default="0", max_length=10),
    minutes: str = Query(default="5", max_length=10),
) -> HTMLResponse:
    """A one-click what-if on the run's own draws, beside what the player did."""
    live = await finished_or_error(request, run_id)
    if isinstance(live, HTMLResponse):
        return live
    index_value, minutes_value = whole_number(index), whole_number(minutes)
    if index_value is None or minutes_value is None or index_value < 0 or minutes_value < 0:
        return error_page(request, refusal(request, "index", "whole_index"))
    try:
        args = (live.sim, kind, index_value, minutes_value)
        workers = manager_of(request).workers  # a replay: in a worker process when the server has them
        if workers is not None:
            result = await workers.call(job_call, what_if, *args, bounded=True)
        else:
            result = await asyncio.to_thread(what_if, *args)
    except InvalidInput as exc:
        return error_page(request, exc)
    return render(request, "whatif.html", live=live, r=live.report, w=result)


@router.get("/runs/{run_id}/report.md")
async def report_markdown(request: Request, run_id: str) -> Response:
    """The debrief as a Markdown postmortem, downloaded."""
    live = await finished_or_error(request, run_id)
    if isinstance(live, HTMLResponse):
        return live
    assert live.report is not None
    return Response(
        render_markdown(live.report),
        media_type="text/markdown; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="oncallsim-{live.sim.scenario.id}-{live.id}.md"'},
    )


@router.get("/runs/{run_id}/report.html")
async def report_html(request: Request, run_id: str) -> Response:
    """The self-contained offline report (as `oncallsim debrief --html` writes it), downloaded: it inlines
    plotly.js, so it is served as an attachment, never shown under the console's policy."""
    live = await finished_or_error(request, run_id)
    if isinstance(live, HTMLResponse):
        return live
    report, sim = live.report, live.sim
    assert report is not None
    language = language_of(request)

    def build() -> str:
        others = counterfactuals(sim)
        timelines = {name: o.timeline for name, o in others.items()}
        title = scenario_text(sim.scenario, "title", language)
        return render_html(report, sim.timeline, sim.plan, sim.params, sim.actions, timelines, language, title)

    return Response(
        await asyncio.to_thread(build),
        media_type="text/html; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="oncallsim-{sim.scenario.id}-{live.id}.html"'},
    )


@router.post("/runs/scenario-file")
async def start_scenario_file(
    request: Request,
    file: UploadFile,
    speed: str = Form("2", max_length=40),
    difficulty: str = Form(DEFAULT_DIFFICULTY, max_length=40),
    engine: str = Form("", max_length=40),
    player: str = Form("", max_length=80),
) -> Response:
    """A scenario file of one's own (its content only, never a path; 64 KB at most), played as a card's scenario:
    checked as the API checks ``scenario_toml``, opened paused on its briefing."""
    data = await file.read(MAX_SCENARIO_BYTES + 1)

    def new() -> NewRun:
        if len(data) > MAX_SCENARIO_BYTES:
            raise InvalidInput("file", f"a scenario file is at most {MAX_SCENARIO_BYTES // 1024} KB")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("file", "must be a scenario file in TOML (UTF-8 text)") from None
        speed_value = whole_number(speed)
        if speed_value is None:  # refused as the card's Start refuses it
            raise refusal(request, "speed", "one_of", allowed=", ".join(map(str, SPEEDS)), got=repr(speed[:40]))
        scenario = scenario_from_text(text, (file.filename or "scenario file")[:100])
        return NewRun(
            scenario=scenario.id,
            scenario_toml=text,
            paused=True,
            difficulty=check_difficulty(difficulty),
            engine=engine or None,
            player=player or None,
            speed=speed_value,
        )

    return await open_paused(request, new, "file")


@router.post("/runs/import")
async def import_run(request: Request, file: UploadFile) -> Response:
    try:
        run_id = await import_file(manager_of(request), file)
    except InvalidInput as exc:
        return error_page(request, exc)
    return RedirectResponse(f"/runs/{run_id}/debrief", status_code=303)


@router.get("/model", response_class=HTMLResponse)
async def model_reference(request: Request) -> HTMLResponse:
    # The model's defaults, filled into each formula (a run's --set values show on its own pages).
    language = language_of(request)
    formulas = []
    for f in FORMULAS:
        latex, note = f.render(DEFAULT_PARAMS, translations(language).gettext)
        formulas.append((f, latex_to_mathml(latex, display="block"), note))
    return render(
        request,
        "model.html",
        formulas=formulas,
        sources=SOURCES,
        params=param_info(),
        mechanisms=mechanism_sections(),
        controls=CONTROL_SPECS,
        defaults=DEFAULT_PARAMS,
    )


def mechanism_sections() -> list[tuple[str, list[str]]]:
    """The model page's sections on the request engine's mechanisms (the anchors the controls link to), each
    with the controls that set it, in the registry's order."""
    sections: dict[str, list[str]] = {}
    for name, spec in CONTROL_SPECS.items():
        if spec.section:
            sections.setdefault(spec.section, []).append(name)
    return list(sections.items())
