"""Each instance's CPU as Kratos measures it: one sampled signal that every mechanism reading CPU shares.

Kratos's servers sample their own process's CPU every 500 ms (kratos v1.0.1 ``pkg/stat/sys/cpu``, aegis
``internal/cpu``): the CPU time used over the last 500 ms against the cores it may use, in ‰. Here an instance's
"cores" are its workers, and its CPU time is its workers' CPU phases (not their waits on the database: a
database-bound instance reads cool). Three readers, each with its lag:

- ``sample``: the last reading, which a response carries back to its client (warden's ``cpu_usage`` trailer):
  P2C and the dynamic round robin read it, up to 500 ms old. A zero reading is ignored — the last non-zero one
  stays — as the sampler does (``if u != 0``).
- ``ema``: the BBR limiter's estimate, cpu = 0.95·cpu + 0.05·reading at every tick (aegis ``cpuproc``; a time
  constant of ~10 s: from idle at full load it needs ~16 s to reach 800 ‰). Under revision 1 (run files of model
  version 1) a zero reading left the EMA as it was; since revision 2 the EMA takes the last non-zero reading, as
  aegis does.

A worker's CPU phase is counted whole when it starts (its length is drawn then).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from oncallsim.model.jit import by_reference
from oncallsim.model.kernel import step

__all__ = ["DECAY", "TICK_S", "Cpu", "new_cpu", "sample"]

TICK_S = 0.5  # the sampler's period
DECAY = 0.95  # the BBR limiter's EMA: the weight of the previous value at each tick
R_NEXT_TICK = 0  # reals[...]: the next sample
I_REVISION = 0  # ints[...]: the model revision's rules (settings.set_revision)


@by_reference
class Cpu(NamedTuple):
    """Each instance's CPU time since the last sample, its last reading and the limiter's EMA of them."""

    ints: npt.NDArray[np.int64]
    reals: npt.NDArray[np.float64]
    acc: npt.NDArray[np.float64]  # per instance: CPU seconds of its workers since the last sample
    sample: npt.NDArray[np.float64]  # per instance: the last non-zero reading (‰), what a response reports
    ema: npt.NDArray[np.float64]  # per instance: the limiter's EMA of the readings (‰)


def new_cpu(instances: int) -> Cpu:
    """Nothing sampled yet."""
    return Cpu(
        ints=np.zeros(1, dtype=np.int64),
        reals=np.zeros(1),
        acc=np.zeros(instances),
        sample=np.zeros(instances),
        ema=np.zeros(instances),
    )


@step
def sample(cpu: Any, x: float, serving: int, wpi: int) -> None:
    """The samples due by ``x``: each serving instance's reading over the last period, and the EMA."""
    while cpu.reals[R_NEXT_TICK] <= x:
        for i in range(serving):
            reading = 1000.0 * cpu.acc[i] / (wpi * TICK_S)
            if reading > 1000.0:
                reading = 1000.0
            if reading > 0.0:
                cpu.sample[i] = reading
                cpu.ema[i] = cpu.ema[i] * DECAY + reading * (1.0 - DECAY)
            elif cpu.ints[I_REVISION] >= 2:
                cpu.ema[i] = cpu.ema[i] * DECAY + cpu.sample[i] * (1.0 - DECAY)
            cpu.acc[i] = 0.0
        cpu.reals[R_NEXT_TICK] += TICK_S
