"""Disk full during an import: it stops at the first "no space" error with one line saying how many
files were added and how much more space the rest needs, keeps the log quiet, leaves no orphan media,
and a second import after freeing space finishes the job."""

from __future__ import annotations

import errno
import json
import re
import sqlite3
import subprocess

import pytest

from modeldesk.app.cli import main
from modeldesk.datasets import importing
from modeldesk.datasets.media import MediaStore

N_IMAGES = 240


def _rows_and_media(workspace):
    with sqlite3.connect(workspace / "workspace.db") as db:
        hashes = {row[0] for row in db.execute("SELECT content_hash FROM samples")}
    media = {
        p.name.split(".")[0]
        for p in (workspace / "media").rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }
    temp = [p for p in (workspace / "media").rglob(".*") if p.is_file()]
    return hashes, media, temp


def _size_in_message(message: str) -> float:
    number, unit = re.search(r"about ([\d.]+) (bytes|KB|MB|GB)", message).groups()
    return float(number) * {"bytes": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[unit]


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("how", ["tmpfs", "tmpfs-no-reserve", "simulated"])
def test_import_on_a_full_disk_stops_with_one_line_and_no_orphans(
    how, tmp_path, mounts, photos, monkeypatch, capsys
):
    images = photos(tmp_path / "photos", {"cat": N_IMAGES // 2, "dog": N_IMAGES // 2})
    monkeypatch.setattr(importing, "BATCH_SIZE", 20)  # several commits before the disk fills
    if how.startswith("tmpfs"):
        disk = mounts.tmpfs(1_400_000)  # the photos take about 1.7 MB
        if disk is None:
            pytest.skip("cannot mount a tmpfs here (not root); the simulated case covers it")
        workspace = disk / "ws"
        if how == "tmpfs-no-reserve":  # media fill the disk to the last byte: the database commit fails
            monkeypatch.setattr(importing, "RESERVE_BYTES", 0)
    else:
        workspace = tmp_path / "ws"
        real_put, calls = MediaStore.put, []

        def put(self, data, ext, content_hash=None):
            calls.append(1)
            if len(calls) > 90:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_put(self, data, ext, content_hash)

        monkeypatch.setattr(MediaStore, "put", put)
    ws = ["--workspace", str(workspace)]
    assert (
        _run(["project", "create", "pets", "--task", "image-classification", *ws, "--json"], capsys)[0] == 0
    )

    code, out, err = _run(["import", "pets", str(tmp_path / "photos"), *ws, "--json"], capsys)

    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err[:2000]  # one line, no "Logging error" tracebacks, no per-file noise
    assert out == ""
    message = lines[0]
    assert message.startswith("modeldesk import: error: no space left on the disk of"), message
    assert "cannot read" not in message and "unexpected" not in message
    added = int(re.search(r"([\d,]+) of ([\d,]+) files were added", message).group(1).replace(",", ""))
    assert 0 < added < N_IMAGES
    hashes, media, temp = _rows_and_media(workspace)
    assert len(hashes) == added  # every committed row was counted
    assert media == hashes  # no orphan media file, no row without its file
    assert temp == []
    remaining = sum(p.stat().st_size for p in images) * (N_IMAGES - added) / N_IMAGES
    assert 0.5 * remaining <= _size_in_message(message) <= 1.5 * remaining

    # free space, import again: the rest comes in, what was added counts as duplicates
    if how.startswith("tmpfs"):
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
    else:
        monkeypatch.undo()
    code, out, err = _run(["import", "pets", str(tmp_path / "photos"), *ws, "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["added"] == N_IMAGES - added and report["duplicates"] == added
    hashes, media, _ = _rows_and_media(workspace)
    assert len(hashes) == N_IMAGES and media == hashes
