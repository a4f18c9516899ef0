"""How Python drives one minute of a chain: room made before the compiled loop needs it, the loop called again
until the minute is done, the minute's measures zeroed first and read after by name.

    >>> from oncallsim.model.chain.layout import ChainLayout, ServiceLayout, CallLayout, DIST_CONSTANT
    >>> db = ServiceLayout("db", 1, 4, 0.01, DIST_CONSTANT, 0.0, False, None, 0, 1.0, None)
    >>> api = ServiceLayout("api", 2, 8, 0.005, DIST_CONSTANT, 0.0, False, None, 0, 1.0, None,
    ...                     (CallLayout(1, 1, None, 0.001, False),))
    >>> world = new_chain(ChainLayout((api, db), 0, 1.0), seed=1)
    >>> world = chain_minute_of(world, 0, 600)
    >>> int(world.m_client[MC_OK]), round(float(world.m_svc[1, M_BUSY_S]), 3)
    (600, 6.0)
"""

from __future__ import annotations

from oncallsim.model.chain.loop import DONE, chain_minute, draw_arrivals
from oncallsim.model.chain.world import (
    M_BUSY_S,
    MC_OK,
    ChainWorld,
    margins,
    new_chain,
    with_room,
)

__all__ = ["chain_minute_of", "new_chain"]

assert MC_OK >= 0 and M_BUSY_S >= 0  # named for the doctest above


def chain_minute_of(world: ChainWorld, minute: int, arrivals: int) -> ChainWorld:
    """Minute ``minute`` (seconds 60·minute to 60·minute + 60) with ``arrivals`` entry requests, uniform in it.
    Returns the world to use from now on (its arrays may have grown); its ``m_*`` and histograms hold the minute's
    measures until the next minute starts."""
    world = with_room(world, arrivals)
    world.m_svc[:] = 0.0
    world.m_hist[:] = 0
    world.m_client[:] = 0
    world.c_hist[:] = 0
    world.c_otel[:] = 0
    t0 = 60.0 * minute
    draw_arrivals(world, arrivals, t0)
    while True:
        need_a, need_c, need_h = margins(world)
        if chain_minute(world, t0, t0 + 60.0, need_a, need_c, need_h) == DONE:
            return world
        world = with_room(world, arrivals)
