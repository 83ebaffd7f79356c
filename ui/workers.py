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
>>> handle = run_task(lambda state: ws.import_data(p, path, progress=state.set_progress,
...                                                should_stop=state.is_interruption_requested))
>>> handle.progress.connect(panel.set_progress)
>>> handle.finished.connect(show_summary)
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal, Slot

log = logging.getLogger(__name__)

#: At most one progress signal per this many seconds (the last one is always sent).
PROGRESS_INTERVAL_S = 0.05


class TaskCancelled(Exception):
    """Raised by work that noticed a cancel request; reported as ``cancelled``, not as an error."""


class _Emitter(QObject):
    """Carries signals from the worker thread; connected *queued* to the handle."""

    progress = Signal(int, int, str)
    done = Signal(object)
    error = Signal(str, str)
    cancelled = Signal()


class TaskState:
    """What the running callable sees: progress reporting and the cancel flag.

    Both methods are thread-safe and cheap; ``set_progress`` is rate-limited so that
    a callable that reports once per file does not flood the UI event loop.
    """

    def __init__(self, emitter: _Emitter, stop: threading.Event):
        self._emitter = emitter
        self._stop = stop
        self._last_emit = 0.0
        self.started = time.monotonic()

    def set_progress(self, done: int, total: int | None, message: str = "") -> None:
        """Report ``done`` out of ``total`` (``total`` 0 or None: unknown); may be throttled."""
        total = int(total or 0)
        now = time.monotonic()
        if done < total and now - self._last_emit < PROGRESS_INTERVAL_S:
            return
        self._last_emit = now
        self._emitter.progress.emit(int(done), int(total), str(message or ""))

    def is_interruption_requested(self) -> bool:
        """True once the UI asked the task to stop."""
        return self._stop.is_set()

    def check(self) -> None:
        """Raise :class:`TaskCancelled` if a stop was requested."""
        if self._stop.is_set():
            raise TaskCancelled()


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
        # parented: deleted with the handle on the UI thread, never by the worker dropping its reference
        self._emitter = _Emitter(self)
        self._emitter.progress.connect(self._on_progress, Qt.ConnectionType.QueuedConnection)
        self._emitter.done.connect(self._on_done, Qt.ConnectionType.QueuedConnection)
        self._emitter.error.connect(self._on_error, Qt.ConnectionType.QueuedConnection)
        self._emitter.cancelled.connect(self._on_cancelled, Qt.ConnectionType.QueuedConnection)
        self.state = TaskState(self._emitter, self._stop)
        self.running = True
        self.result: Any = None

    def cancel(self) -> None:
        """Ask the task to stop; it ends with ``cancelled`` when the callable notices."""
        self._stop.set()

    def is_cancel_requested(self) -> bool:
        return self._stop.is_set()

    @Slot(int, int, str)
    def _on_progress(self, done: int, total: int, message: str) -> None:
        if not self.running:
            return
        eta = -1.0
        elapsed = time.monotonic() - self.state.started
        if total > 0 and done > 0 and elapsed > 0.5:
            eta = elapsed * (total - done) / done
        self.progress.emit(done, total, message, eta)

    @Slot(object)
    def _on_done(self, result: Any) -> None:
        self.running = False
        self.result = result
        if self._stop.is_set():
            self.cancelled.emit()
        else:
            self.finished.emit(result)
        self.ended.emit()

    @Slot(str, str)
    def _on_error(self, message: str, details: str) -> None:
        self.running = False
        self.failed.emit(message, details)
        self.ended.emit()

    @Slot()
    def _on_cancelled(self) -> None:
        self.running = False
        self.cancelled.emit()
        self.ended.emit()


class _Runnable(QRunnable):
    def __init__(self, fn: Callable[[TaskState], Any], state: TaskState, emitter: _Emitter):
        super().__init__()
        self.setAutoDelete(True)
        self._fn = fn
        self._state = state
        self._emitter = emitter

    def run(self) -> None:  # worker thread
        try:
            result = self._fn(self._state)
        except TaskCancelled:
            self._emitter.cancelled.emit()
        except Exception as exc:  # reported to the UI as a readable dialog, and logged
            log.exception("background task failed")
            message = str(exc) or type(exc).__name__
            self._emitter.error.emit(message, traceback.format_exc())
        else:
            self._emitter.done.emit(result)


def run_task(fn: Callable[[TaskState], Any], *, pool: QThreadPool | None = None,
             parent: QObject | None = None) -> TaskHandle:
    """Run ``fn(state)`` in ``pool`` (the global pool by default); return its handle.

    Keep a reference to the handle until it ends, or give it a ``parent``: then it is deleted
    (``deleteLater``) once it has ended and its signals were delivered.
    """
    handle = TaskHandle(parent)
    if parent is not None:
        handle.ended.connect(handle.deleteLater)  # do not pile up finished handles under the parent
    runnable = _Runnable(fn, handle.state, handle._emitter)
    (pool or QThreadPool.globalInstance()).start(runnable)
    return handle
