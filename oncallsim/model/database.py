"""The database behind the cache: demand, utilization and query time (MODEL.md §3.4)."""

from __future__ import annotations

from typing import Any

from oncallsim.model.kernel import P, compiled, step

__all__ = ["db_demand", "db_headroom_factor", "queries_per_request", "query_time_ms"]


@compiled
def queries_per_request(recommendations: bool, p: Any) -> float:
    return p[P.queries_per_request] + (p[P.feature_queries_per_request] if recommendations else 0.0)


@step
def db_demand(admitted_per_s: float, q: float, hit: float, warmup_active: bool, p: Any) -> float:
    """Queries/s reaching the database: λₐ·q·(1 − hit), plus the warm-up job's load while it runs."""
    demand = admitted_per_s * q * (1.0 - hit)
    return demand + p[P.warmup_db_qps] if warmup_active else demand


@compiled
def query_time_ms(rho: float, p: Any) -> float:
    """5 ms/(1 − ρ), capped; the cap also when ρ ≥ 1 (the queue has no steady state)."""
    if rho >= 1.0:
        return float(p[P.db_max_query_ms])
    return min(p[P.db_max_query_ms], p[P.db_base_query_ms] / (1.0 - rho))


@step
def db_headroom_factor(demand: float, p: Any) -> float:
    """f_db = min(1, capacity/demand): the share of demand the database can actually serve."""
    return 1.0 if demand <= p[P.db_capacity_qps] else p[P.db_capacity_qps] / demand
