"""Keeping a workspace healthy: opening it read-only when it must be, cleaning up after killed work in
the background, and ``modeldesk recover`` for a damaged database.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

from modeldesk.app.logs import setup_logging
from modeldesk.app.paths import WorkspacePaths
from modeldesk.datasets import Store, import_path
from modeldesk.datasets.dbfile import (
    DamagedWorkspaceError,
    check_database,
    is_corrupt,
    is_writable,
    latest_backup,
)
from modeldesk.datasets.safety import WorkspaceWriteError, write_error
from modeldesk.datasets.verify import media_kind

log = logging.getLogger(__name__)

#: The background cleanup runs at most this often per workspace (a marker file keeps the time).
CLEANUP_EVERY_S = 600.0
_MARKER = "last-cleanup"


def open_paths(root) -> tuple[WorkspacePaths, bool]:
    """The workspace layout, created where possible; returns (paths, read_only).

    An existing folder that cannot be written opens read-only. A folder that does not exist and
    cannot be created raises WorkspaceWriteError with one sentence naming it.
    """
    paths = WorkspacePaths(root)
    if paths.root.is_dir() and not is_writable(paths.root):
        log.info("workspace %s is read-only; opening it read-only", paths.root)
        return paths, True
    try:
        return paths.create(), False
    except OSError as exc:
        raise write_error(exc, paths.root, doing="create the workspace") from None


class BackgroundCleanup:
    """Runs ``store.cleanup()`` once in a daemon thread; :meth:`stop` ends it early and waits."""

    def __init__(self, store: Store, marker: Path):
        self.store = store
        self.marker = marker
        self.result: dict | None = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="modeldesk-cleanup", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.marker.parent.mkdir(parents=True, exist_ok=True)
            self.marker.touch()
            self.result = self.store.cleanup(should_stop=self._stop.is_set)
            if any(self.result.values()):
                log.info("cleaned up what interrupted work left behind: %s", self.result)
        except Exception:  # noqa: BLE001 - cleanup is best effort; a closed store ends it too
            if not self._stop.is_set():
                log.warning("cleaning up the workspace failed", exc_info=True)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self.thread.join(timeout)


def start_cleanup(
    store: Store, cache_dir: Path, every_s: float = CLEANUP_EVERY_S
) -> BackgroundCleanup | None:
    """Start the background cleanup unless it ran less than ``every_s`` ago (or the store is read-only)."""
    if store.read_only:
        return None
    marker = Path(cache_dir) / _MARKER
    try:
        if time.time() - marker.stat().st_mtime < every_s:
            return None
    except OSError:
        pass
    return BackgroundCleanup(store, marker)


# -------------------------------------------------------------------------------------------- recover
def _set_aside(db: Path, stamp: str) -> Path:
    aside = db.with_name(f"{db.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(str(db) + suffix)
        if source.exists():
            os.replace(source, Path(str(aside) + suffix))
    return aside


def _orphans(store: Store) -> dict[str, list[Path]]:
    """Media files no sample refers to, by kind ("image", "audio")."""
    found: dict[str, list[Path]] = {}
    if not store.media.root.is_dir():
        return found
    used = store.used_media_hashes()
    for path in sorted(store.media.root.glob("*/*")):
        if path.name.startswith(".") or not path.is_file() or path.name.split(".")[0] in used:
            continue
        kind = media_kind(path.suffix.lower())
        if kind:
            found.setdefault(kind, []).append(path)
    return found


def _import_orphans(store: Store, kind: str, files: list[Path], stamp: str) -> dict:
    task = {"image": "image-classification", "audio": "sound-classification"}[kind]
    project = store.create_project(f"recovered {kind} {stamp}", task, kind=kind, target="label")
    staging = store.tmp_dir / f"recover-{stamp}-{kind}"
    staging.mkdir(parents=True, exist_ok=True)
    try:
        for path in files:
            try:
                os.link(path, staging / path.name)
            except OSError:
                shutil.copyfile(path, staging / path.name)
        report = import_path(store, project, staging, format="flat")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {"project": project.name, "added": report.added, "failed": report.failed}


def _damage(paths: WorkspacePaths) -> str | None:
    """What is wrong with the workspace database (None when it is sound, or not there yet)."""
    try:
        check_database(paths.db, paths.media)
        with Store(paths.root) as store:  # a large database is checked here even when opening skipped it
            problem = store.quick_check()
    except DamagedWorkspaceError as exc:
        return str(exc)
    except sqlite3.DatabaseError as exc:
        if is_corrupt(exc):
            return str(exc)
        raise
    return None if problem == "ok" else f"{paths.db} is damaged ({problem})"


def _rebuild(paths: WorkspacePaths, aside: Path, result: dict) -> None:
    """A new ``workspace.db`` holding what the damaged one still had, or else the newest backup."""
    with Store(paths.root) as store:
        salvaged = store.salvage_from(aside)
    result["salvaged"] = salvaged
    backup = latest_backup(paths.root)
    if salvaged["tables"].get("projects") or backup is None:
        return
    log.info("nothing could be salvaged from %s; restoring the backup %s", aside, backup)
    for suffix in ("", "-wal", "-shm"):
        Path(str(paths.db) + suffix).unlink(missing_ok=True)
    shutil.copyfile(backup, paths.db)
    result["restored_backup"] = str(backup)


def recover_workspace(root) -> dict:
    """Make a workspace with a damaged database usable again, losing as little as possible.

    The damaged ``workspace.db`` is renamed to ``workspace.db.damaged-<time>`` (kept, never deleted);
    a new database gets every row still readable in it (see :mod:`~modeldesk.datasets.salvage`), or,
    when not even its projects can be read, the newest backup (made before each schema upgrade) is
    restored; then every media file no sample refers to is imported, unlabeled, into a new project
    per kind (``recovered image <time>``). A healthy database is left as it is and only the orphan
    media are imported. Damage is found by SQLite's ``quick_check`` (damaged pages behind an intact
    header), as well as a file that is empty, cut short or overwritten.

    Returns
    -------
    dict
        ``damaged`` (bool), ``set_aside`` (path or None), ``salvaged`` (None, or rows copied per table,
        ``damaged_regions`` and ``dropped`` rows), ``restored_backup`` (path or None), ``projects``
        (one ``{project, added, failed}`` per kind of recovered media).
    """
    paths = WorkspacePaths(root)
    if not paths.root.is_dir():
        raise FileNotFoundError(f"{paths.root} is not a workspace folder")
    if not is_writable(paths.root):
        raise WorkspaceWriteError(
            f"the workspace folder {paths.root} is read-only: copy it somewhere writable "
            "and run recover on the copy"
        )
    setup_logging(paths.log)  # what was salvaged and what not goes to the log, not the terminal
    stamp = time.strftime("%Y%m%d-%H%M%S")
    result = {"damaged": False, "set_aside": None, "salvaged": None, "restored_backup": None, "projects": []}
    problem = _damage(paths)
    if problem:
        log.warning("recovering %s: %s", paths.root, problem)
        result["damaged"] = True
        aside = _set_aside(paths.db, stamp)
        result["set_aside"] = str(aside)
        try:
            _rebuild(paths, aside, result)
        except BaseException:  # a full disk, say: put the damaged file back, so a later run can retry
            for suffix in ("", "-wal", "-shm"):
                Path(str(paths.db) + suffix).unlink(missing_ok=True)
                if Path(str(aside) + suffix).exists():
                    os.replace(Path(str(aside) + suffix), Path(str(paths.db) + suffix))
            raise
    try:
        with Store(paths.root) as store:
            for kind, files in sorted(_orphans(store).items()):
                result["projects"].append(_import_orphans(store, kind, files, stamp))
    except (DamagedWorkspaceError, sqlite3.DatabaseError) as exc:  # the restored backup is damaged too
        kept = f"; the damaged file is kept as {result['set_aside']}" if result["set_aside"] else ""
        raise DamagedWorkspaceError(
            f"the workspace {paths.root} could not be recovered ({exc}){kept}: move workspace.db away and "
            "run `modeldesk recover` again to start a new database and bring the media back"
        ) from exc
    log.info("recovered workspace %s: %s", paths.root, result)
    return result


def recover_text(result: dict) -> str:
    """The human summary of :func:`recover_workspace`."""
    lines = []
    salvaged = result.get("salvaged") or {}
    if result["damaged"]:
        lines.append(f"set the damaged database aside as {result['set_aside']}")
        if result["restored_backup"]:
            lines.append(f"nothing could be read from it; restored the backup {result['restored_backup']}")
        else:
            rows = salvaged.get("tables", {})
            lines.append(
                f"copied what could still be read into a new database: {rows.get('projects', 0):,} projects, "
                f"{rows.get('samples', 0):,} samples, {rows.get('sample_labels', 0):,} labels, "
                f"{rows.get('boxes', 0):,} boxes, {rows.get('models', 0):,} models"
            )
            if salvaged.get("damaged_regions"):
                lines.append(
                    f"{salvaged['damaged_regions']:,} damaged part(s) could not be read; the rows in them are "
                    "lost (their media files come back below, unlabeled)"
                )
    else:
        lines.append("the database is healthy; nothing was set aside")
    for entry in result["projects"]:
        lines.append(
            f"imported {entry['added']} media files no sample used into project {entry['project']!r} "
            "(unlabeled)"
        )
    if not result["projects"]:
        lines.append("every media file belongs to a sample; nothing to bring back")
    return "\n".join(lines)
