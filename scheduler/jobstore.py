"""SQLite storage of jobs and their events (tables ``jobs`` and ``job_events``, WAL mode).

Both the queue (in the app) and the worker process use it; every call opens its own short-lived
connection, so it is safe from any thread and any process.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import time
from contextlib import closing, contextmanager
from pathlib import Path

TERMINAL = ("done", "failed", "cancelled")
STATES = ("queued", "running") + TERMINAL

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    params TEXT NOT NULL,
    plan TEXT,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    pid INTEGER,
    pid_started REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    checkpoint TEXT,
    result TEXT,
    error TEXT,
    resumable INTEGER NOT NULL DEFAULT 0,
    stage TEXT,
    fraction REAL,
    eta_s REAL,
    log_path TEXT
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state);
CREATE TABLE IF NOT EXISTS job_events (
    job_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    ts REAL NOT NULL,
    type TEXT NOT NULL,
    stage TEXT,
    fraction REAL,
    eta_s REAL,
    metrics TEXT,
    message TEXT,
    PRIMARY KEY (job_id, seq)
);
"""

_JSON_COLUMNS = ("params", "plan", "checkpoint", "result")


class JobStore:
    """Rows of the ``jobs`` and ``job_events`` tables in the SQLite file ``db_path``."""

    def __init__(self, db_path):
        self.db_path = Path(db_path)

    @contextmanager
    def connect(self):
        """A connection in autocommit mode; use ``with store.connect() as db``."""
        with closing(sqlite3.connect(self.db_path, timeout=30, isolation_level=None)) as db:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA busy_timeout = 30000")
            yield db

    def create(self) -> None:
        """Create the tables (if missing) and switch the file to WAL; other tables are left alone."""
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        with self.connect() as db:
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(SCHEMA)

    @staticmethod
    def _decode(row) -> dict:
        job = dict(row)
        for column in _JSON_COLUMNS:
            job[column] = json.loads(job[column]) if job.get(column) else None
        job["cancel_requested"] = bool(job["cancel_requested"])
        job["resumable"] = bool(job["resumable"])
        return job

    def get(self, job_id: int) -> dict:
        """One job as a dict (JSON columns decoded); KeyError when there is no such job."""
        with self.connect() as db:
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (int(job_id),)).fetchone()
        if row is None:
            raise KeyError(f"no job {job_id}")
        return self._decode(row)

    def list(self, state: str | None = None, kind: str | None = None, limit: int = 100) -> list[dict]:
        """Newest jobs first, optionally filtered by state and kind."""
        query = "SELECT * FROM jobs WHERE 1=1"
        args: list[object] = []
        if state:
            query, args = query + " AND state = ?", args + [state]
        if kind:
            query, args = query + " AND kind = ?", args + [kind]
        with self.connect() as db:
            rows = db.execute(query + " ORDER BY id DESC LIMIT ?", (*args, int(limit))).fetchall()
        return [self._decode(row) for row in rows]

    def next_queued(self) -> dict | None:
        """The oldest queued job, or None."""
        with self.connect() as db:
            row = db.execute("SELECT * FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 1").fetchone()
        return None if row is None else self._decode(row)

    def insert(self, kind: str, target: str, params: dict, plan: dict | None, log_dir: Path) -> int:
        with self.transaction() as db:
            cursor = db.execute(
                "INSERT INTO jobs (kind, target, params, plan, state, created_at) VALUES (?, ?, ?, ?, 'queued', ?)",
                (
                    kind,
                    target,
                    json.dumps(params),
                    json.dumps(plan) if plan is not None else None,
                    time.time(),
                ),
            )
            job_id = cursor.lastrowid
            db.execute(
                "UPDATE jobs SET log_path = ? WHERE id = ?",
                (str(Path(log_dir) / f"job-{job_id}.log"), job_id),
            )
            self.add_event(job_id, "state", stage="queued", message="queued", db=db)
        return job_id

    @contextmanager
    def transaction(self):
        """A connection inside one write transaction (committed on success, rolled back on error)."""
        with self.connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def update(
        self, job_id: int, *, where_state=None, where_attempts: int | None = None, db=None, **values
    ) -> bool:
        """Set columns of one job (JSON columns are encoded); with ``where_state`` only if the job is
        in that state (or one of those states), with ``where_attempts`` only if it is still that
        attempt. Returns whether a row changed."""
        for column in _JSON_COLUMNS:
            if column in values and values[column] is not None:
                values[column] = json.dumps(values[column])
        assignments = ", ".join(f"{column} = ?" for column in values)
        query, args = f"UPDATE jobs SET {assignments} WHERE id = ?", [*values.values(), int(job_id)]
        if where_state is not None:
            states = (where_state,) if isinstance(where_state, str) else tuple(where_state)
            query += f" AND state IN ({', '.join('?' * len(states))})"
            args += list(states)
        if where_attempts is not None:
            query, args = query + " AND attempts = ?", args + [int(where_attempts)]
        if db is not None:
            return db.execute(query, args).rowcount > 0
        with self.connect() as db:
            return db.execute(query, args).rowcount > 0

    def add_event(
        self,
        job_id: int,
        type_: str,
        *,
        stage=None,
        fraction=None,
        eta_s=None,
        metrics=None,
        message=None,
        db=None,
    ) -> None:
        """Append an event with the next sequence number of this job."""
        query = (
            "INSERT INTO job_events (job_id, seq, ts, type, stage, fraction, eta_s, metrics, message) "
            "SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ?, ?, ?, ? FROM job_events WHERE job_id = ?"
        )
        args = (
            int(job_id),
            time.time(),
            type_,
            stage,
            fraction,
            eta_s,
            json.dumps(metrics) if metrics is not None else None,
            message,
            int(job_id),
        )
        if db is not None:
            db.execute(query, args)
            return
        with self.connect() as db:
            db.execute(query, args)

    def progress(self, job_id: int, stage: str, fraction: float, eta_s, metrics, message) -> None:
        """Record a progress event and the job's latest stage, fraction and ETA together."""
        with self.transaction() as db:
            self.update(job_id, stage=stage, fraction=fraction, eta_s=eta_s, db=db)
            self.add_event(
                job_id,
                "progress",
                stage=stage,
                fraction=fraction,
                eta_s=eta_s,
                metrics=metrics,
                message=message,
                db=db,
            )

    def events(self, job_id: int, after_seq: int = 0) -> builtins.list[dict]:
        """Events of a job with ``seq > after_seq``, oldest first."""
        with self.connect() as db:
            rows = db.execute(
                "SELECT * FROM job_events WHERE job_id = ? AND seq > ? ORDER BY seq",
                (int(job_id), int(after_seq)),
            ).fetchall()
        events = []
        for row in rows:
            event = dict(row)
            event["metrics"] = json.loads(event["metrics"]) if event["metrics"] else None
            events.append(event)
        return events

    def set_state(
        self,
        job_id: int,
        state: str,
        *,
        where_state=None,
        where_attempts: int | None = None,
        message: str | None = None,
        **values,
    ) -> bool:
        """Move a job to ``state`` (guarded by ``where_state``) and record a state event."""
        if state not in STATES:
            raise ValueError(f"unknown job state {state!r}")
        if state in TERMINAL:
            values.setdefault("finished_at", time.time())
        with self.transaction() as db:  # state and its event become visible together
            changed = self.update(
                job_id, where_state=where_state, where_attempts=where_attempts, db=db, state=state, **values
            )
            if changed:
                self.add_event(job_id, "state", message=message or state, stage=state, db=db)
        return changed
