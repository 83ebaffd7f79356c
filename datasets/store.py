"""The workspace store: SQLite rows for projects, samples and annotations, plus the media folder.

A workspace folder holds ``workspace.db`` (SQLite in WAL mode, foreign keys on), ``media/``
(content-addressed files) and ``cache/thumbs``. Every thread gets its own SQLite connection, so the
UI can read from a thread pool while an import writes; writes take SQLite's write lock with
``BEGIN IMMEDIATE`` and wait up to 30 s for it.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import splits as _splits
from .cleanup import cleanup_workspace
from .dbfile import ReadOnlyWorkspaceError, connect_uri, is_writable, open_database, quick_check
from .kinds import thumbnail as kind_thumbnail
from .media import MediaStore
from .records import KINDS, SPLITS, TARGETS, Box, Project, Sample
from .salvage import salvage_rows

log = logging.getLogger(__name__)

#: the project setting that remembers merged classes' label ids (``Store.merged_labels``)
MERGED_KEY = "merged_labels"
_CHUNK = 500  # ids per "IN (...)" query, well under SQLite's variable limit


@dataclass
class NewSample:
    """A sample an importer has verified (and whose media it has stored), ready for a row."""

    kind: str
    content_hash: str
    source: str
    ext: str | None = None
    text: str | None = None
    width: int | None = None
    height: int | None = None
    duration: float | None = None
    labels: list[str] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)
    split: str | None = None  # the split the source gave it (kept); None: assigned 70/15/15


class Store:
    """All data of one workspace folder.

    Parameters
    ----------
    root : str or Path
        The workspace folder; created if missing.

    Examples
    --------
        store = Store(tmp_path)
        project = store.create_project("pets", "image-classification", kind="image", target="label",
                                       labels=["cat", "dog"])
    """

    def __init__(self, root, read_only: bool | None = None):
        self.root = Path(root)
        # None: read-only exactly when the folder cannot be written (a read-only disk or folder)
        self.read_only = (
            (self.root.is_dir() and not is_writable(self.root)) if read_only is None else read_only
        )
        if not self.read_only:
            self.root.mkdir(parents=True, exist_ok=True)
        self.db_path = self.root / "workspace.db"
        self.media = MediaStore(self.root / "media")
        self.thumbs_dir = self.root / "cache" / "thumbs"
        self.tmp_dir = self.root / "tmp"
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        try:
            open_database(self._conn, self.db_path, self.media.root, self.read_only)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ connections
    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise RuntimeError(f"the store for {self.root} is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            database, uri = connect_uri(self.db_path, self.read_only)
            conn = sqlite3.connect(
                database, timeout=30, isolation_level=None, check_same_thread=False, uri=uri
            )
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed when the block ends, rolled back on error."""
        if self.read_only:
            raise ReadOnlyWorkspaceError(
                f"the workspace {self.root} is read-only (its folder cannot be written), "
                "so it cannot be changed: make it writable or choose another workspace"
            )
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT (a full disk) can leave the transaction open
                conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close every connection this store opened (from any thread)."""
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
        self._closed = True
        self._local = threading.local()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ projects
    def create_project(
        self, name: str, task: str, labels: Iterable[str] = (), *, kind: str, target: str
    ) -> Project:
        """Create a project; ValueError for an empty or a duplicate name or an unknown kind/target.

        ``task`` is the task's name (the trainers' registry says which exist); ``kind`` and
        ``target`` are what it means for data (``KINDS``, ``TARGETS``).
        """
        name = (name or "").strip()
        if not name:
            raise ValueError("a project needs a name")
        if not task:
            raise ValueError("a project needs a task")
        if kind not in KINDS:
            raise ValueError(f"unknown kind of sample {kind!r}; choose one of: {', '.join(KINDS)}")
        if target not in TARGETS:
            raise ValueError(f"unknown kind of annotation {target!r}; choose one of: {', '.join(TARGETS)}")
        try:
            with self._write() as conn:
                cur = conn.execute(
                    "INSERT INTO projects(name, task, created, kind, target) VALUES (?, ?, ?, ?, ?)",
                    (name, task, time.time(), kind, target),
                )
                project_id = cur.lastrowid
                assert project_id is not None  # set by the INSERT just run
                for label in labels:
                    self._label_id(conn, project_id, label)
        except sqlite3.IntegrityError:
            raise ValueError(f"a project named {name!r} already exists") from None
        return self.get_project(project_id)

    def list_projects(self) -> list[Project]:
        """All projects, oldest first."""
        rows = self._conn().execute("SELECT id, name, task, created, kind, target FROM projects ORDER BY id")
        return [Project(*row) for row in rows]

    def get_project(self, name_or_id) -> Project:
        """The project with this name (or integer id); KeyError with a readable message if none."""
        if isinstance(name_or_id, Project):
            return name_or_id
        conn = self._conn()
        if isinstance(name_or_id, int):
            row = conn.execute(
                "SELECT id, name, task, created, kind, target FROM projects WHERE id = ?", (name_or_id,)
            ).fetchone()
        else:
            row = conn.execute(
                "SELECT id, name, task, created, kind, target FROM projects WHERE name = ?",
                (str(name_or_id),),
            ).fetchone()
        if row is None:
            known = ", ".join(p.name for p in self.list_projects()) or "none yet"
            raise KeyError(f"no project named {name_or_id!r} (projects: {known})")
        return Project(*row)

    def delete_project(self, name_or_id) -> None:
        """Delete a project, its samples and annotations, and media no other project uses."""
        project = self.get_project(name_or_id)
        with self._write() as conn:
            media = conn.execute(
                "SELECT DISTINCT content_hash, ext FROM samples WHERE project_id = ? AND ext IS NOT NULL",
                (project.id,),
            ).fetchall()
            conn.execute("DELETE FROM projects WHERE id = ?", (project.id,))
            unused = [
                (h, e)
                for h, e in media
                if conn.execute("SELECT 1 FROM samples WHERE content_hash = ? LIMIT 1", (h,)).fetchone()
                is None
            ]
        for content_hash, ext in unused:  # after the commit: a crash here only leaves orphans
            self.media.remove(content_hash, ext)
            for thumb in (self.thumbs_dir / content_hash[:2]).glob(f"{content_hash}_*"):
                thumb.unlink(missing_ok=True)

    def rename_project(self, name_or_id, new: str) -> Project:
        """Rename a project (its samples, labels and models stay); ValueError if the name is taken."""
        project = self.get_project(name_or_id)
        new = (new or "").strip()
        if not new:
            raise ValueError("a project needs a name")
        try:
            with self._write() as conn:
                conn.execute("UPDATE projects SET name = ? WHERE id = ?", (new, project.id))
        except sqlite3.IntegrityError:
            raise ValueError(f"a project named {new!r} already exists") from None
        return self.get_project(project.id)

    def delete_samples(self, project, sample_ids) -> int:
        """Remove samples (with their labels, boxes and predictions) from a project; media no sample
        uses any more is deleted too. Returns how many samples went."""
        project = self.get_project(project)
        ids = json.dumps([int(i) for i in sample_ids])
        with self._write() as conn:
            media = conn.execute(
                "SELECT DISTINCT content_hash, ext FROM samples WHERE project_id = ? AND id IN "
                "(SELECT value FROM json_each(?)) AND ext IS NOT NULL",
                (project.id, ids),
            ).fetchall()
            removed = conn.execute(
                "DELETE FROM samples WHERE project_id = ? AND id IN (SELECT value FROM json_each(?))",
                (project.id, ids),
            ).rowcount
            unused = [
                (h, e)
                for h, e in media
                if conn.execute("SELECT 1 FROM samples WHERE content_hash = ? LIMIT 1", (h,)).fetchone()
                is None
            ]
        for content_hash, ext in unused:  # after the commit: a crash here only leaves orphans
            self.media.remove(content_hash, ext)
        return removed

    # ------------------------------------------------------------------ labels
    def _label_id(self, conn: sqlite3.Connection, project_id: int, name: str) -> int:
        name = _clean_label(name)
        row = conn.execute(
            "SELECT id FROM labels WHERE project_id = ? AND name = ?", (project_id, name)
        ).fetchone()
        if row is not None:
            return row[0]
        # a merged class's id keeps meaning the class it went into (stored masks), so it is never reused
        new_id = (conn.execute("SELECT MAX(id) FROM labels").fetchone()[0] or 0) + 1
        merged = conn.execute(
            "SELECT value FROM project_settings WHERE project_id = ? AND key = ?", (project_id, MERGED_KEY)
        ).fetchone()
        taken = {int(k) for k in json.loads(merged[0])} if merged else set()
        while new_id in taken:
            new_id += 1
        conn.execute("INSERT INTO labels(id, project_id, name) VALUES (?, ?, ?)", (new_id, project_id, name))
        return new_id

    def labels(self, project) -> list[str]:
        """The project's label names, sorted."""
        project = self.get_project(project)
        rows = self._conn().execute(
            "SELECT name FROM labels WHERE project_id = ? ORDER BY name", (project.id,)
        )
        return [row[0] for row in rows]

    def label_ids(self, project) -> dict[str, int]:
        """Label name -> its row id (stable across renames: what stored masks refer to)."""
        project = self.get_project(project)
        rows = self._conn().execute("SELECT name, id FROM labels WHERE project_id = ?", (project.id,))
        return dict(rows.fetchall())

    def add_label(self, project, name: str) -> None:
        """Add a label (no-op if it exists)."""
        project = self.get_project(project)
        with self._write() as conn:
            self._label_id(conn, project.id, name)

    def rename_label(self, project, old: str, new: str) -> None:
        """Rename a label everywhere; if ``new`` already exists the two labels are merged."""
        project = self.get_project(project)
        new = _clean_label(new)
        with self._write() as conn:
            row = conn.execute(
                "SELECT id FROM labels WHERE project_id = ? AND name = ?", (project.id, old)
            ).fetchone()
            if row is None:
                raise KeyError(f"project {project.name!r} has no label {old!r}")
            old_id = row[0]
            target = conn.execute(
                "SELECT id FROM labels WHERE project_id = ? AND name = ?", (project.id, new)
            ).fetchone()
            if target is None:
                conn.execute("UPDATE labels SET name = ? WHERE id = ?", (new, old_id))
            elif target[0] != old_id:
                conn.execute(
                    "INSERT OR IGNORE INTO sample_labels(sample_id, label_id) "
                    "SELECT sample_id, ? FROM sample_labels WHERE label_id = ?",
                    (target[0], old_id),
                )
                conn.execute("UPDATE boxes SET label_id = ? WHERE label_id = ?", (target[0], old_id))
                conn.execute("DELETE FROM labels WHERE id = ?", (old_id,))
                self._record_merge(conn, project.id, old_id, target[0])

    def _record_merge(self, conn, project_id: int, old_id: int, into_id: int) -> None:
        # Stored masks name their classes by label row id (datasets.masks): a merged class's row is gone,
        # so its id is remembered as now meaning the class it was merged into (earlier merges into it too).
        row = conn.execute(
            "SELECT value FROM project_settings WHERE project_id = ? AND key = ?", (project_id, MERGED_KEY)
        ).fetchone()
        merged = {int(k): int(v) for k, v in (json.loads(row[0]) if row else {}).items()}
        merged = {k: (into_id if v == old_id else v) for k, v in merged.items()}
        merged[old_id] = into_id
        conn.execute(
            "INSERT OR REPLACE INTO project_settings(project_id, key, value) VALUES (?, ?, ?)",
            (project_id, MERGED_KEY, json.dumps({str(k): v for k, v in merged.items()})),
        )

    def merged_labels(self, project) -> dict[int, int]:
        """Label row id of a class merged into another (``rename_label`` onto an existing name) -> the row
        id of the class it now is (what stored masks' old ids mean)."""
        return {int(k): int(v) for k, v in (self.setting(project, MERGED_KEY, {}) or {}).items()}

    def delete_label(self, project, name: str) -> None:
        """Delete a label with its tags and boxes; the samples stay (maybe unlabeled)."""
        project = self.get_project(project)
        with self._write() as conn:
            cur = conn.execute("DELETE FROM labels WHERE project_id = ? AND name = ?", (project.id, name))
            if cur.rowcount == 0:
                raise KeyError(f"project {project.name!r} has no label {name!r}")

    # ------------------------------------------------------------------ project settings
    def setting(self, project, key: str, default=None):
        """What the project remembers under ``key`` (a JSON value), or ``default``."""
        project = self.get_project(project)
        row = (
            self._conn()
            .execute("SELECT value FROM project_settings WHERE project_id = ? AND key = ?", (project.id, key))
            .fetchone()
        )
        return default if row is None else json.loads(row[0])

    def set_setting(self, project, key: str, value) -> None:
        """Remember a JSON value under ``key`` for the project (None forgets it)."""
        project = self.get_project(project)
        with self._write() as conn:
            if value is None:
                conn.execute(
                    "DELETE FROM project_settings WHERE project_id = ? AND key = ?", (project.id, key)
                )
            else:
                conn.execute(
                    "INSERT OR REPLACE INTO project_settings(project_id, key, value) VALUES (?, ?, ?)",
                    (project.id, key, json.dumps(value)),
                )

    def set_texts(self, texts: dict[int, str]) -> None:
        """Replace the inline content of samples (sample id -> text) in one transaction; the content
        hash, the sample's identity, stays what it was at import."""
        with self._write() as conn:
            conn.executemany(
                "UPDATE samples SET text = ? WHERE id = ?", [(t, int(i)) for i, t in texts.items()]
            )

    # ------------------------------------------------------------------ samples: reading
    def _filter_sql(self, project: Project, split, label, unlabeled, ids) -> tuple[str, list]:
        where = ["s.project_id = ?"]
        args: list[object] = [project.id]
        if split is not None:
            if split == "unassigned":
                where.append("s.split IS NULL")
            elif split in SPLITS:
                where.append("s.split = ?")
                args.append(split)
            else:
                raise ValueError(f"unknown split {split!r}; use train, val, test or unassigned")
        has_any = (
            "(EXISTS (SELECT 1 FROM sample_labels sl WHERE sl.sample_id = s.id) OR "
            "EXISTS (SELECT 1 FROM boxes b WHERE b.sample_id = s.id))"
        )
        if unlabeled is True:
            where.append("NOT " + has_any)
        elif unlabeled is False:
            where.append(has_any)
        if label is not None:
            where.append(
                "(EXISTS (SELECT 1 FROM sample_labels sl JOIN labels l ON l.id = sl.label_id "
                "WHERE sl.sample_id = s.id AND l.name = ?) OR EXISTS (SELECT 1 FROM boxes b "
                "JOIN labels l ON l.id = b.label_id WHERE b.sample_id = s.id AND l.name = ?))"
            )
            args += [label, label]
        if ids is not None:
            ids = [int(i) for i in ids]
            where.append("s.id IN (SELECT value FROM json_each(?))")
            args.append(json.dumps(ids))
        return " AND ".join(where), args

    def sample_ids(self, project, *, split=None, label=None, unlabeled=None) -> list[int]:
        """Ids of the matching samples in id order (cheap: no annotations are read)."""
        project = self.get_project(project)
        where, args = self._filter_sql(project, split, label, unlabeled, None)
        rows = self._conn().execute(f"SELECT s.id FROM samples s WHERE {where} ORDER BY s.id", args)
        return [row[0] for row in rows]

    def samples(
        self,
        project,
        *,
        split=None,
        label=None,
        unlabeled=None,
        ids=None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[Sample]:
        """The matching samples with their labels and boxes, in id order.

        ``split`` is ``"train"``, ``"val"``, ``"test"`` or ``"unassigned"``; ``label`` keeps samples
        with that tag or a box of that label; ``unlabeled=True`` keeps samples with neither.
        """
        project = self.get_project(project)
        where, args = self._filter_sql(project, split, label, unlabeled, ids)
        sql = (
            f"SELECT s.id, s.project_id, s.content_hash, s.kind, s.ext, s.text, s.source, s.split, "
            f"s.width, s.height, s.added, s.duration FROM samples s WHERE {where} ORDER BY s.id "
            f"LIMIT ? OFFSET ?"
        )
        rows = self._conn().execute(sql, args + [-1 if limit is None else int(limit), int(offset)])
        return self._hydrate(rows.fetchall())

    def ids_for_hashes(self, project, hashes) -> dict[str, int]:
        """content hash -> sample id, for those of ``hashes`` that are in the project."""
        project = self.get_project(project)
        hashes = list(dict.fromkeys(hashes))
        found: dict[str, int] = {}
        for start in range(0, len(hashes), _CHUNK):
            chunk = hashes[start : start + _CHUNK]
            rows = self._conn().execute(
                f"SELECT content_hash, id FROM samples WHERE project_id = ? AND content_hash IN "
                f"({','.join('?' * len(chunk))})",
                (project.id, *chunk),
            )
            found.update(rows)
        return found

    def get_sample(self, sample_id: int) -> Sample:
        """One sample by id; KeyError if there is none."""
        rows = self._conn().execute(
            "SELECT s.id, s.project_id, s.content_hash, s.kind, s.ext, s.text, s.source, s.split, "
            "s.width, s.height, s.added, s.duration FROM samples s WHERE s.id = ?",
            (int(sample_id),),
        )
        found = self._hydrate(rows.fetchall())
        if not found:
            raise KeyError(f"no sample with id {sample_id}")
        return found[0]

    def _hydrate(self, rows: list[tuple]) -> list[Sample]:
        conn = self._conn()
        tags: dict[int, set] = defaultdict(set)
        boxes: dict[int, list] = defaultdict(list)
        ids = [row[0] for row in rows]
        for start in range(0, len(ids), _CHUNK):
            chunk = json.dumps(ids[start : start + _CHUNK])
            for sid, name in conn.execute(
                "SELECT sl.sample_id, l.name FROM sample_labels sl JOIN labels l ON l.id = sl.label_id "
                "WHERE sl.sample_id IN (SELECT value FROM json_each(?))",
                (chunk,),
            ):
                tags[sid].add(name)
            for sid, name, x0, y0, x1, y1 in conn.execute(
                "SELECT b.sample_id, l.name, b.x0, b.y0, b.x1, b.y1 FROM boxes b "
                "JOIN labels l ON l.id = b.label_id WHERE b.sample_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY b.id",
                (chunk,),
            ):
                boxes[sid].append(Box(name, x0, y0, x1, y1))
        out = []
        for sid, pid, chash, kind, ext, text, source, split, width, height, added, duration in rows:
            sample_boxes = boxes.get(sid, [])
            names = tags.get(sid, set()) | {b.label for b in sample_boxes}
            out.append(
                Sample(
                    id=sid,
                    project_id=pid,
                    content_hash=chash,
                    kind=kind,
                    path=self.media.path(chash, ext) if ext else None,
                    text=text,
                    source=source,
                    split=split,
                    width=width,
                    height=height,
                    labels=sorted(names),
                    boxes=sample_boxes,
                    added=added,
                    duration=duration,
                )
            )
        return out

    # ------------------------------------------------------------------ samples: writing
    def add_samples(
        self, project, items: Sequence[NewSample], *, merge_labels: bool = False
    ) -> list[tuple[int, bool]]:
        """Insert verified samples in one transaction; return (sample_id, is_new) per item.

        The media of each item must already be in :attr:`media`. An item whose content is already
        in the project is not inserted (``is_new`` False); with ``merge_labels`` its labels are
        added to the existing sample (multi-label folders list one file under several labels).
        """
        project = self.get_project(project)
        now = time.time()
        out = []
        with self._write() as conn:
            label_ids: dict[str, int] = {}

            def lid(name):
                if name not in label_ids:
                    label_ids[name] = self._label_id(conn, project.id, name)
                return label_ids[name]

            for item in items:
                cur = conn.execute(
                    "INSERT OR IGNORE INTO samples(project_id, content_hash, kind, ext, text, source, "
                    "width, height, duration, added, split) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        project.id,
                        item.content_hash,
                        item.kind,
                        item.ext,
                        item.text,
                        item.source,
                        item.width,
                        item.height,
                        item.duration,
                        now,
                        item.split if item.split in SPLITS else None,
                    ),
                )
                if cur.rowcount == 1:
                    assert cur.lastrowid is not None  # the row was just inserted
                    sid, is_new = cur.lastrowid, True
                else:
                    sid = conn.execute(
                        "SELECT id FROM samples WHERE project_id = ? AND content_hash = ?",
                        (project.id, item.content_hash),
                    ).fetchone()[0]
                    is_new = False
                out.append((sid, is_new))
                if is_new or merge_labels:
                    if item.labels:
                        conn.executemany(
                            "INSERT OR IGNORE INTO sample_labels(sample_id, label_id) VALUES (?, ?)",
                            [(sid, lid(n)) for n in item.labels],
                        )
                if is_new and item.boxes:
                    conn.executemany(
                        "INSERT INTO boxes(sample_id, label_id, x0, y0, x1, y1) VALUES (?, ?, ?, ?, ?, ?)",
                        [(sid, lid(b.label), b.x0, b.y0, b.x1, b.y1) for b in item.boxes],
                    )
        return out

    def _sample_project(self, conn, sample_id: int) -> int:
        row = conn.execute("SELECT project_id FROM samples WHERE id = ?", (int(sample_id),)).fetchone()
        if row is None:
            raise KeyError(f"no sample with id {sample_id}")
        return row[0]

    def set_label(self, sample_id: int, label: str | None) -> None:
        """Single-label tasks: make ``label`` the sample's only class (None clears it).

        The label is created if new; a labelled sample without a split gets one.
        """
        with self._write() as conn:
            pid = self._sample_project(conn, sample_id)
            conn.execute("DELETE FROM sample_labels WHERE sample_id = ?", (int(sample_id),))
            if label is not None:
                conn.execute(
                    "INSERT INTO sample_labels(sample_id, label_id) VALUES (?, ?)",
                    (int(sample_id), self._label_id(conn, pid, label)),
                )
                self._assign(conn, pid, only=[int(sample_id)])

    def set_labels(self, labels: dict[int, str | None]) -> None:
        """:meth:`set_label` for many samples of one project in one transaction (sample id -> label)."""
        if not labels:
            return
        with self._write() as conn:
            pid = self._sample_project(conn, next(iter(labels)))
            ids = [int(i) for i in labels]
            for start in range(0, len(ids), _CHUNK):
                chunk = json.dumps(ids[start : start + _CHUNK])
                conn.execute(
                    "DELETE FROM sample_labels WHERE sample_id IN (SELECT value FROM json_each(?))", (chunk,)
                )
            label_ids: dict[str, int] = {}
            rows = []
            for sample_id, label in labels.items():
                if label is not None:
                    if label not in label_ids:
                        label_ids[label] = self._label_id(conn, pid, label)
                    rows.append((int(sample_id), label_ids[label]))
            conn.executemany("INSERT INTO sample_labels(sample_id, label_id) VALUES (?, ?)", rows)
            self._assign(conn, pid, only=[sid for sid, _ in rows])

    def set_tags(self, sample_id: int, labels: Iterable[str]) -> None:
        """Multi-label tasks: replace the sample's tags with ``labels``."""
        labels = sorted({_clean_label(n) for n in labels})
        with self._write() as conn:
            pid = self._sample_project(conn, sample_id)
            conn.execute("DELETE FROM sample_labels WHERE sample_id = ?", (int(sample_id),))
            conn.executemany(
                "INSERT INTO sample_labels(sample_id, label_id) VALUES (?, ?)",
                [(int(sample_id), self._label_id(conn, pid, n)) for n in labels],
            )
            if labels:
                self._assign(conn, pid, only=[int(sample_id)])

    def set_boxes(self, sample_id: int, boxes: Iterable[Box]) -> None:
        """Detection: replace the sample's boxes (pixels; each needs x0 < x1 and y0 < y1)."""
        boxes = list(boxes)
        for box in boxes:
            if not (box.x1 > box.x0 and box.y1 > box.y0):
                raise ValueError(f"box {box} has no area (need x0 < x1 and y0 < y1)")
        with self._write() as conn:
            pid = self._sample_project(conn, sample_id)
            conn.execute("DELETE FROM boxes WHERE sample_id = ?", (int(sample_id),))
            conn.executemany(
                "INSERT INTO boxes(sample_id, label_id, x0, y0, x1, y1) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        int(sample_id),
                        self._label_id(conn, pid, b.label),
                        float(b.x0),
                        float(b.y0),
                        float(b.x1),
                        float(b.y1),
                    )
                    for b in boxes
                ],
            )
            if boxes:
                self._assign(conn, pid, only=[int(sample_id)])

    # ------------------------------------------------------------------ splits and stats
    def assign_splits(self, project) -> dict[str, int]:
        """Give every labelled sample without a split one (70/15/15, stratified, stable).

        Returns how many samples went to each split in this call.
        """
        project = self.get_project(project)
        with self._write() as conn:
            chosen = self._assign(conn, project.id, only=None)
        return dict(Counter(chosen.values()))

    def _assign(self, conn, project_id: int, only: list[int] | None) -> dict[int, str]:
        if only is not None and len(only) <= 10:
            return self._assign_few(conn, project_id, only)
        return self._assign_all(conn, project_id, only)

    def _assign_few(self, conn, project_id: int, only: list[int]) -> dict[int, str]:
        """The labelling fast path: indexed counts for the sample's rarest label (no full scan)."""
        chosen = {}
        for sid in only:
            row = conn.execute("SELECT content_hash, split FROM samples WHERE id = ?", (sid,)).fetchone()
            if row is None or row[1] is not None:
                continue
            label_ids = [
                r[0]
                for r in conn.execute(
                    "SELECT label_id FROM sample_labels WHERE sample_id = ? UNION "
                    "SELECT label_id FROM boxes WHERE sample_id = ?",
                    (sid, sid),
                )
            ]
            if not label_ids:
                continue

            def users(label_id, split_sql=""):
                return conn.execute(
                    "SELECT COUNT(*) FROM samples s WHERE s.id IN (SELECT sample_id FROM sample_labels "
                    f"WHERE label_id = ? UNION SELECT sample_id FROM boxes WHERE label_id = ?){split_sql}",
                    (label_id, label_id),
                ).fetchone()[0]

            names = dict(
                conn.execute(
                    "SELECT id, name FROM labels WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps(label_ids),),
                ).fetchall()
            )
            key_id = min(label_ids, key=lambda i: (users(i), names[i]))
            counts = {split: users(key_id, f" AND s.split = '{split}'") for split in SPLITS}
            chosen.update(_splits.assign([(sid, row[0], names[key_id])], {names[key_id]: counts}))
        conn.executemany(
            "UPDATE samples SET split = ? WHERE id = ?", [(split, sid) for sid, split in chosen.items()]
        )
        return chosen

    def _assign_all(self, conn, project_id: int, only: list[int] | None) -> dict[int, str]:
        names: dict[int, set] = defaultdict(set)
        info: dict[int, tuple] = {}
        for sid, chash, split, name in conn.execute(
            "SELECT s.id, s.content_hash, s.split, l.name FROM samples s "
            "JOIN sample_labels sl ON sl.sample_id = s.id JOIN labels l ON l.id = sl.label_id "
            "WHERE s.project_id = ? UNION ALL "
            "SELECT s.id, s.content_hash, s.split, l.name FROM samples s "
            "JOIN boxes b ON b.sample_id = s.id JOIN labels l ON l.id = b.label_id "
            "WHERE s.project_id = ?",
            (project_id, project_id),
        ):
            names[sid].add(name)
            info[sid] = (chash, split)
        freq = Counter(n for labels in names.values() for n in labels)

        def key(sid):  # stratify by the sample's rarest label
            return min(names[sid], key=lambda n: (freq[n], n))

        counts: dict[str, dict[str, int]] = defaultdict(lambda: {s: 0 for s in SPLITS})
        new = []
        wanted = None if only is None else set(only)
        for sid, (chash, split) in info.items():
            if split is not None:
                counts[key(sid)][split] += 1
            elif wanted is None or sid in wanted:
                new.append((sid, chash, key(sid)))
        chosen = _splits.assign(new, dict(counts))
        conn.executemany(
            "UPDATE samples SET split = ? WHERE id = ?", [(split, sid) for sid, split in chosen.items()]
        )
        return chosen

    def set_splits(self, splits: dict[int, str | None]) -> None:
        """Put samples in the given splits (a removal undone keeps the test photos it had)."""
        with self._write() as conn:
            conn.executemany(
                "UPDATE samples SET split = ? WHERE id = ?", [(s, int(i)) for i, s in splits.items()]
            )

    def clear_splits(self, project) -> None:
        """Forget every split of the project (the next assignment starts from scratch)."""
        project = self.get_project(project)
        with self._write() as conn:
            conn.execute("UPDATE samples SET split = NULL WHERE project_id = ?", (project.id,))

    def stats(self, project) -> dict:
        """Counts for the project, with the keys of the CLI's ``stats`` JSON.

        ``labels`` maps each label to the number of samples tagged with it, or for detection the
        number of boxes with it; labels with no samples are listed with 0.
        """
        project = self.get_project(project)
        conn = self._conn()
        pid = project.id
        samples = conn.execute("SELECT COUNT(*) FROM samples WHERE project_id = ?", (pid,)).fetchone()[0]
        labeled = conn.execute(
            "SELECT COUNT(*) FROM samples s WHERE s.project_id = ? AND (EXISTS (SELECT 1 FROM "
            "sample_labels sl WHERE sl.sample_id = s.id) OR EXISTS (SELECT 1 FROM boxes b "
            "WHERE b.sample_id = s.id))",
            (pid,),
        ).fetchone()[0]
        boxes = conn.execute(
            "SELECT COUNT(*) FROM boxes b JOIN samples s ON s.id = b.sample_id WHERE s.project_id = ?", (pid,)
        ).fetchone()[0]
        if project.target == "boxes":
            label_sql = (
                "SELECT l.name, COUNT(b.id) FROM labels l LEFT JOIN boxes b ON b.label_id = l.id "
                "WHERE l.project_id = ? GROUP BY l.id ORDER BY l.name"
            )
        else:
            label_sql = (
                "SELECT l.name, COUNT(sl.sample_id) FROM labels l LEFT JOIN sample_labels sl "
                "ON sl.label_id = l.id WHERE l.project_id = ? GROUP BY l.id ORDER BY l.name"
            )
        labels = {name: count for name, count in conn.execute(label_sql, (pid,))}
        split_counts = {"train": 0, "val": 0, "test": 0, "unassigned": 0}
        for split, count in conn.execute(
            "SELECT split, COUNT(*) FROM samples WHERE project_id = ? GROUP BY split", (pid,)
        ):
            split_counts[split or "unassigned"] = count
        return {
            "project": project.name,
            "task": project.task,
            "kind": project.kind,
            "samples": samples,
            "labeled": labeled,
            "labels": labels,
            "boxes": boxes,
            "splits": split_counts,
        }

    # ------------------------------------------------------------------ thumbnails
    def thumbnail(self, sample_id: int, size: int = 160) -> Path:
        """A JPEG thumbnail (longest side ``size``) of a sample, drawn by its kind (``datasets/kinds/``),
        made once and cached."""
        sample = self.get_sample(sample_id)
        dest = self.thumbs_dir / sample.content_hash[:2] / f"{sample.content_hash}_{int(size)}.jpg"
        return kind_thumbnail(sample, dest, int(size))

    # ------------------------------------------------------------------ models and predictions
    def add_model(self, project, model_id: str, path, template: str, metrics: dict) -> None:
        """Record a trained model of the project (replaces a record with the same id)."""
        project = self.get_project(project)
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO models(id, project_id, path, template, metrics, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (str(model_id), project.id, str(path), template, json.dumps(metrics), time.time()),
            )

    def _model_row(self, row) -> dict:
        mid, pid, path, template, metrics, created, pname = row
        return {
            "id": mid,
            "project": pname,
            "project_id": pid,
            "path": path,
            "template": template,
            "metrics": json.loads(metrics),
            "created": created,
        }

    def list_models(self, project) -> list[dict]:
        """The project's models, oldest first: dicts with id, project, path, template, metrics, created."""
        project = self.get_project(project)
        rows = self._conn().execute(
            "SELECT m.id, m.project_id, m.path, m.template, m.metrics, m.created, p.name FROM models m "
            "JOIN projects p ON p.id = m.project_id WHERE m.project_id = ? ORDER BY m.created, m.id",
            (project.id,),
        )
        return [self._model_row(r) for r in rows]

    def get_model(self, model_id: str) -> dict:
        """One model record; KeyError if unknown."""
        row = (
            self._conn()
            .execute(
                "SELECT m.id, m.project_id, m.path, m.template, m.metrics, m.created, p.name FROM models m "
                "JOIN projects p ON p.id = m.project_id WHERE m.id = ?",
                (str(model_id),),
            )
            .fetchone()
        )
        if row is None:
            raise KeyError(f"no model with id {model_id!r}")
        return self._model_row(row)

    def save_predictions(self, model_id: str, rows: Iterable[tuple[int, str, float]]) -> None:
        """Store (sample_id, label, score) predictions of a model, replacing older ones per sample."""
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM models WHERE id = ?", (str(model_id),)).fetchone() is None:
                raise KeyError(f"no model with id {model_id!r}")
            conn.executemany(
                "INSERT OR REPLACE INTO predictions(model_id, sample_id, label, score) VALUES (?, ?, ?, ?)",
                [(str(model_id), int(s), label, float(score)) for s, label, score in rows],
            )

    def predictions(self, model_id: str) -> dict[int, tuple[str, float]]:
        """sample_id -> (label, score) for every stored prediction of the model."""
        rows = self._conn().execute(
            "SELECT sample_id, label, score FROM predictions WHERE model_id = ?", (str(model_id),)
        )
        return {sid: (label, score) for sid, label, score in rows}

    # ------------------------------------------------------------------ maintenance
    def cleanup(self, max_age_s: float = 3600.0, should_stop=None) -> dict:
        """Remove what interrupted work left behind, if older than ``max_age_s``; returns counts.

        Temporary files, folders under ``tmp/`` and media no sample uses: see
        :func:`~modeldesk.datasets.cleanup.cleanup_workspace`.
        """
        return cleanup_workspace(self, max_age_s, should_stop)

    def quick_check(self) -> str:
        """SQLite's ``PRAGMA quick_check`` (``"ok"`` when sound, else the first problem found)."""
        return quick_check(self._conn())

    def used_media_hashes(self) -> set[str]:
        """The content hashes of every media file some sample uses (what recovery must not re-import)."""
        rows = self._conn().execute("SELECT DISTINCT content_hash FROM samples WHERE ext IS NOT NULL")
        return {content_hash for (content_hash,) in rows}

    def salvage_from(self, damaged_db) -> dict:
        """Copy the rows still readable in the damaged database file ``damaged_db`` into this (new,
        empty) workspace database: see :func:`~modeldesk.datasets.salvage.salvage_rows`."""
        if self.read_only:
            raise ReadOnlyWorkspaceError(
                f"the workspace {self.root} is read-only: nothing can be salvaged into it"
            )
        return salvage_rows(Path(damaged_db), self._conn())

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` result (``"ok"`` when sound)."""
        return self._conn().execute("PRAGMA integrity_check").fetchone()[0]


def _clean_label(name) -> str:
    name = str(name).strip()
    if not name:
        raise ValueError("a label needs a non-empty name")
    return name


__all__ = ["Store", "NewSample"]
