"""The SQLite schema of a workspace and its migrations.

The schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[i]`` takes a database from
version ``i`` to ``i + 1``; a new version appends a step and never edits an old one.
"""

from __future__ import annotations

import re
import sqlite3

_V1 = """
CREATE TABLE projects (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    task TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE labels (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    UNIQUE (project_id, name)
);
CREATE TABLE samples (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    content_hash TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('image', 'audio', 'text')),
    ext TEXT,
    text TEXT,
    source TEXT NOT NULL,
    split TEXT CHECK (split IN ('train', 'val', 'test')),
    width INTEGER,
    height INTEGER,
    duration REAL,
    added REAL NOT NULL,
    UNIQUE (project_id, content_hash)
);
CREATE INDEX samples_project_split ON samples(project_id, split);
CREATE INDEX samples_hash ON samples(content_hash);
CREATE TABLE sample_labels (
    sample_id INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    label_id INTEGER NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
    PRIMARY KEY (sample_id, label_id)
) WITHOUT ROWID;
CREATE INDEX sample_labels_label ON sample_labels(label_id);
CREATE TABLE boxes (
    id INTEGER PRIMARY KEY,
    sample_id INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    label_id INTEGER NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
    x0 REAL NOT NULL, y0 REAL NOT NULL, x1 REAL NOT NULL, y1 REAL NOT NULL
);
CREATE INDEX boxes_sample ON boxes(sample_id);
CREATE INDEX boxes_label ON boxes(label_id);
CREATE TABLE models (
    id TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    template TEXT NOT NULL,
    metrics TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE predictions (
    model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    sample_id INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    label TEXT,
    score REAL,
    PRIMARY KEY (model_id, sample_id)
) WITHOUT ROWID;
"""

# A project records what its task means for data (input kind and target), so the data layer never
# needs a list of tasks. The UPDATEs fill rows of the tasks that existed before this version.
_V2 = """
ALTER TABLE projects ADD COLUMN kind TEXT NOT NULL DEFAULT 'image'
    CHECK (kind IN ('image', 'audio', 'text'));
ALTER TABLE projects ADD COLUMN target TEXT NOT NULL DEFAULT 'label'
    CHECK (target IN ('label', 'tags', 'boxes'));
UPDATE projects SET kind = 'text' WHERE task = 'text-classification';
UPDATE projects SET kind = 'audio' WHERE task = 'sound-classification';
UPDATE projects SET target = 'tags' WHERE task = 'image-multilabel';
UPDATE projects SET target = 'boxes' WHERE task = 'object-detection';
"""


def _v3_open_kinds(conn: sqlite3.Connection) -> None:
    """Drop the CHECKs that pin ``projects.kind``/``target`` and ``samples.kind`` to the first values.

    New tasks bring new targets (``mask``) and input kinds, which ``Store`` checks against the
    registered ``KINDS``/``TARGETS``; SQLite cannot alter a CHECK, and rebuilding ``projects`` would
    cascade-delete every row under it, so the stored schema text is edited in place: SQLite's own
    procedure for removing CHECK constraints (sqlite.org/lang_altertable.html), which leaves the file's
    content untouched. The schema cookie is bumped so every connection re-reads it.
    """
    cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema=ON")
    try:
        for table in ("projects", "samples"):
            (sql,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            opened = _KIND_CHECK.sub("", sql)
            if opened != sql:
                conn.execute(
                    "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", (opened, table)
                )
        conn.execute(f"PRAGMA schema_version = {int(cookie) + 1}")
    finally:
        conn.execute("PRAGMA writable_schema=OFF")


_KIND_CHECK = re.compile(r"\s*CHECK\s*\(\s*(?:kind|target)\s+IN\s*\([^)]*\)\s*\)", re.IGNORECASE)

#: One SQL script (or a function of the connection) per version step, applied in order inside one
#: transaction each.
MIGRATIONS: tuple = (_V1, _V2, _v3_open_kinds)

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring ``conn``'s database up to :data:`SCHEMA_VERSION`; return the version it had.

    Raises RuntimeError when the file was written by a newer ModelDesk.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"this workspace was written by a newer ModelDesk (schema {version}, "
            f"this version knows up to {SCHEMA_VERSION})"
        )
    for step in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # re-check inside the write lock: another process may have migrated meanwhile
            if conn.execute("PRAGMA user_version").fetchone()[0] != step:
                conn.execute("ROLLBACK")
                continue
            if callable(MIGRATIONS[step]):
                MIGRATIONS[step](conn)
            else:
                for statement in _statements(MIGRATIONS[step]):
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {step + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return version


def _statements(script: str):
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buffer.strip()[:60]}")
