"""The debrief as one self-contained HTML file: works offline (plotly.js inlined, nothing fetched)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import plotly.io as pio
from babel.lists import format_list
from jinja2 import Environment, PackageLoader, select_autoescape
from plotly.offline import get_plotlyjs

from oncallsim.debrief.charts import DECISIONS, debrief_figure
from oncallsim.debrief.report import COUNTERFACTUAL_LABELS, REQUEST_COMPARISONS, Report
from oncallsim.debrief.scorecard import ObjectiveResult
from oncallsim.i18n import (
    DEFAULT_LANGUAGE,
    direction,
    format_money,
    format_number,
    format_percent,
    number_symbols,
    page_catalog,
    translations,
)
from oncallsim.model import CONTROL_SPECS, MODEL_VERSION, MinuteRecord, Params, RunPlan
from oncallsim.model.events import instance_id
from oncallsim.simulation import Action

__all__ = [
    "CAUSE_LABELS",
    "COMPARISONS",
    "REQUEST_COMPARISONS",
    "UNIT_MESSAGES",
    "control_label",
    "fmt",
    "fmt_objective",
    "fmt_part",
    "localize_figure",
    "render_html",
    "sentence",
    "value_text",
]

COMPARISONS = (
    ("error budget spent", "budget_spent", "pct"),
    ("error budget left", "budget_left", "pct"),
    ("cost", "cost", "usd"),
    ("worst p99", "worst_p99_ms", "ms"),
    ("minutes over the latency target", "minutes_over_latency_target", "int"),
    ("requests shed", "shed_requests", "int"),
    ("first action after the incident", "time_to_first_mitigation_min", "min"),
    ("recovery after the incident", "time_to_recovery_min", "min"),
)
TIMES = "%(n)s×"


CAUSE_LABELS = {
    "overload": "overload",
    "throttled": "throttled by the clients",
    "limited": "rejected by the concurrency limiter",
    "dropped": "dropped by a queue (CoDel, full)",
    "timeout": "timeout",
    "bad_build": "bad build",
    "dead_instance": "dead instance",
}

# Units written beside a number: translatable, the number formatted by the language (Babel).
UNIT_MESSAGES = {"ms": "%(n)s ms", "min": "%(n)s min", "s": "%(n)s s", "never": "never"}
OF_MINUTES = "%(x)s of minutes"


def fmt(value: float | int | None, kind: str, language: str = DEFAULT_LANGUAGE) -> str:
    """A debrief number as the language writes it: pct, pct0, usd, ms, min, s or int."""
    if value is None:
        return "—"
    if kind == "pct":
        return format_percent(value, language, 2)
    if kind == "pct0":
        return format_percent(value, language, 0)
    if kind == "usd":
        return format_money(value, language)
    if kind == "int":
        return format_number(value, language, 0)
    if kind == "times":
        return translations(language).gettext(TIMES) % {"n": format_number(value, language, 2)}
    if kind in UNIT_MESSAGES:
        return translations(language).gettext(UNIT_MESSAGES[kind]) % {"n": format_number(value, language, 0)}
    raise ValueError(f"unknown number kind {kind!r}; known: pct, pct0, usd, int, {', '.join(UNIT_MESSAGES)}")


def control_label(control: str) -> str:
    """The registry's English label of a control (a msgid), or the name for a control this model does not know."""
    spec = CONTROL_SPECS.get(control)
    return spec.label if spec is not None else control


def value_text(control: str, value: Any, language: str = DEFAULT_LANGUAGE) -> str:
    """A control's value as people read it, in the language's way: a fraction in percent, a number with its unit,
    an instance as the fleet view names it ("i-09"), a choice by its (translated) name."""
    spec = CONTROL_SPECS.get(control)
    if spec is not None and spec.kind == "instance" and isinstance(value, int) and not isinstance(value, bool):
        return instance_id(value)
    if isinstance(value, bool):
        return translations(language).gettext("on" if value else "off")
    if not isinstance(value, (int, float)):
        return translations(language).gettext(str(value))
    if spec is not None and spec.kind == "fraction":
        return format_percent(float(value), language, 0 if float(100 * value).is_integer() else 1)
    number = format_number(value, language, 0 if float(value).is_integer() else 2)
    unit = translations(language).gettext(spec.unit) if spec is not None and spec.unit else ""
    return f"{number} {unit}".strip()


