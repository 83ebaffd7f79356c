"""Run a plan: worker threads per device share pulling chunks from a shared queue.

A device whose backend loses it mid-run (a cluster worker that died) gives its chunk back: the
chunk goes to the others, so every item is still processed exactly once.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time

log = logging.getLogger(__name__)


class Cancelled(Exception):
    """Raised when a run stops because ``should_stop()`` said so.

    ``done`` items of ``total`` were finished; ``results`` holds them in input order (None for the
    rest), so a caller may keep what was computed.
    """

    def __init__(self, message: str = "cancelled", *, done: int = 0, total: int = 0, results=None):
        super().__init__(message)
        self.done = done
        self.total = total
        self.results = results


class DeviceLost(Exception):
    """Raised by a backend when the device running a chunk went away (a cluster worker died).

    :func:`run_partitioned` then hands the chunk to the other devices instead of failing.
    """


class _Cursor:
    """The shared queue of work: hands out consecutive index ranges to whoever asks first, and
    ranges that a lost device gave back."""

    def __init__(self, total: int, n_devices: int, chunk_size: int | None):
        self.total = total
        self.n_devices = n_devices
        self.chunk_size = chunk_size
        self.next = 0
        self.returned: list[tuple[int, int]] = []
        self.in_flight = 0
        self.cond = threading.Condition()
        self.stop = threading.Event()

    def take(self, share, cap: int | None = None) -> tuple[int, int] | None:
        """The next range for ``share`` (at most ``cap`` items); None when nothing is left.

        While other devices still hold chunks it waits, since a lost device may give one back.
        """
        with self.cond:
            while True:
                if self.stop.is_set():
                    return None
                if self.returned:
                    start, end = self.returned.pop()
                    if cap and end - start > cap:
                        self.returned.append((start + cap, end))
                        end = start + cap
                    self.in_flight += 1
                    return start, end
                if self.next < self.total:
                    remaining = self.total - self.next
                    size = self.chunk_size or max(1, share.batch_size)
                    if self.n_devices > 1:
                        # Never more than the device's share of what is left: near the end smaller
                        # chunks, so no device holds the last big one alone while others wait.
                        size = min(
                            size, max(1, math.ceil(remaining * max(share.share, 1 / (2 * self.n_devices))))
                        )
                    if cap:
                        size = min(size, cap)
                    start, self.next = self.next, self.next + min(size, remaining)
                    self.in_flight += 1
                    return start, self.next
                if self.in_flight == 0:
                    return None
                self.cond.wait(0.05)

    def finish(self, span: tuple[int, int], *, lost: bool = False) -> None:
        """A range is done, or (``lost``) must be done by someone else."""
        with self.cond:
            self.in_flight -= 1
            if lost:
                self.returned.append(span)
            self.cond.notify_all()


class _Busy:
    """Wall time a device was busy: the union of its chunks' intervals (chunks may overlap when a
    backend keeps several in flight)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.active = 0
        self.since = 0.0
        self.seconds = 0.0

    def __enter__(self):
        with self.lock:
            if self.active == 0:
                self.since = time.perf_counter()
            self.active += 1

    def __exit__(self, *exc_info):
        with self.lock:
            self.active -= 1
            if self.active == 0:
                self.seconds += time.perf_counter() - self.since


def _runner_for(share, backends: dict, process_chunk):
    """``chunk -> results`` for one share: local call, or through the share's backend.

    A ``process_chunk`` with a ``remote`` attribute is split for backends: ``pack(share, chunk)``
    runs here (e.g. reads the files), ``remote(share, payload)`` runs on the backend's worker and
    ``unpack(share, chunk, out)`` runs here again on its answer (e.g. stores the results).
    """
    backend = backends.get(share.name)
    if backend is None:
        return lambda chunk: process_chunk(share, chunk)
    remote = getattr(process_chunk, "remote", None)
    if remote is None:
        return lambda chunk: backend.run_chunk(share, process_chunk, chunk)
    return lambda chunk: process_chunk.unpack(
        share, chunk, backend.run_chunk(share, remote, process_chunk.pack(share, chunk))
    )


