"""Texts that name parameters instead of repeating their values: ``⟪name⟫`` is filled with the value in force.

A formula, a note or a control's help that wrote "14.4×" or "6 minutes" would be wrong for a run whose
``--set`` changed the constant; ``⟪page_burn_threshold⟫`` cannot be. ``⟪name%⟫`` shows a fraction as a
percentage. The template is the translation catalog's message id: translate first, then fill.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["PLACEHOLDER", "fill"]

PLACEHOLDER = re.compile(r"⟪([a-z_0-9]+)(%?)⟫")


def _number(value: float, latex: bool) -> str:
    text = f"{value:,g}" if abs(value) >= 10_000 else f"{value:g}"
    return text.replace(",", r"\," if latex else "\u202f")


def fill(template: str, params: Any, latex: bool = False) -> str:
    """A template with each ``⟪name⟫`` replaced by that parameter's value in ``params``."""

    def one(match: re.Match[str]) -> str:
        value = float(getattr(params, match.group(1)))
        if match.group(2):
            return _number(value * 100.0, latex) + (r"\,\%" if latex else "\u202f%")
        return _number(value, latex)

    return PLACEHOLDER.sub(one, template)