# How each objective kind's measured value reads.
OBJECTIVE_FORMATS = {
    "budget_left_at_least": "pct",
    "budget_spent_at_most": "pct",
    "cost_at_most": "usd",
    "db_within_capacity": "min",
    "recover_within": "min",
    "turned_away_at_most": "pct",
}


# How a score part's amount reads (debrief/score.py's units): a share of the budget, of the requests or over the
# opening fleet's cost; seconds of staleness; minutes over the latency target.
PART_FORMATS = {"errors": "pct1", "turned_away": "pct1", "stale": "s", "slow": "min", "money": "pct0"}


def fmt_part(name: str, amount: float, language: str = DEFAULT_LANGUAGE) -> str:
    """A score part's amount (``ScorePart.amount`` or ``full``) in its unit, as the language writes it."""
    kind = PART_FORMATS.get(name, "int")
    if kind.startswith("pct"):
        return format_percent(amount / 100.0, language, int(kind[3:]))
    return fmt(amount, kind, language)


def fmt_objective(o: ObjectiveResult, language: str = DEFAULT_LANGUAGE) -> str:
    gettext = translations(language).gettext
    if o.value is None:
        return gettext(UNIT_MESSAGES["never"])
    if o.kind == "p99_within":
        return gettext(OF_MINUTES) % {"x": format_percent(o.value, language, 1)}
    return fmt(o.value, OBJECTIVE_FORMATS.get(o.kind, "int"), language)


@cache
def figure_texts(language: str) -> list[tuple[re.Pattern[str], str]]:
    """English chart texts → the language's, from the page catalog (the console's charts and event log say the
    same words); a ``{x}`` in a text matches any value, carried into the translation."""
    english, local = page_catalog(DEFAULT_LANGUAGE), page_catalog(language)
    found = []
    for key, text in english.items():
        literal = re.sub(r"\{\w+\}", "", text).strip()
        if key.startswith(("chart.", "series.", "debrief.chart.", "event.")) and local.get(key) and len(literal) > 2:
            pattern = "".join(
                f"(?P<{part[1:-1]}>.+?)" if re.fullmatch(r"\{\w+\}", part) else re.escape(part)
                for part in re.split(r"(\{\w+\})", text)
                if part
            )
            found.append((re.compile(pattern + "$"), local[key]))
    return found


def translate_text(text: str, language: str) -> str:
    """A text the core wrote in English (an event, a chart's series, an action) in ``language``: the page
    catalog's words for it (a number inside carried over, in the language's symbols), else the gettext catalog."""
    if language == DEFAULT_LANGUAGE or not text:
        return text
    gettext = translations(language).gettext
    for prefix in ("▼ ",):
        if text.startswith(prefix):
            return prefix + translate_text(text[len(prefix) :], language)
    # "p99 (hands-off)", "p99 (with CoDel)": the series and the counterfactual, each translated
    for name in ("hands-off", "textbook", "p2c", *COUNTERFACTUAL_LABELS.values()):
        suffix = f" ({name})"
        if text.endswith(suffix):
            return f"{translate_text(text[: -len(suffix)], language)} ({gettext(name)})"
    for pattern, translated in figure_texts(language):
        match = pattern.match(text)
        if match:
            for name, value in match.groupdict().items():
                if re.fullmatch(r"\d+(\.\d+)?", value):  # a number in the text: the language's symbols
                    value = format_number(float(value), language, len(value.partition(".")[2]))
                translated = translated.replace("{" + name + "}", value)
            return translated
    moved = translate_moves(text, language)
    if moved is not None:
        return moved
    label, colon, value = text.partition(": ")  # an action: "Load shedding: 30 %"
    if colon and gettext(label) != label:
        shown = {"on": gettext("on"), "off": gettext("off")}.get(value, value)
        return str(page_catalog(language).get("action.value", "{control}: {value}")).format(
            control=gettext(label), value=shown
        )
    label, equals, value = text.partition(" = ")  # a setting as summary.describe says it: "Fleet floor = 12 instances"
    if equals and gettext(label) != label:
        return f"{gettext(label)} = {translate_value(value, language)}"
    label, _space, instance = text.rpartition(" ")  # an instance's action: "Eject i-09"
    if re.fullmatch(r"i-\d{2,}", instance) and gettext(label) != label:
        return f"{gettext(label)} {instance}"
    return gettext(text)