def run_partitioned(
    plan,
    items,
    process_chunk,
    *,
    progress=None,
    should_stop=None,
    chunk_size: int | None = None,
    cost_model=None,
    backends: dict | None = None,
    poll_s: float = 0.05,
) -> list:
    """Process ``items`` on the plan's devices; returns the results in input order.

    Parameters
    ----------
    plan : Plan
        From :func:`~modeldesk.scheduler.planner.plan`.
    items : iterable
        The units of work.
    process_chunk : callable
        ``process_chunk(device_share, chunk) -> list`` with one result per item of ``chunk``; it
        runs on worker threads (or on a cluster worker for a backend's share). For backends it may
        carry ``remote``, ``pack`` and ``unpack`` (see ``_runner_for``) so that what travels is
        data, not local paths.
    progress : callable, optional
        ``progress(done, total, eta_s)``, called on the calling thread after each chunk.
    should_stop : callable, optional
        Polled on the calling thread; when it returns True no new chunk starts, the chunks in flight
        finish and :class:`Cancelled` is raised.
    chunk_size : int, optional
        Items per chunk for every device (default: each device's batch size); a backend's
        ``max_chunk_items`` caps its own chunks.
    cost_model : CostModel, optional
        Where the measured throughput is recorded (default: the plan's).
    backends : dict, optional
        Device name -> backend (default: the plan's), for plans rebuilt with ``Plan.from_dict``.

    Raises
    ------
    Cancelled
        After in-flight chunks finish, when ``should_stop()`` returned True before all items ran.
    DeviceLost
        When every device was lost before the work was done.
    Exception
        The first exception raised by ``process_chunk`` (the other workers stop taking chunks).
    """
    items = list(items)
    total = len(items)
    devices = list(plan.devices)
    if not devices:
        raise ValueError("the plan has no devices")
    backends = plan.backends if backends is None else backends
    cost_model = plan.cost_model if cost_model is None else cost_model
    results: list = [None] * total
    cursor = _Cursor(total, len(devices), chunk_size)
    events: queue.Queue = queue.Queue()
    stats = {d.name: {"items": 0, "seconds": 0.0, "chunks": 0, "lost_chunks": 0} for d in devices}
    busy = {d.name: _Busy() for d in devices}
    lost: dict = {}
    stats_lock = threading.Lock()
    errors: list = []

    def work(share):
        backend = backends.get(share.name)
        cap = getattr(backend, "max_chunk_items", None)
        run = _runner_for(share, backends, process_chunk)
        try:
            while share.name not in lost:
                span = cursor.take(share, cap)
                if span is None:
                    return
                start, end = span
                if share.name in lost:  # another thread of this device saw it go
                    cursor.finish(span, lost=True)
                    return
                chunk = items[start:end]
                try:
                    with busy[share.name]:
                        out = list(run(chunk))
                except DeviceLost as exc:
                    cursor.finish(span, lost=True)
                    with stats_lock:
                        stats[share.name]["lost_chunks"] += 1
                        lost.setdefault(share.name, str(exc))
                    log.warning(
                        "%s was lost (%s); its chunk of %d items goes to the other devices",
                        share.name,
                        exc,
                        len(chunk),
                    )
                    return
                except BaseException:
                    cursor.finish(span)
                    raise
                if len(out) != len(chunk):
                    cursor.finish(span)
                    raise ValueError(
                        f"process_chunk returned {len(out)} results for {len(chunk)} items on {share.name}"
                    )
                results[start:end] = out
                cursor.finish(span)
                with stats_lock:
                    record = stats[share.name]
                    record["items"] += len(chunk)
                    record["chunks"] += 1
                events.put(("done", len(chunk)))
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which re-raises
            errors.append(exc)
            cursor.stop.set()
        finally:
            events.put(("exit", share.name))

    began = time.perf_counter()
    threads = [
        threading.Thread(target=work, args=(d,), name=f"modeldesk-{d.name}-{i}", daemon=True)
        for d in devices
        for i in range(max(1, int(getattr(backends.get(d.name), "inflight", 1))))
    ]
    for thread in threads:
        thread.start()
    done, alive, cancelled = 0, len(threads), False
    try:
        while alive:
            try:
                kind, value = events.get(timeout=poll_s)
            except queue.Empty:
                kind = None
            if kind == "exit":
                alive -= 1
            elif kind == "done":
                done += value
                if progress is not None:
                    elapsed = time.perf_counter() - began
                    progress(done, total, (total - done) * elapsed / done if done else plan.eta_s)
            if not cancelled and should_stop is not None and not cursor.stop.is_set() and should_stop():
                cancelled = True
                cursor.stop.set()
    finally:
        cursor.stop.set()
        for thread in threads:
            thread.join()
    elapsed = time.perf_counter() - began
    for name, record in stats.items():
        record["seconds"] = busy[name].seconds
    for name, why in lost.items():
        plan.notes.append(
            f"{name} was lost during the run ({why}); its unfinished work went to the other devices"
        )
    _record(plan, devices, stats, cost_model, elapsed)
    if errors:
        raise errors[0]
    if cancelled and done < total:
        raise Cancelled(f"cancelled after {done} of {total} items", done=done, total=total, results=results)
    if done < total:
        raise DeviceLost(
            f"every device was lost after {done} of {total} items: "
            + "; ".join(f"{name}: {why}" for name, why in lost.items())
        )
    return results


def _record(plan, devices, stats: dict, cost_model, elapsed: float) -> None:
    """Keep the run's figures on the plan and fold them into the cost model."""
    plan.actual_s = elapsed
    plan.run_stats = {
        name: {**s, "items_per_s": s["items"] / s["seconds"] if s["seconds"] > 0 else None}
        for name, s in stats.items()
    }
    if cost_model is None:
        return
    for share in devices:
        record = stats[share.name]
        if record["items"] > 0 and record["seconds"] > 0:
            try:
                cost_model.record(
                    plan.work_key,
                    share.cost_device or share.name,
                    share.batch_size,
                    share.threads,
                    n_items=record["items"],
                    seconds=record["seconds"],
                )
            except OSError as exc:  # a read-only cache must not fail a finished run
                log.warning("could not save throughput to the cost model: %s", exc)
