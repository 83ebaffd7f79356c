"""How much slower than a quiet reference machine this one runs right now: one quick measured pass.

Figures measured before (the cost model) or written into the code (priors) hold for the load they
were measured at. :func:`slowdown` times a small fixed piece of work now (about 10 ms on a quiet
core) against the time it took on the reference machine, so an estimate can say "this machine,
as busy as it is now". Other programs' load, a slower CPU and a laptop on battery all show in it.
"""

from __future__ import annotations

import statistics
import threading
import time

import numpy as np

#: wall seconds of one :func:`_work` pass on the reference machine (2 cores, quiet; its CPU time
#: measured on a loaded one is load-independent: 0.0097-0.0112 s)
REFERENCE_S = 0.010
#: how long a measurement is reused (the load moves, but an estimate should not cost a probe each call)
REUSE_S = 30.0
#: never say the machine is more than this much faster or slower (a hiccup is not a measurement)
LIMITS = (0.25, 30.0)

_lock = threading.Lock()
_last: tuple[float, float] | None = None  # (when, slowdown)
_data = np.random.default_rng(0).standard_normal(60_000).astype(np.float32)


def _work() -> None:
    """A fixed single-threaded mix of what training does: sorting, elementwise maths, reductions."""
    for _ in range(7):
        values = np.sort(_data)
        np.tanh(values * 0.5, out=values)
        float(values.sum())


def measure(repeats: int = 5, clock=time.perf_counter) -> float:
    """Seconds of one pass now: the median of ``repeats``, so that a preemption or two do not count."""
    times = []
    for _ in range(repeats):
        start = clock()
        _work()
        times.append(clock() - start)
    return statistics.median(times)


def slowdown(*, now=time.monotonic, probe=measure) -> float:
    """This machine's time for a piece of work against the reference machine's (2.0: twice as long),
    measured at most every :data:`REUSE_S` seconds in this process."""
    global _last
    with _lock:
        if _last is not None and now() - _last[0] < REUSE_S:
            return _last[1]
        factor = min(max(probe() / REFERENCE_S, LIMITS[0]), LIMITS[1])
        _last = (now(), factor)
        return factor


def forget() -> None:
    """Measure afresh at the next :func:`slowdown` (tests; a run that just ended changes the load)."""
    global _last
    with _lock:
        _last = None
