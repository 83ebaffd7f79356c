"""How much slower than a quiet reference machine this one runs right now: one quick measured pass.

Figures measured before (the cost model) or written into the code (priors) hold for the load they
were measured at. :func:`slowdown` times a small fixed piece of work now (about 10 ms on a quiet
core) against the time it took on the reference machine, so an estimate can say "this machine,
as busy as it is now". A slower CPU and a laptop on battery show in it. Other programs' load shows
in it only in part: the scheduler lets a thread that just woke up run first, so a 10 ms pass beside
two busy processes on 2 cores often reads as quiet (0.9-1.8) while a job on every core runs about
twice as long. So it also counts the threads ready to run (:func:`busy_threads`), which share the
cores with a job that uses all of them: (busy + cores) / cores.
"""

from __future__ import annotations

import os
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
_last: tuple[float, float, float | None] | None = None  # (when, timed pass / reference, busy threads)
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


def busy_threads(samples: int = 15, gap_s: float = 0.003, path: str = "/proc/loadavg") -> float | None:
    """Threads of other programs ready to run now: the kernel's count of runnable threads (Linux's
    ``/proc/loadavg``), the median of ``samples`` readings (a command that runs for a moment is not
    a load), less the one reading it; None where the system does not say (macOS, Windows: the timed
    pass alone then)."""
    counts = []
    try:
        for _ in range(samples):
            with open(path, encoding="ascii") as f:
                counts.append(int(f.read().split()[3].split("/")[0]))
            time.sleep(gap_s)
    except (OSError, ValueError, IndexError):
        return None
    return max(statistics.median(counts) - 1.0, 0.0)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def contention(busy: float | None, cores: int | None = None, threads: int | None = None) -> float:
    """How much longer a job of ``threads`` threads (None: one on every core) takes beside ``busy``
    ready threads: all of them share the cores fairly, and a job that leaves a core idle on a quiet
    machine loses nothing until the others need it (one thread beside two busy ones on 2 cores: 1.5x)."""
    cores = cores or _cores()
    if busy is None:
        return 1.0
    threads = cores if threads is None else max(1, threads)
    return max(1.0, min(threads, cores) * (busy + threads) / (threads * cores))


def slowdown(*, now=time.monotonic, probe=measure, busy=busy_threads, threads: int | None = None) -> float:
    """This machine's time for a piece of work against the reference machine's (2.0: twice as long):
    the timed pass, or the share of the cores other programs leave a job of ``threads`` threads (None:
    one on every core) when that is the larger. Both are measured at most every :data:`REUSE_S`
    seconds in this process."""
    global _last
    with _lock:
        if _last is None or now() - _last[0] >= REUSE_S:
            _last = (now(), probe() / REFERENCE_S, busy())
        _, timed, ready = _last
    factor = max(timed, contention(ready, threads=threads))
    return min(max(factor, LIMITS[0]), LIMITS[1])


def free_cores(*, now=time.monotonic, probe=measure, busy=busy_threads) -> int:
    """The cores other programs leave free now, at least one: the threads a numpy fit should use. Beside
    busy cores a parallel product waits for its slowest thread: a head's products ran 1.8x faster on one
    thread than on two beside two busy processes on 2 cores (2026-12-04)."""
    slowdown(now=now, probe=probe, busy=busy)  # measures, or reuses the last measurement
    ready = _last[2] if _last is not None else None
    cores = _cores()
    return cores if ready is None else max(1, min(cores, cores - round(ready)))


def forget() -> None:
    """Measure afresh at the next :func:`slowdown` (tests; a run that just ended changes the load)."""
    global _last
    with _lock:
        _last = None
