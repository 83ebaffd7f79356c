"""Run plain-Python work off the UI thread and report back through Qt signals.

The core (``app``, ``datasets`` ...) reports progress through plain callbacks
(``progress(done, total, message)``) and asks ``should_stop()`` to learn about a
cancel. This module adapts that to Qt, in the manner of Orange3's
``widgets/utils/concurrent.py``: the callable runs in a ``QThreadPool``; it gets a
:class:`TaskState` whose ``set_progress`` / ``is_interruption_requested`` are safe to
call from the worker thread; results, errors and progress reach the UI thread through
queued signals on a :class:`TaskHandle` that lives there.

Example
-------
    handle = run_task(lambda state: ws.import_data(p, path, progress=state.set_progress,
                                                   should_stop=state.is_interruption_requested))
    handle.progress.connect(panel.set_progress)
    handle.finished.connect(show_summary)
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, QRunnable, Qt, QThreadPool, Signal, Slot

log = logging.getLogger(__name__)

#: How long closing waits for background work (asked to stop first) before it goes on without it.
SHUTDOWN_WAIT_MS = 30_000

#: At most one progress signal per this many seconds (the last one is always sent).
PROGRESS_INTERVAL_S = 0.05


class TaskCancelled(Exception):
    """Raised by work that noticed a cancel request; reported as ``cancelled``, not as an error."""


class _Dispatcher(QObject):
    """The one bridge from worker threads to the UI thread, alive as long as the application.

    Workers emit ``event(task_id, kind, payload)``; the queued connection runs :meth:`_deliver`
    on the UI thread, which hands the event to the task's :class:`TaskHandle` if it still exists.
    Worker threads therefore never hold a reference to a per-task QObject, so no Qt object is
    ever destroyed, or has its Python wrapper released, on a worker thread.
    """

    event = Signal(int, str, object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.handles: dict[int, weakref.ref] = {}
        self.event.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    @Slot(int, str, object)
    def _deliver(self, task_id: int, kind: str, payload) -> None:
        ref = self.handles.get(task_id) if kind == "progress" else self.handles.pop(task_id, None)
        handle = ref() if ref is not None else None
        if handle is not None and shiboken6.isValid(handle):
            handle._deliver(kind, payload)


_dispatcher: _Dispatcher | None = None
_ids = itertools.count(1)


def _get_dispatcher() -> _Dispatcher:
    """The dispatcher, created on first use (from the UI thread) as a child of the application."""
    global _dispatcher
    if _dispatcher is None or not shiboken6.isValid(_dispatcher):
        _dispatcher = _Dispatcher(QCoreApplication.instance())
    return _dispatcher


class TaskState:
    """What the running callable sees: progress reporting and the cancel flag.

    Both methods are thread-safe and cheap; ``set_progress`` is rate-limited so that
    a callable that reports once per file does not flood the UI event loop.
    """

    def __init__(self, dispatcher: _Dispatcher, task_id: int, stop: threading.Event):
        self._dispatcher = dispatcher
        self._task_id = task_id
        self._stop = stop
        self._last_emit = 0.0
        self.started = time.monotonic()

    def set_progress(
        self, done: int, total: int | None, message: str = "", eta_s: float | None = None
    ) -> None:
        """Report ``done`` out of ``total`` (``total`` 0 or None: unknown), with the seconds left when
        the work knows them better than its count does (else they come from the pace); may be throttled."""
        total = int(total or 0)
        now = time.monotonic()
        if done < total and now - self._last_emit < PROGRESS_INTERVAL_S:
            return
        self._last_emit = now
        eta = float(eta_s) if isinstance(eta_s, (int, float)) else None
        self._dispatcher.event.emit(self._task_id, "progress", (int(done), total, str(message or ""), eta))

    def is_interruption_requested(self) -> bool:
        """True once the UI asked the task to stop."""
        return self._stop.is_set()

    def check(self) -> None:
        """Raise :class:`TaskCancelled` if a stop was requested."""
        if self._stop.is_set():
            raise TaskCancelled()

    def _report(self, kind: str, payload=None) -> None:
        self._dispatcher.event.emit(self._task_id, kind, payload)


class TaskHandle(QObject):
    """The UI-thread face of one background task.

    Signals
    -------
    progress(done, total, message, eta_s)
        ``eta_s`` is -1 while unknown.
    finished(result)
        The callable returned ``result``.
    failed(message, details)
        The callable raised; ``details`` is the traceback (also logged).
    cancelled()
        The task stopped after :meth:`cancel` (or raised :class:`TaskCancelled`).
    ended()
        Sent once after any of the three outcomes.
    """

    progress = Signal(int, int, str, float)
    finished = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal()
    ended = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._stop = threading.Event()
        self.task_id = next(_ids)
        dispatcher = _get_dispatcher()
        dispatcher.handles[self.task_id] = weakref.ref(self)
        self.state = TaskState(dispatcher, self.task_id, self._stop)
        self.running = True
        self.result: Any = None

    def cancel(self) -> None:
        """Ask the task to stop; it ends with ``cancelled`` when the callable notices."""
        self._stop.set()

    def is_cancel_requested(self) -> bool:
        return self._stop.is_set()

    def _deliver(self, kind: str, payload) -> None:
        if kind == "progress":
            if self.running:
                self._on_progress(*payload)
            return
        self.running = False
        if kind == "done":
            self.result = payload
            if self._stop.is_set():
                self.cancelled.emit()
            else:
                self.finished.emit(payload)
        elif kind == "error":
            self.failed.emit(*payload)
        else:
            self.cancelled.emit()
        self.ended.emit()

    def _on_progress(self, done: int, total: int, message: str, eta_s: float | None = None) -> None:
        eta = -1.0
        elapsed = time.monotonic() - self.state.started
        if eta_s is not None:
            eta = max(eta_s, 0.0)
        elif total > 0 and done > 0 and elapsed > 0.5:
            eta = elapsed * (total - done) / done
        self.progress.emit(done, total, message, eta)


class _Runnable(QRunnable):
    def __init__(self, fn: Callable[[TaskState], Any], state: TaskState):
        super().__init__()
        self.setAutoDelete(True)
        self._fn = fn
        self._state = state

    def run(self) -> None:  # worker thread
        state, fn = self._state, self._fn
        self._fn = None  # drop captured objects here rather than when the pool deletes the runnable
        try:
            result = fn(state)
        except TaskCancelled:
            state._report("cancelled")
        except Exception as exc:  # reported to the UI as a readable dialog, and logged
            log.exception("background task failed")
            message = str(exc) or type(exc).__name__
            state._report("error", (message, traceback.format_exc()))
        else:
            state._report("done", result)


def run_task(
    fn: Callable[[TaskState], Any], *, pool: QThreadPool | None = None, parent: QObject | None = None
) -> TaskHandle:
    """Run ``fn(state)`` in ``pool`` (the global pool by default); return its handle.

    Keep a reference to the handle until it ends, or give it a ``parent``: then it is deleted
    (``deleteLater``) once it has ended and its signals were delivered.
    """
    handle = TaskHandle(parent)
    if parent is not None:
        handle.ended.connect(handle.deleteLater)  # do not pile up finished handles under the parent
    runnable = _Runnable(fn, handle.state)
    (pool or QThreadPool.globalInstance()).start(runnable)
    return handle
