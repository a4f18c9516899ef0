"""The database behind the cache: demand, utilization and query time (MODEL.md §3.4)."""

from __future__ import annotations

from oncallsim.model.params import Params

__all__ = ["db_demand", "db_headroom_factor", "queries_per_request", "query_time_ms"]


def queries_per_request(recommendations: bool, params: Params) -> float:
    return params.queries_per_request + (params.feature_queries_per_request if recommendations else 0.0)


def db_demand(admitted_per_s: float, q: float, hit: float, warmup_active: bool, params: Params) -> float:
    """Queries/s reaching the database: λₐ·q·(1 − hit), plus the warm-up job's load while it runs."""
    demand = admitted_per_s * q * (1.0 - hit)
    return demand + params.warmup_db_qps if warmup_active else demand


def query_time_ms(rho: float, params: Params) -> float:
    """5 ms/(1 − ρ), capped; the cap also when ρ ≥ 1 (the queue has no steady state)."""
    if rho >= 1.0:
        return params.db_max_query_ms
    return min(params.db_max_query_ms, params.db_base_query_ms / (1.0 - rho))


def db_headroom_factor(demand: float, params: Params) -> float:
    """f_db = min(1, capacity/demand): the share of demand the database can actually serve."""
    return 1.0 if demand <= params.db_capacity_qps else params.db_capacity_qps / demand
