"""A workspace on a read-only disk or folder: reading commands (stats, predict, the service) work
read-only, quietly; a command that would change it says in one line that the folder is read-only."""

from __future__ import annotations

import json
import shutil

import httpx

from modeldesk.app.workspace import Workspace


def test_read_only_workspace_reads_and_refuses_changes_in_one_line(
    tmp_path, photos, tiny_artifact, cli, read_only
):
    source = tmp_path / "source"
    red = photos(tmp_path / "photos", {"cat": 3, "dog": 3})[0]

    def fill(folder):
        assert cli(folder, "project", "create", "pets", "--task", "image-classification")[0] == 0
        assert cli(folder, "import", "pets", tmp_path / "photos")[0] == 0
        tiny_artifact(folder / "models" / "m1")
        shutil.copytree(folder, source)  # what it held, to compare

    ws = read_only(fill)
    assert not list(ws.glob("workspace.db-*"))  # closed cleanly: no -wal/-shm to open read-only with

    code, out, err = cli(ws, "stats", "pets", "--json")
    assert code == 0, err
    assert json.loads(out)["samples"] == 6
    assert err == ""  # no "Logging error", no pointer to a log it cannot write

    code, out, err = cli(ws, "predict", ws / "models" / "m1", red, "--json")
    assert code == 0, err
    assert json.loads(out)["predictions"][0]["label"] in ("red", "other")

    code, out, err = cli(ws, "import", "pets", tmp_path / "photos", "--json")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "read-only" in lines[0] and str(ws) in lines[0], err
    assert "unable to open database file" not in err

    workspace = Workspace(ws)
    try:
        assert workspace.read_only
        handle = workspace.start_service(ws / "models" / "m1")
        try:
            assert httpx.get(handle.url + "healthz", timeout=10).status_code == 200
        finally:
            handle.stop()
    finally:
        workspace.close()
    assert sorted(p.relative_to(ws) for p in ws.rglob("*")) == sorted(
        p.relative_to(source) for p in source.rglob("*")
    )
