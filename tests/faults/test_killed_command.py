"""Killing a command that waits for its job (``modeldesk train``; SIGKILL, SIGTERM or Ctrl+C) cancels
that job: no worker runs on to write a model nobody asked for any more."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from modeldesk.scheduler.jobstore import JobStore

HERE = Path(__file__).resolve().parent
RUN_S = 15.0

# What the command line does for `train`: open the workspace as commands do, submit, wait.
COMMAND = """
import argparse, sys
from modeldesk.app.cli import open_workspace
from modeldesk.scheduler import register_job_kind

register_job_kind("slow", "slow_jobs:run_slow")
ws = open_workspace(argparse.Namespace(workspace=sys.argv[1]))
job = ws.jobs.submit("slow", "slow_jobs:run_slow", {"seconds": float(sys.argv[3]), "marker": sys.argv[2]})
print(job, flush=True)
ws.wait_job(job)
"""


def _running_job(store: JobStore, job: int, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = store.get(job)
        if row["state"] == "running" and row["pid"]:
            return row
        time.sleep(0.05)
    raise AssertionError(f"job {job} never started: {store.get(job)}")


@pytest.mark.skipif(os.name != "posix", reason="signals as on Linux and macOS")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_killed_command_cancels_its_job(how, tmp_path):
    ws, marker = tmp_path / "ws", tmp_path / "finished.txt"
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(HERE)]))
    )
    command = subprocess.Popen(
        [sys.executable, "-c", COMMAND, str(ws), str(marker), str(RUN_S)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        job = int(command.stdout.readline())
        store = JobStore(ws / "workspace.db")
        worker = _running_job(store, job)["pid"]
        command.send_signal(how)
        command.wait(timeout=30)
        deadline = time.monotonic() + RUN_S + 10
        while store.get(job)["state"] == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
        final = store.get(job)
        assert final["state"] == "cancelled", final
        try:
            psutil.Process(worker).wait(timeout=10)
        except psutil.NoSuchProcess:
            pass
        assert not psutil.pid_exists(worker) or psutil.Process(worker).status() == psutil.STATUS_ZOMBIE
        assert not marker.exists()
    finally:
        if command.poll() is None:
            command.kill()
        command.wait()
