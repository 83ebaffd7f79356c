"""Micro-batching for the service: requests that arrive together run as one ``session.run``.

A request decodes its inputs on its own thread, then hands the decoded items to the batcher. The
batcher's thread takes the first waiting request and, only while other requests are known to be
on their way (decoding), waits up to ``max_wait_s`` for them, up to ``max_batch`` items; a request
that arrives alone runs at once, so it is never slower than without batching.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future

log = logging.getLogger(__name__)


class MicroBatcher:
    """Gather concurrent requests' items into batches for ``run_items(items) -> results``.

    Call :meth:`expect` when a request starts decoding, then :meth:`submit` with its items (or
    :meth:`forget` if decoding failed); ``submit`` returns a Future of that request's results.
    """

    def __init__(self, run_items, *, max_batch: int = 32, max_wait_s: float = 0.004):
        self.run_items = run_items
        self.max_batch = max(1, int(max_batch))
        self.max_wait_s = max_wait_s
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._expected = 0
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.batches = 0  # counters for the benchmark and tests
        self.items = 0

    def expect(self) -> None:
        with self._lock:
            self._expected += 1

    def forget(self) -> None:
        with self._lock:
            self._expected = max(0, self._expected - 1)

    def submit(self, items: list) -> Future:
        future: Future = Future()
        with self._lock:
            self._expected = max(0, self._expected - 1)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="modeldesk-batcher", daemon=True)
                self._thread.start()
        self._queue.put((items, future))
        return future

    def stop(self) -> None:
        self._stopped = True
        self._queue.put(None)

    def _more_coming(self) -> bool:
        with self._lock:
            return self._expected > 0

    def _gather(self, first) -> list:
        batch, count = [first], len(first[0])
        deadline = time.monotonic() + self.max_wait_s
        while count < self.max_batch:
            try:
                entry = self._queue.get_nowait()
            except queue.Empty:
                left = deadline - time.monotonic()
                if left <= 0 or not self._more_coming():
                    break
                try:
                    entry = self._queue.get(timeout=min(left, 0.001))
                except queue.Empty:
                    continue
            if entry is None:
                self._queue.put(None)
                break
            batch.append(entry)
            count += len(entry[0])
        return batch

    def _loop(self) -> None:
        while not self._stopped:
            first = self._queue.get()
            if first is None:
                break
            batch = self._gather(first)
            items = [item for entry in batch for item in entry[0]]
            try:
                results = self.run_items(items)
            except BaseException as exc:  # every waiting request gets the error, the thread goes on
                for _, future in batch:
                    future.set_exception(exc)
                continue
            self.batches += 1
            self.items += len(items)
            start = 0
            for entry_items, future in batch:
                future.set_result(results[start : start + len(entry_items)])
                start += len(entry_items)
