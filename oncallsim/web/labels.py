"""How the pages name the model's things: a control's label and a value with its unit, never an internal name
such as ``shed_share`` (people read "Load shedding: 30 %"). Templates translate the label and on/off."""

from __future__ import annotations

from typing import Any

from oncallsim.model import CONTROL_SPECS

__all__ = ["RESILIENCE_SECTIONS", "control_label", "control_value_text", "main_control", "resilience_controls"]

# The console's "Resilience" group: every control whose model-page section is one of these (the request engine's
# overload controls, and the client retries beside them), found in the registry, never listed by name.
RESILIENCE_SECTIONS = ("overload", "retries")


def control_label(control: str) -> str:
    """The registry's English label (a msgid), or the name itself for a control this model does not know."""
    spec = CONTROL_SPECS.get(control)
    return spec.label if spec is not None else control


def control_value_text(control: str, value: Any) -> str:
    """A number as the console shows it: a fraction in percent, seconds and instances with their unit."""
    spec = CONTROL_SPECS.get(control)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if spec is not None and spec.kind == "fraction":
        return f"{100 * float(value):g} %"
    unit = f" {spec.unit}" if spec is not None and spec.unit else ""
    return f"{float(value):g}{unit}"


def main_control(sim: Any) -> str:
    """The control the key M goes to in the console: the scenario's first key control that the run's engine has
    and the page shows as a control of its own (a setting or a button; the fleet view's instance actions are
    reached there), or "" when there is none."""
    for name in sim.scenario.key_controls:
        spec = CONTROL_SPECS.get(name)
        if spec is not None and spec.kind != "instance" and sim.engine.name in spec.engines:
            return str(name)
    return ""


def resilience_controls(engine: str) -> list[str]:
    """The settings of the Resilience group that ``engine`` has, in the registry's order."""
    return [
        name
        for name, spec in CONTROL_SPECS.items()
        if spec.section in RESILIENCE_SECTIONS and spec.is_setting and engine in spec.engines
    ]
