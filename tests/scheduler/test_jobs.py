"""The job queue: worker processes, events, cancel, resume, crashes and killed workers."""

import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from modeldesk.scheduler import JobQueue, register_job_kind

HERE = Path(__file__).resolve().parent
MODULE = "scheduler_testjobs"
# The queue runs only registered kinds (tests/security/test_job_kinds.py checks that it refuses others).
for _kind, _function in {
    "count": "count_items",
    "sleep": "sleeper",
    "quick": "quick",
    "crash": "crash",
}.items():
    register_job_kind(_kind, f"{MODULE}:{_function}")
register_job_kind("x", "pkg.mod:fn")


@pytest.fixture
def queue(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    monkeypatch.syspath_prepend(str(HERE))
    q = JobQueue(tmp_path / "workspace.db", grace_s=5)
    yield q
    q.close(cancel_running=True, timeout=5)


def _wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def test_cancel_mid_run_then_resume_does_no_item_twice(queue, tmp_path):
    calls = tmp_path / "calls.log"
    params = {
        "n": 40,
        "seconds_per_item": 0.04,
        "cache": str(tmp_path / "cache"),
        "calls": str(calls),
        "cost_dir": str(tmp_path / "cost"),
    }
    job = queue.submit("count", f"{MODULE}:count_items", params)
    _wait_for(lambda: (queue.get(job)["fraction"] or 0) >= 0.2)
    assert queue.cancel(job)
    first = queue.wait(job, timeout=20)
    assert first["state"] == "cancelled"
    assert first["resumable"]
    done_first = calls.read_text().split()
    assert 0 < len(done_first) < 40

    queue.resume(job)
    final = queue.wait(job, timeout=30)
    assert final["state"] == "done", queue.log_text(job)
    assert final["result"]["sum"] == sum(2 * i for i in range(40))
    assert final["result"]["attempt"] == 2
    assert final["result"]["resumed_from"] > 0  # the checkpoint reached the second run
    done_all = calls.read_text().split()
    assert sorted(map(int, done_all)) == list(range(40))  # every item computed exactly once
    states = [e["stage"] for e in queue.events(job) if e["type"] == "state"]
    assert states == ["queued", "running", "cancelled", "queued", "running", "done"]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkilled_worker_marks_job_failed_and_queue_stays_usable(queue, tmp_path):
    pid_file = tmp_path / "pid"
    job = queue.submit("sleep", f"{MODULE}:sleeper", {"pid_file": str(pid_file), "seconds": 30})
    _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip())  # written, not just created
    pid = int(pid_file.read_text())
    assert pid != os.getpid()
    os.kill(pid, signal.SIGKILL)
    killed = queue.wait(job, timeout=15)
    assert killed["state"] == "failed"
    assert killed["resumable"]
    assert "SIGKILL" in killed["error"]
    assert "SIGKILL" in queue.log_text(job)

    other = queue.submit("quick", f"{MODULE}:quick", {"value": 21})
    assert queue.wait(other, timeout=20)["result"] == {"value": 42}
    queue.resume(job)
    resumed = queue.wait(job, timeout=20)
    assert resumed["state"] == "done"
    assert resumed["result"] == {"attempt": 2}


def test_job_left_running_by_a_dead_process_is_reaped_on_open(tmp_path, monkeypatch):
    db = tmp_path / "workspace.db"
    first = JobQueue(db, autostart=False)
    job = first.submit("sleep", f"{MODULE}:sleeper", {"pid_file": str(tmp_path / "pid")})
    # As if an app crashed while its worker ran: 'running', with a pid that no longer exists.
    first.store.update(job, state="running", pid=2**22 + 12345, pid_started=1.0, started_at=time.time() - 100)
    second = JobQueue(db, autostart=False)
    reaped = second.get(job)
    assert reaped["state"] == "failed"
    assert reaped["resumable"]


def test_crashing_job_is_failed_with_traceback_in_its_log(queue):
    job = queue.submit("crash", f"{MODULE}:crash", {"tag": "xyz"})
    result = queue.wait(job, timeout=20)
    assert result["state"] == "failed"
    assert result["error"] == "RuntimeError: deliberate failure xyz"
    text = queue.log_text(job)
    assert "Traceback (most recent call last)" in text
    assert "deliberate failure xyz" in text
    assert any(e["message"] == "about to fail" for e in queue.events(job))


