"""The request engine's speed: M/M/N customers per second against SimPy and Ciw, and a busy minute.

1. M/M/N "queue only" (N = 160 servers, S = 50 ms, ρ = 0.85: λ = 2,720/s), the same number of customers on
   each simulator: the engine's compiled loop (``queue_only.simulate_mmn``), SimPy (a process per customer,
   a ``Resource`` of N) and Ciw (one node, N servers). Each also prints its mean wait against Erlang C's
   C/(Nμ − λ), so that the three are seen to simulate the same queue. Target: ≥ 150× SimPy.
2. A busy minute of the full pipeline: free play at 2,500 req/s (no daily swing), 20 instances (utilization
   about 0.6), through ``Simulation.step``. Target: ≤ 30 ms a minute (a live run at 16× then costs under
   half a core). Then the same minute with every overload mechanism on (p2c with 8 clients, CoDel and a queue
   limit, deadlines, the BBR limiter, adaptive throttling, 2 retries with full jitter and a 10 % budget): its cost
   per request. Measured 2026-12-01 on this 2-core machine: 23.6 ms plain, 42.4 ms with all on (283 ns a
   request, 1.8×; it was 67 ms without retries before p2c's and CoDel's common cases were inlined into the
   loop). M/M/N: 5.6 M customers/s, 66× the SimPy model measured live (f43cc6d, before the client-call
   bookkeeping of retries: 5.9 M/s, 70×); the 150× target is REQUESTS.md's, against its slower SimPy reference.
   Then the plain minute with a plug-in controller ticking every 100 ms (600 ticks a minute; docs/agents.md):
   one that does nothing (the segments and the signals alone), Gradient2, the PID shedder. Measured 2026-12-03
   (load 2.6–3.7): 28.6 ms plain, 58.0 ms idle (+29 ms, about 50 µs a tick), 69.5 ms Gradient2 (+41 ms),
   75.0 ms the PID shedder (+46 ms); at their own ticks (1 s, 250 ms) a tenth and two fifths of that.

3. A busy minute of the three-service cascade (issue 24's target: the shipped ``cascade`` scenario at 2,500
   entry requests/s, its minutes before the slow leaf: an api calling a catalog, and on three pages in ten a
   recommendations service; lognormal and exponential work; about 345,000 attempts a minute). Target: ≤ 100 ms a
   minute. Then a heavier chain (``CHAIN`` below: an api, an orders service, a database read twice at once;
   timeouts at every hop, two retries with a budget; 600,000 attempts a minute), printed beside the one
   service's minute (the ratio) and against the oracle (verify/chains.py, plain Python) on the same graph for a
   tenth of the requests: the compiled loop's speed-up. Measured 2026-12-03: the cascade 89–98 ms median in a quiet
   hour (the one service's minute 29–32 ms), 92–134 ms in a slower one (33–41): 2.8–3.3× the one service's minute,
   so within 100 ms whenever the one service is within its 30 ms; the heavier chain 150–213 ms (5.2–5.9×).
   docs/graphs.md, "Speed", has what took it there and what was tried.

Peers are measured in the same run, on the same machine; ratios are what to compare across machines.

    python benchmarks/requests.py [--customers 163200] [--repeats 5] [--minutes 30]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from oncallsim.model.queueing import erlang_c

SERVERS, SERVICE_S, UTILIZATION = 160, 0.050, 0.85
RATE = UTILIZATION * SERVERS / SERVICE_S
TARGET_SIMPY_RATIO = 150.0
TARGET_MINUTE_MS = 30.0


def engine_run(customers: int, seed: int) -> tuple[float, int, float]:
    """(seconds, customers, mean wait s) for the engine; it runs whole minutes, so the customers are rounded to
    minutes (the customers that started service, the same count the peers' records hold)."""
    from oncallsim.model.request.queue_only import simulate_mmn

    minutes = max(1, round(customers / (RATE * 60.0)))
    start = time.perf_counter()
    run = simulate_mmn(SERVERS, RATE, SERVICE_S, minutes, seed, warmup_minutes=0)
    took = time.perf_counter() - start
    return took, run.customers, run.mean_wait_s


def simpy_run(customers: int, seed: int) -> tuple[float, int, float]:
    import simpy

    rng = random.Random(seed)
    env = simpy.Environment()
    servers = simpy.Resource(env, capacity=SERVERS)
    waits: list[float] = []

    def customer(env: simpy.Environment) -> object:
        arrived = env.now
        with servers.request() as req:
            yield req
            waits.append(env.now - arrived)
            yield env.timeout(rng.expovariate(1.0 / SERVICE_S))

    def source(env: simpy.Environment) -> object:
        for _ in range(customers):
            yield env.timeout(rng.expovariate(RATE))
            env.process(customer(env))

    start = time.perf_counter()
    env.process(source(env))
    env.run()
    return time.perf_counter() - start, len(waits), statistics.fmean(waits)


def ciw_run(customers: int, seed: int) -> tuple[float, int, float]:
    import ciw

    ciw.seed(seed)
    network = ciw.create_network(
        arrival_distributions=[ciw.dists.Exponential(RATE)],
        service_distributions=[ciw.dists.Exponential(1.0 / SERVICE_S)],
        number_of_servers=[SERVERS],
    )
    sim = ciw.Simulation(network)
    start = time.perf_counter()
    sim.simulate_until_max_customers(customers, method="Arrive")
    took = time.perf_counter() - start
    waits = [r.waiting_time for r in sim.get_all_records()]
    return took, len(waits), statistics.fmean(waits)


# Every overload mechanism on (issue 11 asks for the engine's cost per request with them): client-side p2c with
# 8 clients, CoDel with a queue limit, deadlines, the BBR limiter, adaptive throttling.
MECHANISMS = {
    "balancer": "p2c",
    "clients": 8,
    "queue_discipline": "codel",
    "queue_limit": 200,
    "deadline_propagation": True,
    "limiter": "bbr",
    "breaker": "sre",
    "retries": 2,
    "retry_backoff": "full-jitter",
    "retry_budget": 0.1,
}


def timed_minutes(sim: Any, minutes: int) -> tuple[list[float], Any]:
    """The ms each of ``minutes`` minutes of ``sim`` took, after one untimed minute (it compiles on first use on a
    machine and fills the buffers), and the last minute's record."""
    sim.step()
    times = []
    for _ in range(minutes):
        start = time.perf_counter()
        record = sim.step()
        times.append((time.perf_counter() - start) * 1000.0)
    return times, record


def busy_minute_ms(
    minutes: int, seed: int = 1, mechanisms: bool = False, controller: object = None
) -> tuple[float, float]:
    """(median, best) ms per minute of the full pipeline at 2,500 req/s, after one untimed minute; with a plug-in
    ``controller`` if given (a name or an object: docs/agents.md "Controllers")."""
    from oncallsim import Simulation

    overrides: dict[str, object] = {"base_requests_per_s": 2500.0, "diurnal_amplitude": 0.0, "floor": 20}
    if mechanisms:
        overrides.update(MECHANISMS)
    sim = Simulation(
        "free-play", seed=seed, engine="request", minutes=minutes + 1, overrides=overrides, controller=controller
    )
    times, record = timed_minutes(sim, minutes)
    assert record.requests_per_s > 2400 and record.error_rate < 0.02, record  # the minute is busy and healthy
    return statistics.median(times), min(times)


CHAIN = """
id = "bench-chain"
version = 1
title = "A busy chain"
summary = "api, orders, db"
briefing = "-"
start = "09:00"
minutes = 60
[params]
base_requests_per_s = 2500.0
diurnal_amplitude = 0.0
[graph]
entry = "api"
deadline_ms = 1000
[graph.services.api]
instances = 20
workers_per_instance = 8
service_ms = 2
timeout_ms = 800
calls = [{ to = "orders", network_ms = 0.5 }]
[graph.services.orders]
instances = 15
workers_per_instance = 8
service_ms = 3
timeout_ms = 300
retries = 2
retry_budget = 0.1
calls = [{ to = "db", mode = "parallel", count = 2, network_ms = 0.5 }]
[graph.services.db]
instances = 10
workers_per_instance = 8
service_ms = 2
timeout_ms = 100
"""
TARGET_CHAIN_MS = 100.0


def chain_minute_ms(minutes: int, seed: int = 1) -> tuple[float, float, float]:
    """(median, best) ms per busy minute of the chain, after one untimed minute; and the oracle's ms for the same
    minute (its time for a tenth of the requests, × 10)."""
    from oncallsim import Simulation
    from oncallsim.scenarios.registry import scenario_from_text
    from oncallsim.verify.chains import simulate

    scenario = scenario_from_text(CHAIN, "bench")
    sim = Simulation(scenario, seed=seed, minutes=minutes + 1, overrides={"floor": 20})
    times, record = timed_minutes(sim, minutes)
    assert record.requests_per_s > 2400 and record.error_rate < 0.02, record  # busy and healthy
    assert scenario.graph is not None
    start = time.perf_counter()
    simulate(scenario.graph, rate_per_s=2500.0, requests=15_000, seed=seed)
    oracle_ms = (time.perf_counter() - start) * 1000.0 * 10.0
    return statistics.median(times), min(times), oracle_ms


def cascade_minute_ms(minutes: int, seed: int = 1) -> tuple[float, float]:
    """(median, best) ms per busy minute of the shipped cascade scenario at 2,500 entry requests/s, after one
    untimed minute; its minutes before 09:10, when its leaf may turn slow."""
    from oncallsim import Simulation

    minutes = min(minutes, 8)  # the slow leaf may begin at 09:10: every minute timed is before it
    sim = Simulation("cascade", seed=seed, minutes=minutes + 1, overrides={"base_requests_per_s": 2500.0})
    times, record = timed_minutes(sim, minutes)
    assert record.requests_per_s > 2400 and record.error_rate < 0.01, record  # busy and healthy
    return statistics.median(times), min(times)


class _Idle:
    """A controller that reads every signal and sets nothing: the cost of the ticks themselves."""

    tick_s = 0.1

    def control(self, signals: object, knobs: object) -> None:
        pass


def controllers_at_100ms() -> list[tuple[str, object]]:
    """The two shipped controllers, and one that does nothing, each ticking every 100 ms."""
    from oncallsim.model.request.controllers import Gradient2, PidShedder

    return [("idle", _Idle()), ("gradient2", Gradient2(8, tick_s=0.1)), ("pid-shedder", PidShedder(tick_s=0.1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--customers", type=int, default=round(RATE * 60.0), help="customers per simulator")
    ap.add_argument("--repeats", type=int, default=5, help="engine repeats (the best counts); peers run once")
    ap.add_argument("--minutes", type=int, default=30, help="busy minutes timed")
    args = ap.parse_args()

    formula = erlang_c(RATE * SERVICE_S, SERVERS) / (SERVERS / SERVICE_S - RATE)
    engine_run(1000, 0)  # compile (or load from numba's cache) outside the timing
    best = min((engine_run(args.customers, seed) for seed in range(1, args.repeats + 1)), key=lambda r: r[0])
    customers = best[1]  # the engine runs whole minutes: the peers get exactly as many customers
    rows = {"request engine": best, "SimPy": simpy_run(customers, 1), "Ciw": ciw_run(customers, 1)}
    print(f"M/M/N: N = {SERVERS}, S = {SERVICE_S * 1000:g} ms, ρ = {UTILIZATION}, λ = {RATE:g}/s")
    print(f"{'':16} {'customers':>10} {'seconds':>9} {'customers/s':>12} {'mean wait ms':>13}  (C/(Nμ−λ) = "
          f"{formula * 1000:.4f} ms)")  # fmt: skip
    speed = {}
    for name, (took, n, wait) in rows.items():
        speed[name] = n / took
        print(f"{name:16} {n:>10,} {took:>9.3f} {speed[name]:>12,.0f} {wait * 1000:>13.4f}")
    ratio_simpy = speed["request engine"] / speed["SimPy"]
    ratio_ciw = speed["request engine"] / speed["Ciw"]
    verdict = "meets" if ratio_simpy >= TARGET_SIMPY_RATIO else "MISSES"
    print(f"ratios: {ratio_simpy:,.0f}× SimPy ({verdict} ≥ {TARGET_SIMPY_RATIO:g}×), {ratio_ciw:,.0f}× Ciw")

    median, fastest = busy_minute_ms(args.minutes)
    verdict = "meets" if median <= TARGET_MINUTE_MS else "MISSES"
    print(
        f"busy minute (full pipeline, 2,500 req/s, 150,000 requests): median {median:.1f} ms, best "
        f"{fastest:.1f} ms over {args.minutes} minutes ({verdict} ≤ {TARGET_MINUTE_MS:g} ms)"
    )
    plain = median
    median, fastest = busy_minute_ms(args.minutes, mechanisms=True)
    print(
        f"the same with every mechanism on ({', '.join(f'{k}={v}' for k, v in MECHANISMS.items())}): median "
        f"{median:.1f} ms ({median / 150.0 * 1000:.0f} ns a request; {median / plain:.2f}× the plain minute)"
    )
    for name, made in controllers_at_100ms():
        median, fastest = busy_minute_ms(args.minutes, controller=made)
        print(
            f"the plain minute with a controller at 100 ms ticks ({name}: 600 ticks a minute): median {median:.1f} ms "
            f"(+{median - plain:.1f} ms, {(median - plain) / 600 * 1000:.0f} µs a tick)"
        )
    median, fastest = cascade_minute_ms(args.minutes)
    verdict = "meets" if median <= TARGET_CHAIN_MS else "MISSES"
    print(
        f"busy minute of the cascade scenario (2,500 entry req/s, ~345,000 attempts): median {median:.1f} ms, best "
        f"{fastest:.1f} ms over {min(args.minutes, 8)} minutes ({verdict} ≤ {TARGET_CHAIN_MS:g} ms; "
        f"{median / plain:.1f}× the one service's minute)"
    )
    median, fastest, oracle_ms = chain_minute_ms(args.minutes)
    print(
        f"busy minute of a heavier chain (2,500 entry req/s, 600,000 attempts, timeouts and retries): median "
        f"{median:.1f} ms, best {fastest:.1f} ms ({median / plain:.1f}× the one service's minute; "
        f"{oracle_ms / median:.0f}× the plain-Python oracle)"
    )


if __name__ == "__main__":
    main()
