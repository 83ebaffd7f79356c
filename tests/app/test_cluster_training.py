"""Training through the CLI on a local Dask scheduler with two `modeldesk worker` processes.

One worker dies at the start of its second chunk (after its first chunk's result was delivered): the
run still ends with every feature in the cache exactly once, the same features as a run on this
machine alone, and a model that predicts the same.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import time

import numpy as np
import pytest

from modeldesk.app.cli import main

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow

# A `modeldesk worker` whose chunk function exits the process once its first chunk's result has
# left the worker (so that chunk counts as done), as a crash in the middle of a run would.
DIES_ON_SECOND_CHUNK = """
import os, sys, time
import modeldesk.scheduler.cluster as cluster
real, calls = cluster._call, []
def dying(fn, *args):
    calls.append(1)
    if len(calls) == 2:
        from distributed import get_worker
        worker, deadline = get_worker(), time.monotonic() + 60
        while any(str(k).startswith("_call") for k in list(worker.data)) and time.monotonic() < deadline:
            time.sleep(0.02)
        os._exit(3)
    return real(fn, *args)
cluster._call = dying
from modeldesk.app.cli import main
sys.exit(main(["worker", *sys.argv[1:]]))
"""


def cli(workspace, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*map(str, args), "--workspace", str(workspace), "--json"])
    assert code == 0, f"modeldesk {args} exited {code}"
    return json.loads(out.getvalue())


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """A scheduler started by `modeldesk cluster start` and two workers, one of them doomed."""
    monkeypatch.setenv("MODELDESK_WORKER_CACHE", str(tmp_path / "worker-cache"))
    workspace = tmp_path / "ws"
    started = cli(workspace, "cluster", "start", "--port", "0")
    address, credentials = started["address"], started["credentials"]
    assert address.startswith("tls://127.0.0.1:")  # mutual TLS on loopback too
    common = [
        address,
        "--credentials",
        credentials,
        "--nthreads",
        "1",
        "--cache",
        str(tmp_path / "worker-cache"),
    ]
    workers = [
        subprocess.Popen([sys.executable, "-m", "modeldesk", "worker", *common, "--name", "steady"]),
        subprocess.Popen([sys.executable, "-c", DIES_ON_SECOND_CHUNK, *common, "--name", "doomed"]),
    ]
    try:
        from modeldesk.scheduler.cluster import DaskBackend
        from modeldesk.scheduler.cluster_service import load_security

        with DaskBackend(address, security=load_security(credentials)) as backend:
            deadline = time.monotonic() + 120
            while len(backend.workers()) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
        found = cli(workspace, "devices", "--cluster", address)["cluster"]["workers"]
        assert {w["name"] for w in found} == {"steady", "doomed"}
        assert all(w["refused"] is None and w["cores"] == 1 for w in found)
        yield workspace, address, workers
    finally:
        for process in workers:
            process.kill()
            process.wait(30)
        cli(workspace, "cluster", "stop")


def _cached(workspace) -> dict:
    root = workspace / "cache" / "features"
    return {path.stem: np.load(path) for path in root.glob("*/embedding/identity/*.npy")}


def test_training_on_two_workers_survives_one_dying(cluster, tmp_path, shapes_folder, holdout_folder):
    workspace, address, (steady, doomed) = cluster
    local = tmp_path / "local"
    for ws in (workspace, local):
        cli(ws, "project", "create", "shapes", "--task", "image-classification")
        cli(ws, "import", "shapes", shapes_folder)

    result = cli(workspace, "train", "shapes", "--template", "image-classification/fast")  # the setting
    alone = cli(local, "train", "shapes", "--template", "image-classification/fast", "--cluster", "off")

    plan = result["plan"]
    rows = {row["note"]: row for row in plan["per_device"] if row["name"].startswith("dask:")}
    assert set(rows) == {"steady", "doomed"}, plan
    assert rows["steady"]["items"] > 0 and rows["doomed"]["items"] > 0, plan  # both workers did work
    assert rows["doomed"]["lost_chunks"] >= 1 and doomed.poll() == 3, plan  # ... and one died mid-run
    assert any("was lost during the run" in note for note in plan["notes"])
    n_images = 36
    assert sum(row["items"] for row in plan["per_device"]) == n_images, plan
    assert all(row["estimated_items_per_s"] for row in plan["per_device"]), plan  # every device measured
    assert plan["eta_s"] > 0 and plan["actual_s"] > 0
    assert all(d["name"] == "cpu" for d in alone["plan"]["devices"])

    # every feature exactly once in the cache, equal to this machine's own
    clustered, reference = _cached(workspace), _cached(local)
    assert len(clustered) == n_images and clustered.keys() == reference.keys()
    assert not list((workspace / "cache" / "features").rglob("*.tmp"))
    for key, vector in reference.items():
        np.testing.assert_allclose(clustered[key], vector, atol=1e-4)

    files = sorted(holdout_folder.glob("*/*.jpg"))
    mine = cli(workspace, "predict", result["model"], *files)["predictions"]
    theirs = cli(local, "predict", alone["model"], *files)["predictions"]
    assert [p["label"] for p in mine] == [p["label"] for p in theirs]
    assert np.allclose([p["score"] for p in mine], [p["score"] for p in theirs], atol=1e-3)
    assert result["metrics"]["accuracy"] >= 0.8
