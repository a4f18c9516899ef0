"""What the fleet costs (MODEL.md §3.11): serving and booting instances, billed double while a rollback is prepared."""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import P, compiled

__all__ = ["cost_per_hour"]


@compiled
def cost_per_hour(instances: int, rolling_back: bool, p: Any) -> float:
    return p[P.instance_price_per_hour] * instances * (p[P.rollback_cost_factor] if rolling_back else 1.0)
