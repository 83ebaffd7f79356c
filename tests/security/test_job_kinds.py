"""A workspace database from someone else names the function a job runs (``module:function``). The
queue runs only the job kinds the app registered, with the target it registered: a job row naming any
other function fails without that function ever being imported or called."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from modeldesk.scheduler import JobQueue
from modeldesk.scheduler.jobstore import JobStore

HERE = Path(__file__).resolve().parent


@pytest.fixture
def attacker_module_importable(monkeypatch):
    """``evil_jobs`` is importable by the worker process, as any installed module would be."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
    monkeypatch.syspath_prepend(str(HERE))
    sys.modules.pop("evil_jobs", None)


def _planted(db, kind, target, marker):
    store = JobStore(db)
    store.create()
    return store.insert(kind, target, {"marker": str(marker)}, None, db.parent / "logs" / "jobs")


@pytest.mark.parametrize(
    "kind, words", [("train", "changed outside ModelDesk"), ("evil", "not one this app runs")]
)
def test_a_planted_job_row_never_runs(kind, words, tmp_path, attacker_module_importable):
    import modeldesk.app.workspace as workspace
    import modeldesk.scheduler as scheduler

    for name, target in getattr(workspace, "APP_JOB_KINDS", {}).items():  # as the Workspace registers them
        scheduler.register_job_kind(name, target)
    db, marker = tmp_path / "workspace.db", tmp_path / "ran.txt"
    job = _planted(db, kind, "evil_jobs:plant", marker)
    queue = JobQueue(db, grace_s=2)  # starts queued jobs, as the app does on open
    try:
        final = queue.wait(job, timeout=60)
    finally:
        queue.close(cancel_running=True, timeout=5)
    assert final["state"] == "failed" and words in final["error"]
    assert not final["resumable"]
    assert not marker.exists()
    assert "evil_jobs" not in sys.modules


def test_submit_and_the_worker_refuse_unregistered_targets(tmp_path, attacker_module_importable):
    from modeldesk.scheduler.worker import main as worker_main

    db, marker = tmp_path / "workspace.db", tmp_path / "ran.txt"
    queue = JobQueue(db, autostart=False)
    with pytest.raises(ValueError, match="not one this app runs"):
        queue.submit("evil", "evil_jobs:plant", {"marker": str(marker)})
    job = _planted(db, "train", "evil_jobs:plant", marker)
    JobStore(db).set_state(job, "running", where_state="queued")
    # the worker itself checks the row against the target its launcher passed
    assert worker_main([str(db), str(job), "modeldesk.app.training_job:run_training"]) == 1
    assert worker_main([str(db), str(job)]) == 2  # no target given: it runs nothing
    assert not marker.exists()