@cache
def move_patterns() -> list[tuple[re.Pattern[str], str]]:
    """The narrative's past-tense moves ("set the fleet floor to %(value)s") as patterns over the English text."""
    from oncallsim.debrief.postmortem import MOVES

    return [
        (re.compile("^" + re.escape(template).replace(re.escape("%(value)s"), "(?P<value>.+?)") + "$"), template)
        for template in MOVES.values()
    ]


def _service_move_patterns() -> list[tuple[re.Pattern[str], str]]:
    from oncallsim.debrief.postmortem import SERVICE_MOVES

    groups = {"setting": "(?P<setting>.+?)", "service": "(?P<service>[A-Za-z0-9_-]+)", "value": "(?P<value>.+)"}
    out = []
    for template in SERVICE_MOVES.values():
        pattern = re.escape(template)
        for name, group in groups.items():
            pattern = pattern.replace(re.escape(f"%({name})s"), group)
        out.append((re.compile("^" + pattern + "$"), template))
    return out


_SERVICE_MOVES = _service_move_patterns()


def _service_move(part: str) -> tuple[re.Match[str], str] | None:
    for pattern, template in _SERVICE_MOVES:
        match = pattern.match(part)
        if match is not None:
            return match, template
    return None


def translated_service_move(found: tuple[re.Match[str], str], language: str) -> str:
    """A chain's "set the retries of api to 0" in ``language``: the template from the catalog, the setting in the
    page catalog's words (found by its English ones), its value in the language's symbols."""
    match, template = found
    english, local = page_catalog(DEFAULT_LANGUAGE), page_catalog(language)
    setting = match.group("setting")
    key = next((k for k, v in english.items() if k.startswith("service.") and str(v).lower() == setting.lower()), None)
    label = str(local.get(key, setting)) if key else setting
    label = label[:1].lower() + label[1:]  # mid-sentence (the panel's label begins one)
    args = {"setting": label, "service": match.group("service")}
    if "value" in match.groupdict():
        args["value"] = translate_value(match.group("value"), language)
    return translations(language).gettext(template) % args


def translate_value(value: str, language: str) -> str:
    """A value with its unit ("12 instances", "30 %", "300 s") in the language: its number, then its unit."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(.*)", value.strip())
    if match is None:
        return value
    number, unit = match.groups()
    digits = len(number.partition(".")[2])
    if unit == "%":
        return format_percent(float(number) / 100, language, digits)
    said = format_number(float(number), language, digits)
    return f"{said} {translations(language).gettext(unit)}" if unit else said


def translate_moves(text: str, language: str) -> str | None:
    """The narrative's moves ("rolled back and set the fleet floor to 12 instances") in the language, joined the
    language's way (Babel's list patterns); None when a part is not one of the narrative's moves."""
    parts = text.split(", ")
    if " and " in parts[-1]:
        parts[-1:] = parts[-1].rsplit(" and ", 1)
    said = []
    for part in parts:
        service = _service_move(part)
        if service is not None:  # a chain's service's setting: the Services panel's words for it
            said.append(translated_service_move(service, language))
            continue
        for pattern, template in move_patterns():
            match = pattern.match(part)
            if match:
                translated = translations(language).gettext(template)
                value = match.groupdict().get("value")
                said.append(translated % {"value": translate_value(value, language)} if value else translated)
                break
        else:
            return None
    return format_list(said, locale=language)


def sentence(template: str, args: Mapping[str, Any] | None, language: str = DEFAULT_LANGUAGE) -> str:
    """A debrief sentence (a headline, the narrative, an objective, a timeline row) in ``language``: its template
    from the catalog, every argument in the language (numbers and amounts in its symbols and patterns, the moves
    and phrases the core wrote in English translated). Every surface renders the debrief's sentences here."""
    translated = translations(language).gettext(template)
    return translated % localize_args(args, language) if args else translated


def localize_args(args: Mapping[str, Any], language: str) -> dict[str, Any]:
    """A sentence's arguments (an event, an action the core named in English) in ``language``."""
    return {k: localize_value(v, language) if isinstance(v, str) else v for k, v in args.items()}


