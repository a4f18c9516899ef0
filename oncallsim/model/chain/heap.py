"""The chain loop's pending events: one heap ordered by (time, order pushed), beside a FIFO list per edge of
the graph (world.py: an edge's network events fall due in the order pushed, so only each list's head sits in a
second heap, of the lists' heads; an event that would come before its list's tail, after a delay changed, goes on
the heap itself). Its own module because every other step pushes events and none needs to know how they are
ordered: only ``chain_minute`` takes them off, the earlier of the two heaps' tops.

The steps every request takes many times are ``inline_step``s (kernel.py): inlined into their callers by LLVM.
"""

from __future__ import annotations

from typing import Any

from oncallsim.model.chain.world import (
    E_AUX,
    E_GEN,
    E_KIND,
    E_LIST,
    E_NEXT,
    E_OBJ,
    E_SEQ,
    I_EFREE,
    I_HEAP,
    I_QHEAP,
    I_SEQ,
    KEY_NODE_BITS,
)
from oncallsim.model.kernel import inline_step

__all__ = ["heap_down", "heap_up", "new_event", "node_key", "push", "push_net", "take_event"]


@inline_step
def heap_up(ht: Any, hk: Any, i: int, time: float, key: int) -> None:
    """Put the entry (time, key) in the hole at ``i`` of the heap ``ht``, ``hk``, moving it up past the later
    entries above."""
    while i > 0:
        parent = (i - 1) >> 1
        pt = ht[parent]
        if pt < time or (pt == time and hk[parent] < key):
            break
        ht[i] = pt
        hk[i] = hk[parent]
        i = parent
    ht[i] = time
    hk[i] = key


@inline_step
def heap_down(ht: Any, hk: Any, n: int, time: float, key: int) -> None:
    """Put the entry (time, key) at the top of the heap's ``n`` entries, moving it down past the earlier ones."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n:
            t1 = ht[c]
            t2 = ht[c + 1]
            if t2 == t1:  # rare: by the order pushed
                c += int(hk[c + 1] < hk[c])
            else:  # without a branch: which child is earlier is a coin toss, and a mispredicted branch costly
                c += int(t2 < t1)
        ct = ht[c]
        ck = hk[c]
        if time < ct or (time == ct and key < ck):
            break
        ht[i] = ct
        hk[i] = ck
        i = c
    ht[i] = time
    hk[i] = key


@inline_step
def new_event(w: Any, time: float, kind: int, obj: int, gen: int, aux: int) -> int:
    """An event node, numbered in the order pushed."""
    seq = w.ints[I_SEQ]
    w.ints[I_SEQ] = seq + 1
    n = w.ints[I_EFREE] - 1
    w.ints[I_EFREE] = n
    node = w.ev_free[n]
    ev = w.ev_i
    ev[node, E_KIND] = kind
    ev[node, E_OBJ] = obj
    ev[node, E_GEN] = gen
    ev[node, E_AUX] = aux
    ev[node, E_SEQ] = seq
    ev[node, E_NEXT] = -1
    w.ev_t[node] = time
    return node


@inline_step
def node_key(w: Any, node: int) -> int:
    return (w.ev_i[node, E_SEQ] << KEY_NODE_BITS) | node


@inline_step
def push(w: Any, time: float, kind: int, obj: int, gen: int, aux: int) -> None:
    """An event on the heap by itself."""
    node = new_event(w, time, kind, obj, gen, aux)
    w.ev_i[node, E_LIST] = -1
    i = w.ints[I_HEAP]
    w.ints[I_HEAP] = i + 1
    heap_up(w.h_time, w.h_key, i, time, node_key(w, node))


@inline_step
def push_net(w: Any, e: int, time: float, kind: int, obj: int, gen: int) -> None:
    """An event a network delay of edge ``e`` away: at the end of the edge's list (the list into the heap of
    heads if it was empty), or on the heap by itself if it falls due before the list's last (the delay
    changed)."""
    node = new_event(w, time, kind, obj, gen, 0)
    tail = w.fifo[e, 1]
    if tail < 0:
        w.ev_i[node, E_LIST] = e
        w.fifo[e, 0] = node
        w.fifo[e, 1] = node
        i = w.ints[I_QHEAP]
        w.ints[I_QHEAP] = i + 1
        heap_up(w.q_time, w.q_key, i, time, node_key(w, node))
    elif time >= w.ev_t[tail]:  # pushed after it: (time, order pushed) stays in order along the list
        w.ev_i[node, E_LIST] = e
        w.ev_i[tail, E_NEXT] = node
        w.fifo[e, 1] = node
    else:
        w.ev_i[node, E_LIST] = -1
        i = w.ints[I_HEAP]
        w.ints[I_HEAP] = i + 1
        heap_up(w.h_time, w.h_key, i, time, node_key(w, node))


@inline_step
def take_event(w: Any, node: int) -> None:
    """Take the earliest event (node ``node``, its fields read first) off the heap, or off the heap of heads:
    its list's next takes its place there, or the heap's last entry does; the node is given back."""
    e = w.ev_i[node, E_LIST]
    if e < 0:
        n = w.ints[I_HEAP] - 1
        w.ints[I_HEAP] = n
        if n > 0:
            heap_down(w.h_time, w.h_key, n, w.h_time[n], w.h_key[n])
    else:
        after = w.ev_i[node, E_NEXT]
        w.fifo[e, 0] = after
        n = w.ints[I_QHEAP]
        if after >= 0:
            heap_down(w.q_time, w.q_key, n, w.ev_t[after], node_key(w, after))
        else:
            w.fifo[e, 1] = -1
            n -= 1
            w.ints[I_QHEAP] = n
            if n > 0:
                heap_down(w.q_time, w.q_key, n, w.q_time[n], w.q_key[n])
    w.ev_free[w.ints[I_EFREE]] = node
    w.ints[I_EFREE] += 1
