"""Which of a service's queues an arriving attempt joins (docs/graphs.md, "Balancers"): its one queue (pooled:
every worker behind it, a perfect balancer), or, for a balanced service, one instance's queue among those in
rotation, chosen at random, in turn, or by the fewest attempts outstanding there (ties at random). The queues
themselves (world.py ``queues``) belong to the loop, which fills and empties them; this module owns only the
choice and the turn it keeps (``SI_TURN``).

Outstanding at an instance: given to it and not yet finished there (waiting, at work, or waiting on its own calls
while its worker is held or, for an asynchronous service, released), as an Envoy or nginx balancer counts the
requests it has sent and not yet heard back from.
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.chain.layout import BAL_POOLED, BAL_RANDOM, BAL_ROUND_ROBIN, SV_BALANCER
from oncallsim.model.chain.world import Q_OUT, SI_SERVING, SI_TURN
from oncallsim.model.kernel import step
from oncallsim.model.request.generator import uniform

__all__ = ["choose_queue"]


@step
def choose_queue(w: Any, s: int) -> int:
    """The queue (a row of ``w.queues``) an attempt arriving at service ``s`` joins."""
    first = w.queue_first[s]
    balancer = w.svc[s, SV_BALANCER]
    if balancer == BAL_POOLED:
        return first
    serving = w.svc_i[s, SI_SERVING]
    if serving <= 1:
        return first  # one instance in rotation: no choice to make (nothing drawn)
    if balancer == BAL_RANDOM:
        return first + int(uniform(w.gen) * serving)  # generator.uniform_int's draw, without compiling it too
    if balancer == BAL_ROUND_ROBIN:
        turn = w.svc_i[s, SI_TURN]
        w.svc_i[s, SI_TURN] = turn + 1
        return first + turn % serving
    best = first  # least-outstanding: one of the least, each as likely (a reservoir of one)
    least = w.queues[first, Q_OUT]
    tied = 1
    for q in range(first + 1, first + serving):
        out = w.queues[q, Q_OUT]
        if out < least:
            best = q
            least = out
            tied = 1
        elif out == least:
            tied += 1
            if int(uniform(w.gen) * tied) == 0:
                best = q
    return best