def localize_value(value: str, language: str) -> str:
    """An argument the core formatted in English: a number ("3.3%", "$3.42", "1,234") rewritten in the
    language's symbols, any other text translated."""
    if language == DEFAULT_LANGUAGE:
        return value
    money = re.fullmatch(r"\$(\d[\d,]*(?:\.\d+)?)", value)
    if money:
        return format_money(float(money.group(1).replace(",", "")), language)
    percent = re.fullmatch(r"(\d[\d,]*(?:\.(\d+))?)\s?%", value)
    if percent:
        return format_percent(float(percent.group(1).replace(",", "")) / 100, language, len(percent.group(2) or ""))
    number = re.fullmatch(r"\d[\d,]*(?:\.(\d+))?", value)
    if number:
        return format_number(float(value.replace(",", "")), language, len(number.group(1) or ""))
    return translate_text(value, language)


def localize_figure(figure: dict[str, Any], language: str) -> dict[str, Any]:
    """The debrief figure (plotly JSON) with its legend names, panel titles and event marks in ``language``, its
    numbers in the language's symbols."""
    if language == DEFAULT_LANGUAGE:
        return figure
    said: dict[str, str] = {}  # the decisions' labels repeat (one per panel, the same move many times)
    for trace in figure.get("data", []):
        if isinstance(trace.get("name"), str):
            trace["name"] = translate_text(trace["name"], language)
        if trace.get("meta") == DECISIONS and isinstance(trace.get("text"), list):
            for i, text in enumerate(trace["text"]):
                if isinstance(text, str) and text:
                    if text not in said:
                        said[text] = translate_text(text, language)
                    trace["text"][i] = said[text]
    layout = figure.setdefault("layout", {})
    for note in layout.get("annotations", []):
        if isinstance(note.get("text"), str):
            note["text"] = translate_text(note["text"], language)
    symbols = number_symbols(language)
    layout["separators"] = symbols["decimal"] + symbols["group"]
    return figure


@cache
def _env(language: str = DEFAULT_LANGUAGE) -> Environment:
    # every template escapes (select_autoescape()'s default list does not match "report.html.j2")
    env = Environment(
        loader=PackageLoader("oncallsim.debrief", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "j2"), default_for_string=True, default=True),
        extensions=["jinja2.ext.i18n"],
    )
    env.install_gettext_translations(translations(language), newstyle=False)  # type: ignore[attr-defined]
    return env


def render_html(
    report: Report,
    timeline: Sequence[MinuteRecord],
    plan: RunPlan,
    params: Params,
    actions: Sequence[Action],
    counterfactuals: Mapping[str, Sequence[MinuteRecord]] | None = None,
    language: str = DEFAULT_LANGUAGE,
    scenario_title: str | None = None,
) -> str:
    """The report in ``language`` (sentences from the catalogs, numbers written the language's way)."""
    from oncallsim import __version__

    deadline_ms = plan.graph.deadline_s * 1000.0 if plan.graph is not None else None
    fig = debrief_figure(timeline, params, actions, report.latency_target_ms, counterfactuals, deadline_ms)
    figure = localize_figure(json.loads(pio.to_json(fig)), language)
    html = pio.to_html(
        figure,
        include_plotlyjs=False,
        full_html=False,
        div_id="debrief-chart",
        validate=False,  # our own figure, checked when it was built (validating it again copies it whole)
        config={"displaylogo": False, "responsive": True},
    )
    # to_html gives "<div>…</div> <script>…</script>": the div goes where the charts belong, the script after plotly.js
    split = html.index("<script")
    return (
        _env(language)
        .get_template("report.html.j2")
        .render(
            r=report,
            language=language,
            direction=direction(language),
            title=scenario_title or report.scenario_title,
            comparisons=COMPARISONS,
            request_comparisons=REQUEST_COMPARISONS,
            causes=CAUSE_LABELS,
            counterfactual_labels=COUNTERFACTUAL_LABELS,
            fmt=lambda value, kind: fmt(value, kind, language),
            fmt_objective=lambda o: fmt_objective(o, language),
            fmt_part=lambda name, amount: fmt_part(name, amount, language),
            control_label=control_label,
            localize_args=lambda args: localize_args(args, language),
            sentence=lambda template, args=None: sentence(template, args, language),
            value_text=lambda control, value: value_text(control, value, language),
            clock=plan.clock,
            chart_div=html[:split],
            chart_script=html[split:],
            plotly_js=get_plotlyjs(),
            version=__version__,
            model_version=MODEL_VERSION,
        )
    )
