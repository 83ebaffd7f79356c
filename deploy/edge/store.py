"""The edge store: models, versions, pipelines (with their rules) and events in one SQLite file.

A restarted server reads its configuration back from here; events keep a JPEG snapshot each and the
oldest are deleted past ``max_events`` (the retention limit).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path

from modeldesk.safejson import loads as safe_loads

DEFAULT_MAX_EVENTS = 5000
SCHEMA = """
CREATE TABLE IF NOT EXISTS models (name TEXT PRIMARY KEY, live_version INTEGER);
CREATE TABLE IF NOT EXISTS versions (
    name TEXT NOT NULL, version INTEGER NOT NULL, source TEXT, model_id TEXT, path TEXT NOT NULL,
    added TEXT NOT NULL, size_bytes INTEGER, PRIMARY KEY (name, version));
CREATE TABLE IF NOT EXISTS pipelines (id TEXT PRIMARY KEY, config TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS folder_seen (pipeline TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (pipeline, name));
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, pipeline TEXT, source TEXT, model TEXT,
    version INTEGER, label TEXT, score REAL, rule TEXT, answer TEXT, snapshot BLOB);
CREATE INDEX IF NOT EXISTS events_time ON events (time);
"""


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class EdgeStore:
    """One SQLite file (``edge.sqlite3`` in ``folder``), safe to use from several threads."""

    def __init__(self, folder, *, max_events: int = DEFAULT_MAX_EVENTS):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_events = int(max_events)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.folder / "edge.sqlite3", check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _all(self, sql: str, args=()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _run(self, sql: str, args=()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, args)

    # models and versions
    def add_version(self, name: str, *, source: str, model_id: str, path: str, size_bytes: int) -> int:
        """Record a new version of ``name`` (1 for a new name) and return its number."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT MAX(version) FROM versions WHERE name = ?", (name,)).fetchone()
                version = (row[0] or 0) + 1
                self._db.execute(
                    "INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (name, version, source, model_id, path, now_iso(), int(size_bytes)),
                )
                self._db.execute("INSERT OR IGNORE INTO models VALUES (?, ?)", (name, version))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return version

    def next_version(self, name: str) -> int:
        """The number :meth:`add_version` will give ``name``'s next version."""
        return (self._all("SELECT MAX(version) FROM versions WHERE name = ?", (name,))[0][0] or 0) + 1

    def set_live(self, name: str, version: int) -> None:
        self._run("UPDATE models SET live_version = ? WHERE name = ?", (int(version), name))

    def remove_model(self, name: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM versions WHERE name = ?", (name,))
            self._db.execute("DELETE FROM models WHERE name = ?", (name,))

    def models(self) -> list[dict]:
        """``[{"name", "live_version", "versions": [{"version", "source", "model_id", "path", "added",
        "size_bytes"}]}]`` sorted by name."""
        versions: dict[str, list[dict]] = {}
        for name, version, source, model_id, path, added, size in self._all(
            "SELECT * FROM versions ORDER BY name, version"
        ):
            versions.setdefault(name, []).append(
                {
                    "version": version,
                    "source": source,
                    "model_id": model_id,
                    "path": path,
                    "added": added,
                    "size_bytes": size,
                }
            )
        return [
            {"name": name, "live_version": live, "versions": versions.get(name, [])}
            for name, live in self._all("SELECT name, live_version FROM models ORDER BY name")
        ]

    # pipelines
    def save_pipeline(self, config: dict) -> None:
        self._run(
            "INSERT INTO pipelines VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET config = excluded.config",
            (config["id"], json.dumps(config), now_iso()),
        )

    def delete_pipeline(self, pipeline_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM pipelines WHERE id = ?", (pipeline_id,))
            self._db.execute("DELETE FROM folder_seen WHERE pipeline = ?", (pipeline_id,))

    def pipelines(self) -> list[dict]:
        return [safe_loads(row[0]) for row in self._all("SELECT config FROM pipelines ORDER BY created, id")]

    def seen(self, pipeline_id: str) -> set[str]:
        """Names of the files a folder pipeline has processed."""
        return {r[0] for r in self._all("SELECT name FROM folder_seen WHERE pipeline = ?", (pipeline_id,))}

    def mark_seen(self, pipeline_id: str, name: str) -> None:
        self._run("INSERT OR IGNORE INTO folder_seen VALUES (?, ?)", (pipeline_id, name))

    # events
    def add_event(self, event: dict, snapshot: bytes | None) -> int:
        """Store an event (keys of :meth:`events` but ``id``); drop the oldest past ``max_events``."""
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO events (time, pipeline, source, model, version, label, score, rule, answer, "
                "snapshot) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event["time"],
                    event.get("pipeline"),
                    event.get("source"),
                    event.get("model"),
                    event.get("version"),
                    event.get("label"),
                    event.get("score"),
                    event.get("rule"),
                    json.dumps(event.get("answer"), default=str),
                    snapshot,
                ),
            )
            assert cursor.lastrowid is not None  # set by the INSERT just run
            event_id = int(cursor.lastrowid)
            if event_id % 50 == 0 or self.max_events < 50:
                self._db.execute(
                    "DELETE FROM events WHERE id <= (SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?)",
                    (self.max_events,),
                )
        return event_id

    def events(
        self,
        *,
        pipeline: str | None = None,
        model: str | None = None,
        label: str | None = None,
        since: str | None = None,
        limit: int = 100,
    ) -> list[dict]:
        """Events newest first, filtered; each ``{"id", "time", "source", "pipeline", "model",
        "version", "label", "score", "rule", "answer", "snapshot"}`` (snapshot: its URL path)."""
        where, args = [], []
        for column, value in (("pipeline", pipeline), ("model", model), ("label", label)):
            if value:
                where.append(f"{column} = ?")
                args.append(value)
        if since:
            where.append("time >= ?")
            args.append(since)
        sql = (
            "SELECT id, time, source, pipeline, model, version, label, score, rule, answer, "
            "snapshot IS NOT NULL FROM events"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY id DESC LIMIT ?"
        )
        rows = self._all(sql, (*args, max(1, min(int(limit), 10_000))))
        return [
            {
                "id": r[0],
                "time": r[1],
                "source": r[2],
                "pipeline": r[3],
                "model": r[4],
                "version": r[5],
                "label": r[6],
                "score": r[7],
                "rule": r[8],
                "answer": safe_loads(r[9]) if r[9] else None,
                "snapshot": f"/v1/edge/events/{r[0]}/snapshot.jpg" if r[10] else None,
            }
            for r in rows
        ]

    def snapshot(self, event_id: int) -> bytes | None:
        rows = self._all("SELECT snapshot FROM events WHERE id = ?", (int(event_id),))
        return rows[0][0] if rows else None

    def count_events(self) -> int:
        return int(self._all("SELECT COUNT(*) FROM events")[0][0])
