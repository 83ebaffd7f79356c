"""Follow long work from the UI: queued jobs (:class:`JobWatcher`) and a page's thread-pool tasks
(:class:`TaskGroup`), reported through Qt signals.

The job queue writes events to SQLite; the watcher reads the new ones (``ws.job_events(job_id,
after_seq)``) every 200 ms from a QTimer, in a thread of its own (a database read can wait on a lock),
and re-emits them on the UI thread. Watching a job that already ran replays its events, so a page
opened mid-run redraws its whole curve.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QThreadPool, QTimer, Signal

from modeldesk.ui.workers import run_task

log = logging.getLogger(__name__)

DONE_STATES = frozenset({"done"})
FAILED_STATES = frozenset({"failed"})
CANCELLED_STATES = frozenset({"cancelled"})
TERMINAL_STATES = DONE_STATES | FAILED_STATES | CANCELLED_STATES


def event_state(event: dict) -> str | None:
    """The job state a queue event announces (``type == "state"`` events carry it in ``stage``)."""
    if event.get("type") == "state":
        return event.get("stage")
    return event.get("state")


#: Ask the queue for the job's status every this many polls even without events (a crashed worker
#: process writes no final event; the queue's status notices it).
STATUS_EVERY = 5


class JobWatcher(QObject):
    """Poll one job's events off the UI thread and emit them on it.

    Every ``interval_ms`` a read of the new events (and, when the job may have ended, of the job row)
    runs in a one-thread pool of the watcher's own, so a busy global pool or a slow database never
    delays the UI; at most one read is in flight.

    Parameters
    ----------
    source : the Workspace, or anything with its ``job_events(job_id, after_seq)`` and ``job(job_id)``.
    interval_ms : polling period.

    Signals
    -------
    progress(event)
        Every new event dict (``seq``, ``type``, ``stage``, ``fraction``, ``eta_s``, ``metrics``, ``message``).
    finished(job)
        The job ended well; ``job`` is ``source.job(job_id)`` (its ``result`` holds the model id).
    failed(message)
        The job failed; the message is the job's error, readable.
    cancelled()
        The job was cancelled.
    """

    progress = Signal(dict)
    finished = Signal(dict)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, source, interval_ms: int = 200, parent: QObject | None = None):
        super().__init__(parent)
        self.source = source
        self.job_id: int | None = None
        self.after_seq = 0
        self.last_status: dict | None = None
        self._polls = 0
        self._generation = 0
        self._inflight = None
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._timer = QTimer(self)
        self._timer.setInterval(int(interval_ms))
        self._timer.timeout.connect(self.poll)

    @property
    def active(self) -> bool:
        """True while a job is being followed."""
        return self._timer.isActive()

    def watch(self, job_id: int, after_seq: int = 0) -> None:
        """Start following ``job_id`` from the event after ``after_seq`` (0 replays them all)."""
        self._generation += 1
        self.last_status = None
        self.job_id = int(job_id)
        self.after_seq = int(after_seq)
        self._polls = 0
        self._timer.start()
        self.poll()

    def stop(self) -> None:
        """Stop following (the job itself goes on); a read in flight is ignored."""
        self._generation += 1
        self._timer.stop()

    def poll(self) -> None:
        """Start one background read of the new events, unless one is still running."""
        if self.job_id is None or self._inflight is not None or not self._timer.isActive():
            return
        source, job_id, after = self.source, self.job_id, self.after_seq
        check_status = self._polls % STATUS_EVERY == 0
        self._polls += 1
        generation = self._generation

        def read(state):
            events = source.job_events(job_id, after)
            status = None
            if check_status or any(event_state(e) in TERMINAL_STATES for e in events):
                status = source.job(job_id)
                if status.get("state") in TERMINAL_STATES:  # events written just before the end
                    events += source.job_events(job_id, events[-1]["seq"] if events else after)
            return events, status

        handle = run_task(read, pool=self._pool, parent=self)
        self._inflight = handle
        handle.finished.connect(lambda result: self._apply(generation, job_id, *result))
        handle.failed.connect(lambda message, details: self._read_failed(generation, job_id, message))
        handle.ended.connect(self._read_ended)

    def _read_ended(self) -> None:
        self._inflight = None  # run_task deletes the handle once it has ended

    def _read_failed(self, generation: int, job_id: int, message: str) -> None:
        if generation != self._generation:
            return
        log.error("reading the progress of job %s failed: %s", job_id, message)
        self.stop()
        self.failed.emit(f"Could not read the progress of training run {job_id}: {message}")

    def _apply(self, generation: int, job_id: int, events: list, status: dict | None) -> None:
        for event in events:
            if generation != self._generation:  # stopped, or a slot switched to another job
                return
            self.after_seq = max(self.after_seq, int(event.get("seq", self.after_seq)))
            self.progress.emit(dict(event))
        if generation != self._generation or status is None or status.get("state") not in TERMINAL_STATES:
            return
        self.stop()
        self.last_status = dict(status)
        state = status["state"]
        if state in DONE_STATES:
            self.finished.emit(dict(status))
        elif state in CANCELLED_STATES:
            self.cancelled.emit()
        else:
            self.failed.emit(status.get("error") or f"Training run {job_id} stopped with an error.")


class TaskGroup(QObject):
    """The thread-pool tasks of one page: starts them, keeps their handles, reports their errors.

    Parameters
    ----------
    report_error : callable(title, message, details)
        Shows a failure (the pages pass one that opens the error dialog with the log file).
    pool : QThreadPool, optional
        Where the tasks run (the global pool by default).

    Signals
    -------
    idle() : the last running task ended.
    """

    idle = Signal()

    def __init__(self, report_error, parent: QObject | None = None, pool: QThreadPool | None = None):
        super().__init__(parent)
        self.report_error = report_error
        self.pool = pool
        self.handles = set()

    @property
    def busy(self) -> bool:
        """True while any task of the group runs."""
        return bool(self.handles)

    def run(
        self,
        fn,
        on_done=None,
        *,
        title: str = "Something went wrong",
        on_failed=None,
        on_cancelled=None,
        panel=None,
        panel_title: str = "",
    ):
        """Run ``fn(state)`` off the UI thread; ``on_done(result)`` runs on the UI thread.

        A failure goes to ``on_failed(message, details)`` when given, else to the error dialog
        titled ``title``. With ``panel`` (a ProgressPanel) the task shows progress and can be cancelled.
        """
        handle = run_task(fn, pool=self.pool, parent=self)
        handle.setObjectName(getattr(fn, "__qualname__", "task"))  # names what is running, for logs and tests
        self.handles.add(handle)
        if on_done is not None:
            handle.finished.connect(on_done)
        if on_failed is not None:
            handle.failed.connect(on_failed)
        else:
            handle.failed.connect(lambda message, details: self.report_error(title, message, details))
        if on_cancelled is not None:
            handle.cancelled.connect(on_cancelled)
        if panel is not None:
            panel.attach(handle, panel_title)
        handle.ended.connect(lambda: self._ended(handle))
        return handle

    def cancel_all(self) -> None:
        """Ask every running task to stop."""
        for handle in list(self.handles):
            handle.cancel()

    def _ended(self, handle) -> None:
        self.handles.discard(handle)  # run_task deletes the handle (deleteLater) once it has ended
        if not self.handles:
            self.idle.emit()
