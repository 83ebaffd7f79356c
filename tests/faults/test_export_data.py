"""export-data with a media file missing from the workspace skips that sample with a reason; an
export that fails half-way leaves no partial folder (it writes to a temporary folder, then renames);
exported folders follow the umask like every other file."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from modeldesk.deploy.artifact import save_artifact


@pytest.fixture
def workspace(tmp_path, photos, cli):
    ws = tmp_path / "ws"
    assert cli(ws, "project", "create", "pets", "--task", "image-classification")[0] == 0
    photos(tmp_path / "photos", {"cat": 3, "dog": 3})
    assert cli(ws, "import", "pets", tmp_path / "photos")[0] == 0
    return ws


@pytest.mark.parametrize("fmt", ["folder", "csv"])
def test_missing_media_is_skipped_with_a_reason(fmt, workspace, tmp_path, cli):
    victim = sorted((workspace / "media").rglob("*.jpg"))[0]
    victim.unlink()
    out = tmp_path / "export"
    code, text, err = cli(workspace, "export-data", "pets", out, "--format", fmt, "--json")
    assert code == 0, err
    result = json.loads(text)
    assert result["samples"] == 5
    (skipped,) = result["skipped"]
    assert skipped["file"].endswith(".jpg") and "missing" in skipped["reason"]
    assert len([p for p in out.rglob("*.jpg")]) == 5
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".export")]


def test_a_failed_export_leaves_no_partial_folder(workspace, tmp_path, cli, monkeypatch):
    calls = []
    real = shutil.copyfileobj

    def failing(source, dest, *args):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(source, dest, *args)

    monkeypatch.setattr(shutil, "copyfileobj", failing)
    out = tmp_path / "export"
    code, text, err = cli(workspace, "export-data", "pets", out, "--format", "folder")
    assert code == 1
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_exported_folders_follow_the_umask(umask, workspace, tmp_path, tiny_artifact, cli):
    old = os.umask(umask)
    try:
        model = tiny_artifact(tmp_path / "model")
        exported = save_artifact(
            tmp_path / "exported",
            (model / "model.onnx").read_bytes(),
            json.loads((model / "model.json").read_text()),
        )
        assert cli(workspace, "export-data", "pets", tmp_path / "data", "--format", "folder")[0] == 0
    finally:
        os.umask(old)
    for folder in (model, exported, tmp_path / "data"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~umask, folder
