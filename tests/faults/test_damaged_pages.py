"""A workspace.db whose header is intact but whose interior pages are damaged: every command says so
in one line with the recovery steps (found by ``PRAGMA quick_check`` when the workspace is opened), and
``modeldesk recover`` copies what can still be read into a new database instead of crashing."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3

from modeldesk.datasets import Store
from modeldesk.datasets.store import NewSample

TEXTS = 3000


def _workspace_with_damaged_pages(ws):
    with Store(ws) as store:
        project = store.create_project("t", "text-classification", kind="text", target="label")
        store.add_samples(
            project,
            [
                NewSample(
                    kind="text",
                    content_hash=hashlib.sha256(str(i).encode()).hexdigest(),
                    source=f"line {i}",
                    text=f"text number {i} " * 5,
                    labels=["a" if i % 2 else "b"],
                )
                for i in range(TEXTS)
            ],
        )
    with sqlite3.connect(ws / "workspace.db") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    rng = random.Random(7)
    with open(ws / "workspace.db", "r+b") as handle:  # a run of pages in the middle: header untouched
        for page in range(pages // 3, pages // 3 + 30):
            handle.seek(page * page_size)
            handle.write(rng.randbytes(page_size))


def test_damaged_interior_pages_are_found_with_the_recovery_steps(tmp_path, cli):
    ws = tmp_path / "ws"
    _workspace_with_damaged_pages(ws)
    for command in (["stats", "t"], ["project", "list"]):
        code, out, err = cli(ws, *command)
        assert code == 1
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert "is damaged" in lines[0] and f"modeldesk recover --workspace {ws}" in lines[0]


def test_recover_salvages_the_readable_rows_without_a_traceback(tmp_path, cli):
    ws = tmp_path / "ws"
    _workspace_with_damaged_pages(ws)
    damaged = (ws / "workspace.db").read_bytes()
    code, out, err = cli(ws, "recover", "--json")
    assert code == 0, err
    assert "Traceback" not in err
    result = json.loads(out)
    assert result["damaged"] and result["restored_backup"] is None
    salvaged = result["salvaged"]["tables"]
    assert salvaged["projects"] == 1
    assert TEXTS // 2 < salvaged["samples"] < TEXTS  # most rows back, the damaged ones not
    (aside,) = ws.glob("workspace.db.damaged-*[0-9]")
    assert aside.read_bytes() == damaged  # kept as it was
    code, out, err = cli(ws, "stats", "t", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["samples"] == salvaged["samples"]
    assert stats["labeled"] == salvaged["sample_labels"] > 0
    with sqlite3.connect(ws / "workspace.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    db.close()
