"""Closing a workspace stops this process's background work on it."""

from __future__ import annotations

import shutil

from modeldesk.app.workspace import Workspace


class _ExitedWorker:
    def wait(self):
        return 0


def test_a_job_worker_exiting_after_its_workspace_was_closed_and_removed_leaves_nothing(tmp_path):
    """A benchmark trains in a throw-away workspace, closes it and deletes it while the job's worker is
    still exiting: its monitor must not reopen the database in the folder being deleted."""
    ws = Workspace(tmp_path / "ws", cleanup=False)
    queue = ws.jobs
    ws.close()
    shutil.rmtree(tmp_path / "ws")
    queue._monitor(1, 1, _ExitedWorker())
    assert not (tmp_path / "ws").exists()
