"""The SQLite schema of a workspace and its migrations.

The schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[i]`` takes a database from
version ``i`` to ``i + 1``; a new version appends a step and never edits an old one.
"""

from __future__ import annotations

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

# The kinds of sample and of annotation are the registries' (``datasets/kinds/``, ``TARGETS``), checked in
# Python when a project is made, so a new kind or target needs no schema change: the CHECKs go (SQLite cannot drop a CHECK, so
# both tables are rebuilt; ``migrate`` runs with foreign keys off, so no row of another table is touched).
# ``project_settings`` keeps what a project remembers beyond its rows, as JSON by key (a table's target
# column and the column types the user corrected).
_V3 = """
CREATE TABLE projects_v3 (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    task TEXT NOT NULL,
    created REAL NOT NULL,
    kind TEXT NOT NULL DEFAULT 'image',
    target TEXT NOT NULL DEFAULT 'label'
);
INSERT INTO projects_v3(id, name, task, created, kind, target)
    SELECT id, name, task, created, kind, target FROM projects;
DROP TABLE projects;
ALTER TABLE projects_v3 RENAME TO projects;
CREATE TABLE samples_v3 (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    content_hash TEXT NOT NULL,
    kind TEXT NOT NULL,
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
INSERT INTO samples_v3(id, project_id, content_hash, kind, ext, text, source, split, width, height,
    duration, added)
    SELECT id, project_id, content_hash, kind, ext, text, source, split, width, height, duration, added
    FROM samples;
DROP TABLE samples;
ALTER TABLE samples_v3 RENAME TO samples;
CREATE INDEX samples_project_split ON samples(project_id, split);
CREATE INDEX samples_hash ON samples(content_hash);
CREATE TABLE project_settings (
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (project_id, key)
) WITHOUT ROWID;
"""

#: One SQL script per version step, applied in order inside one transaction each.
MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3)

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
    # a step may rebuild a table: with foreign keys on, dropping the old table would cascade to its rows'
    # children (PRAGMA foreign_keys is a no-op inside a transaction, so it is switched here)
    foreign_keys = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    if version < SCHEMA_VERSION:
        conn.execute("PRAGMA foreign_keys=OFF")
    try:
        _steps(conn, version)
    finally:
        conn.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
    return version


def _steps(conn: sqlite3.Connection, version: int) -> None:
    for step in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # re-check inside the write lock: another process may have migrated meanwhile
            if conn.execute("PRAGMA user_version").fetchone()[0] != step:
                conn.execute("ROLLBACK")
                continue
            for statement in _statements(MIGRATIONS[step]):
                conn.execute(statement)
            broken = conn.execute("PRAGMA foreign_key_check").fetchone()
            if broken is not None:
                raise RuntimeError(f"schema step {step + 1} left a dangling reference in {broken[0]}")
            conn.execute(f"PRAGMA user_version = {step + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _statements(script: str):
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buffer.strip()[:60]}")