def test_events_waiting_and_subscribers_see_progress_in_order(queue):
    seen, received = [], []
    job = queue.submit("quick", f"{MODULE}:quick", {"value": 1})
    unsubscribe = queue.subscribe(job, received.append)
    final = queue.wait(job, on_event=seen.append, timeout=20)
    assert final["state"] == "done" and final["result"] == {"value": 2}
    progress = [e for e in seen if e["type"] == "progress"]
    assert [e["stage"] for e in progress] == ["one", "two"]
    assert progress[0]["metrics"] == {"loss": 0.25}
    assert [e["seq"] for e in seen] == sorted(e["seq"] for e in seen)
    assert queue.events(job, after_seq=seen[-2]["seq"]) == [seen[-1]]
    _wait_for(lambda: any(e["type"] == "state" and e["stage"] == "done" for e in received), timeout=5)
    assert [e["seq"] for e in received] == [e["seq"] for e in seen]
    unsubscribe()


def test_cancel_terminates_a_job_that_ignores_it_after_the_grace_period(queue, tmp_path):
    pid_file = tmp_path / "pid"
    job = queue.submit(
        "sleep", f"{MODULE}:sleeper", {"pid_file": str(pid_file), "seconds": 60, "ignore_cancel": True}
    )
    _wait_for(pid_file.exists)
    assert queue.cancel(job, grace_s=0.3)
    result = queue.wait(job, timeout=20)
    assert result["state"] == "cancelled"
    message = [e for e in queue.events(job) if e["type"] == "state"][-1]["message"]
    assert "grace period" in message
    assert sys.platform == "win32" or "SIGTERM" in message


def test_queued_jobs_run_one_at_a_time_and_can_be_cancelled_before_starting(queue, tmp_path):
    pid_file = tmp_path / "pid"
    running = queue.submit("sleep", f"{MODULE}:sleeper", {"pid_file": str(pid_file), "seconds": 30})
    waiting = queue.submit("quick", f"{MODULE}:quick", {"value": 3})
    _wait_for(pid_file.exists)
    assert queue.get(waiting)["state"] == "queued"
    assert queue.cancel(waiting)
    assert queue.get(waiting)["state"] == "cancelled"
    queue.cancel(running)
    assert queue.wait(running, timeout=20)["state"] == "cancelled"
    assert not queue.cancel(running)  # already finished


def test_run_inline_and_own_tables_only(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    db = tmp_path / "workspace.db"
    with sqlite3.connect(db) as other:
        other.execute("CREATE TABLE samples (id INTEGER PRIMARY KEY, name TEXT)")
        other.execute("INSERT INTO samples (name) VALUES ('kept')")
    queue = JobQueue(db, autostart=False)
    job = queue.submit("quick", f"{MODULE}:quick", {"value": 5})
    assert queue.get(job)["state"] == "queued"
    assert queue.run_inline(job)["result"] == {"value": 10}
    failing = queue.submit("crash", f"{MODULE}:crash", {})
    assert queue.run_inline(failing)["state"] == "failed"  # recorded, not raised
    with pytest.raises(ValueError):
        queue.run_inline(job)
    with sqlite3.connect(db) as other:
        assert other.execute("SELECT name FROM samples").fetchall() == [("kept",)]
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in other.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"jobs", "job_events", "samples"} <= tables


def test_submit_rejects_bad_targets_and_params(tmp_path):
    queue = JobQueue(tmp_path / "workspace.db", autostart=False)
    with pytest.raises(ValueError):
        queue.submit("x", "not a target", {})
    with pytest.raises(ValueError):
        queue.submit("x", "pkg.mod:fn", {"bad": object()})
    with pytest.raises(ValueError):
        queue.resume(queue.submit("x", "pkg.mod:fn", {}))  # queued, not resumable


def test_a_worker_that_exits_after_its_store_was_removed_leaves_no_database_behind(tmp_path):
    """A throw-away workspace (a benchmark's) is closed and deleted while a worker is still exiting: the
    monitor must not read the store, which would create an empty database in the folder being deleted."""
    folder = tmp_path / "ws"
    folder.mkdir()
    queue = JobQueue(folder / "workspace.db", autostart=False)
    queue.close()
    (folder / "workspace.db").unlink()

    class Exited:
        def wait(self):
            return 0

    queue._monitor(1, 1, Exited())
    assert not (folder / "workspace.db").exists()
