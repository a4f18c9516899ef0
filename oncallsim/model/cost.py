"""What the fleet costs (MODEL.md §3.11): serving and booting instances, billed double while a rollback is prepared."""

from __future__ import annotations

from oncallsim.model.params import Params

__all__ = ["cost_per_hour"]


def cost_per_hour(instances: int, rolling_back: bool, params: Params) -> float:
    return params.instance_price_per_hour * instances * (params.rollback_cost_factor if rolling_back else 1.0)
