"""What killed work leaves behind is cleaned when a workspace opens (in the background), and
compression keeps its scratch files in the workspace's own tmp/, never in the system temp folder."""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from modeldesk.app.workspace import Workspace
from modeldesk.deploy.artifact import load_artifact
from modeldesk.deploy.export import export_artifact


def _age(path, hours=2.0):
    then = time.time() - hours * 3600
    for root, _dirs, files in os.walk(path) if path.is_dir() else [(path.parent, [], [path.name])]:
        for name in files:
            os.utime(os.path.join(root, name), (then, then))
    os.utime(path, (then, then))


def test_opening_a_workspace_cleans_up_in_the_background(tmp_path, photos, cli):
    ws = tmp_path / "ws"
    assert cli(ws, "project", "create", "pets", "--task", "image-classification")[0] == 0
    assert cli(ws, "import", "pets", photos(tmp_path / "photos", {"cat": 2})[0].parent)[0] == 0
    kept = sorted(p for p in (ws / "media").rglob("*") if p.is_file())
    quant = ws / "tmp" / "modeldesk-quant-abc123"  # a killed compression
    quant.mkdir(parents=True)
    (quant / "prepared.onnx").write_bytes(b"x" * 1000)
    unzip = ws / "tmp" / "unzip-xyz"  # a killed zip import
    (unzip / "a").mkdir(parents=True)
    orphan = ws / "media" / "ff" / ("f" * 64 + ".jpg")  # a killed import's file, never committed
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"jpeg")
    partial = ws / "media" / "ff" / ".abc.jpg.x1y2.tmp"  # a killed atomic write
    partial.write_bytes(b"half")
    fresh = ws / "tmp" / "modeldesk-quant-running"  # a compression running right now: kept
    fresh.mkdir()
    for path in (quant, unzip, orphan, partial):
        _age(path)
    (ws / "cache" / "last-cleanup").unlink(missing_ok=True)

    workspace = Workspace(ws)
    try:
        assert workspace._cleanup is not None
        workspace._cleanup.thread.join(30)
        assert workspace._cleanup.result == {"temp_files": 1, "unzip_folders": 2, "orphan_media": 1}
    finally:
        workspace.close()
    assert not quant.exists() and not unzip.exists() and not orphan.exists() and not partial.exists()
    assert fresh.exists()
    assert sorted(p for p in (ws / "media").rglob("*") if p.is_file()) == kept


def test_compression_scratch_goes_to_the_workspace_tmp(tmp_path, tiny_artifact, monkeypatch):
    from PIL import Image

    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    artifact = load_artifact(tiny_artifact(tmp_path / "model"))
    images = []
    for i in range(6):
        path = tmp_path / "img" / f"{i}.png"
        path.parent.mkdir(exist_ok=True)
        color = (220, 30, 30) if i % 2 else (30, 30, 220)
        Image.fromarray(np.full((32, 32, 3), color, np.uint8)).save(path)
        images.append((path, "red" if i % 2 else "other"))
    workspace_tmp = tmp_path / "ws" / "tmp"
    seen = []

    def progress(done, total, name):
        seen.append(
            (
                sorted(p.name for p in system_tmp.iterdir()),
                sorted(p.name for p in workspace_tmp.rglob("modeldesk-quant-*")),
            )
        )

    export_artifact(
        artifact,
        tmp_path / "out",
        compress=True,
        calibration=[p for p, _ in images],
        validation=images,
        candidates=["int8-qdq-pertensor"],
        progress=progress,
        tmp_dir=workspace_tmp,
    )
    assert seen and all(in_system == [] for in_system, _ in seen)
    assert any(in_workspace for _, in_workspace in seen)  # the quantizer's folder was there, mid-run
    assert list(system_tmp.iterdir()) == []
    assert list(workspace_tmp.iterdir()) == []  # and removed at the end
