"""JobWatcher against a small in-memory queue with the JobQueue reading interface."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtWidgets import QWidget

from modeldesk.ui.job_watcher import JobWatcher


class MemoryQueue:
    """The Workspace's ``job_events(job_id, after_seq)`` and ``job(job_id)`` over lists a test appends to."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows: list[dict] = []
        self.state = "running"
        self.result = None
        self.error = None
        self.reader_threads = set()

    def add(self, **event):
        with self.lock:
            self.rows.append({"seq": len(self.rows) + 1, "type": "progress", **event})

    def end(self, state, **extra):
        with self.lock:
            self.state = state
            self.rows.append({"seq": len(self.rows) + 1, "type": "state", "stage": state})
            for key, value in extra.items():
                setattr(self, key, value)

    def job_events(self, job_id, after_seq=0):
        self.reader_threads.add(threading.get_ident())
        with self.lock:
            return [dict(e) for e in self.rows if e["seq"] > after_seq]

    def job(self, job_id):
        with self.lock:
            return {"id": job_id, "state": self.state, "result": self.result, "error": self.error}


@pytest.fixture
def make_watcher(qtbot):
    """Watchers parented to a widget that outlives the test's signal blockers (as the pages do)."""
    holder = QWidget()
    qtbot.addWidget(holder)
    return lambda queue, interval_ms: JobWatcher(queue, interval_ms=interval_ms, parent=holder)


def test_events_arrive_in_order_then_the_result(qtbot, make_watcher):
    queue = MemoryQueue()
    watcher = make_watcher(queue, 20)
    seen = []
    watcher.progress.connect(seen.append)
    queue.add(stage="Extracting features", fraction=0.1)
    watcher.watch(7)
    qtbot.waitUntil(lambda: len(seen) == 1, timeout=5000)
    queue.add(stage="Tuning", fraction=0.8, metrics={"cv_accuracy": 0.9})
    with qtbot.waitSignal(watcher.finished, timeout=5000) as done:
        queue.end("done", result={"model": "m-1"})
    assert [e["seq"] for e in seen] == [1, 2, 3]
    assert done.args[0]["result"] == {"model": "m-1"}
    assert not watcher.active
    assert threading.get_ident() not in queue.reader_threads, "reads happen off the UI thread"


def test_failed_and_cancelled_jobs(qtbot, make_watcher):
    queue = MemoryQueue()
    watcher = make_watcher(queue, 20)
    watcher.watch(1)
    with qtbot.waitSignal(watcher.failed, timeout=5000) as failed:
        queue.end("failed", error="worker process killed by SIGKILL")
    assert failed.args == ["worker process killed by SIGKILL"]
    queue = MemoryQueue()
    watcher = make_watcher(queue, 20)
    with qtbot.waitSignal(watcher.cancelled, timeout=5000):
        watcher.watch(2)
        queue.end("cancelled")


def test_a_crash_without_a_final_event_is_noticed_from_the_job_row(qtbot, make_watcher):
    queue = MemoryQueue()
    watcher = make_watcher(queue, 10)
    watcher.watch(3)
    with qtbot.waitSignal(watcher.failed, timeout=5000):
        with queue.lock:
            queue.state, queue.error = "failed", "worker process is gone"


def test_replay_skips_old_events_after_resume_and_stop_ignores_reads(qtbot, make_watcher):
    queue = MemoryQueue()
    queue.add(stage="Extracting features", fraction=0.3)
    queue.end("cancelled")
    with queue.lock:
        queue.state = "running"  # resumed
    watcher = make_watcher(queue, 20)
    seen = []
    watcher.progress.connect(seen.append)
    watcher.watch(4, after_seq=2)
    queue.add(stage="Extracting features", fraction=0.5)
    qtbot.waitUntil(lambda: len(seen) == 1, timeout=5000)
    assert seen[0]["seq"] == 3 and watcher.active
    watcher.stop()
    queue.add(stage="Tuning", fraction=0.9)
    qtbot.wait(100)
    assert len(seen) == 1
