"""A workspace.db emptied to 0 bytes, cut in half or overwritten is refused before anything touches the
workspace, with one line saying how to recover; ``modeldesk recover`` brings the media back; every
schema migration keeps a backup of the database first."""

from __future__ import annotations

import json
import sqlite3

import pytest

from modeldesk.datasets import Store, schema


@pytest.fixture
def workspace(tmp_path, photos, cli):
    """A workspace with one project of 12 imported photos."""
    ws = tmp_path / "ws"
    assert cli(ws, "project", "create", "pets", "--task", "image-classification")[0] == 0
    photos(tmp_path / "photos", {"cat": 6, "dog": 6})
    assert cli(ws, "import", "pets", tmp_path / "photos")[0] == 0
    return ws


def _media(ws):
    return sorted(p.name for p in (ws / "media").rglob("*") if p.is_file())


def _damage(ws, how):
    db = ws / "workspace.db"
    for suffix in ("-wal", "-shm"):  # the app closed cleanly: nothing pending beside the file
        (ws / f"workspace.db{suffix}").unlink(missing_ok=True)
    data = db.read_bytes()
    if how == "empty":
        db.write_bytes(b"")
    elif how == "truncated":
        db.write_bytes(data[: len(data) // 2])
    else:
        db.write_bytes(b"\0" * 100 + data[100:])
    return db


@pytest.mark.parametrize(
    "how, words",
    [
        ("empty", "is empty (0 bytes)"),
        ("truncated", "is truncated"),
        ("overwritten", "is not a SQLite database"),
    ],
)
def test_damaged_database_is_refused_with_recovery_steps(how, words, workspace, cli):
    before = _media(workspace)
    db = _damage(workspace, how)
    damaged = db.read_bytes()
    code, out, err = cli(workspace, "stats", "pets")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert words in lines[0]
    assert "modeldesk recover" in lines[0] and "12 media files" in lines[0]
    assert db.read_bytes() == damaged  # refused before SQLite touched it
    assert _media(workspace) == before


def test_recover_brings_the_media_back_as_unlabeled_samples(workspace, cli):
    media = _media(workspace)
    _damage(workspace, "empty")
    code, out, err = cli(workspace, "recover", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["damaged"] and result["restored_backup"] is None
    assert (workspace / result["set_aside"]).exists() or result["set_aside"]
    (entry,) = result["projects"]
    assert entry["added"] == 12 and entry["failed"] == []
    code, out, _ = cli(workspace, "stats", entry["project"], "--json")
    assert code == 0 and json.loads(out)["samples"] == 12
    assert _media(workspace) == media  # nothing lost, nothing copied twice


def _old_workspace(root, version: int):
    """A workspace database at schema ``version`` (older than today's) holding one project."""
    root.mkdir()
    with sqlite3.connect(root / "workspace.db") as db:
        for step in schema.MIGRATIONS[:version]:
            for statement in schema._statements(step):
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {version}")
        db.execute("INSERT INTO projects(name, task, created) VALUES ('old', 'image-classification', 0)")
    db.close()


def test_every_migration_keeps_a_backup_first(tmp_path, monkeypatch, cli):
    if schema.SCHEMA_VERSION < 2:  # make a step to migrate over
        monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS + ("CREATE TABLE extra (x);",))
        monkeypatch.setattr(schema, "SCHEMA_VERSION", len(schema.MIGRATIONS))
    old = schema.SCHEMA_VERSION - 1
    root = tmp_path / "ws"
    _old_workspace(root, old)
    with Store(root) as store:
        assert [p.name for p in store.list_projects()] == ["old"]
    (backup,) = (root / "backups").glob("workspace-*.db")
    assert backup.name.startswith(f"workspace-v{old}-")
    with sqlite3.connect(backup) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == old
        assert db.execute("SELECT name FROM projects").fetchall() == [("old",)]
    db.close()
    # the backup is what `recover` restores when the database is lost later
    (root / "workspace.db").write_bytes(b"")
    code, out, err = cli(root, "recover", "--json")
    assert code == 0, err
    assert json.loads(out)["restored_backup"] == str(backup)
    with Store(root) as store:
        assert [p.name for p in store.list_projects()] == ["old"]
