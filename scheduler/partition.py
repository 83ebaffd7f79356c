"""Run a plan: one worker thread per device share pulling chunks from a shared queue."""

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


class _Cursor:
    """The shared queue of work: hands out consecutive index ranges to whoever asks first."""

    def __init__(self, total: int, n_devices: int, chunk_size: int | None):
        self.total = total
        self.n_devices = n_devices
        self.chunk_size = chunk_size
        self.next = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def take(self, share) -> tuple[int, int] | None:
        with self.lock:
            if self.stop.is_set() or self.next >= self.total:
                return None
            remaining = self.total - self.next
            size = self.chunk_size or max(1, share.batch_size)
            if self.chunk_size is None and self.n_devices > 1:
                # Near the end, smaller chunks so no device holds the last big one alone.
                size = min(size, max(1, math.ceil(remaining * max(share.share, 1 / (2 * self.n_devices)))))
            start, self.next = self.next, self.next + min(size, remaining)
            return start, self.next


def _runner_for(share, backends: dict, process_chunk):
    backend = backends.get(share.name)
    if backend is None:
        return lambda chunk: process_chunk(share, chunk)
    return lambda chunk: backend.run_chunk(share, process_chunk, chunk)


def run_partitioned(plan, items, process_chunk, *, progress=None, should_stop=None, chunk_size: int | None = None,
                    cost_model=None, backends: dict | None = None, poll_s: float = 0.05) -> list:
    """Process ``items`` on the plan's devices; returns the results in input order.

    Parameters
    ----------
    plan : Plan
        From :func:`~modeldesk.scheduler.planner.plan`.
    items : iterable
        The units of work.
    process_chunk : callable
        ``process_chunk(device_share, chunk) -> list`` with one result per item of ``chunk``; it
        runs on worker threads (or on a cluster worker for a backend's share).
    progress : callable, optional
        ``progress(done, total, eta_s)``, called on the calling thread after each chunk.
    should_stop : callable, optional
        Polled on the calling thread; when it returns True no new chunk starts, the chunks in flight
        finish and :class:`Cancelled` is raised.
    chunk_size : int, optional
        Items per chunk for every device (default: each device's batch size).
    cost_model : CostModel, optional
        Where the measured throughput is recorded (default: the plan's).
    backends : dict, optional
        Device name -> backend (default: the plan's), for plans rebuilt with ``Plan.from_dict``.

    Raises
    ------
    Cancelled
        After in-flight chunks finish, when ``should_stop()`` returned True before all items ran.
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
    stats = {d.name: {"items": 0, "seconds": 0.0, "chunks": 0} for d in devices}
    errors: list = []

    def work(share):
        run = _runner_for(share, backends, process_chunk)
        try:
            while True:
                span = cursor.take(share)
                if span is None:
                    return
                start, end = span
                chunk = items[start:end]
                began = time.perf_counter()
                out = list(run(chunk))
                spent = time.perf_counter() - began
                if len(out) != len(chunk):
                    raise ValueError(f"process_chunk returned {len(out)} results for {len(chunk)} items on {share.name}")
                results[start:end] = out
                record = stats[share.name]
                record["items"] += len(chunk)
                record["seconds"] += spent
                record["chunks"] += 1
                events.put(("done", len(chunk)))
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which re-raises
            errors.append(exc)
            cursor.stop.set()
        finally:
            events.put(("exit", share.name))

    began = time.perf_counter()
    threads = [threading.Thread(target=work, args=(d,), name=f"modeldesk-{d.name}", daemon=True) for d in devices]
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
    _record(plan, devices, stats, cost_model, elapsed)
    if errors:
        raise errors[0]
    if cancelled and done < total:
        raise Cancelled(f"cancelled after {done} of {total} items", done=done, total=total, results=results)
    return results


def _record(plan, devices, stats: dict, cost_model, elapsed: float) -> None:
    """Keep the run's figures on the plan and fold them into the cost model."""
    plan.actual_s = elapsed
    plan.run_stats = {name: {**s, "items_per_s": s["items"] / s["seconds"] if s["seconds"] > 0 else None}
                      for name, s in stats.items()}
    if cost_model is None:
        return
    for share in devices:
        record = stats[share.name]
        if record["items"] > 0 and record["seconds"] > 0:
            try:
                cost_model.record(plan.work_key, share.cost_device or share.name, share.batch_size, share.threads,
                                  n_items=record["items"], seconds=record["seconds"])
            except OSError as exc:  # a read-only cache must not fail a finished run
                log.warning("could not save throughput to the cost model: %s", exc)
