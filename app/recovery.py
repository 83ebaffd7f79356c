"""Keeping a workspace healthy: opening it read-only when it must be, cleaning up after killed work in
the background, and ``modeldesk recover`` for a damaged database.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from pathlib import Path

from modeldesk.app.paths import WorkspacePaths
from modeldesk.datasets import Store, import_path
from modeldesk.datasets.dbfile import DamagedWorkspaceError, check_database, is_writable, latest_backup
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
    conn = store._conn()
    for path in sorted(store.media.root.glob("*/*")):
        if path.name.startswith(".") or not path.is_file():
            continue
        if (
            conn.execute(
                "SELECT 1 FROM samples WHERE content_hash = ? LIMIT 1", (path.name.split(".")[0],)
            ).fetchone()
            is None
        ):
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


def recover_workspace(root) -> dict:
    """Make a workspace with a damaged database usable again, losing as little as possible.

    The damaged ``workspace.db`` is renamed to ``workspace.db.damaged-<time>`` (kept, never deleted);
    the newest backup (made before each schema upgrade) is restored if there is one; then every media
    file no sample refers to is imported, unlabeled, into a new project per kind (``recovered image
    <time>``). A healthy database is left as it is and only the orphan media are imported.

    Returns
    -------
    dict
        ``damaged`` (bool), ``set_aside`` (path or None), ``restored_backup`` (path or None),
        ``projects`` (one ``{project, added, failed}`` per kind of recovered media).
    """
    paths = WorkspacePaths(root)
    if not paths.root.is_dir():
        raise FileNotFoundError(f"{paths.root} is not a workspace folder")
    if not is_writable(paths.root):
        raise WorkspaceWriteError(
            f"the workspace folder {paths.root} is read-only: copy it somewhere writable "
            "and run recover on the copy"
        )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    result = {"damaged": False, "set_aside": None, "restored_backup": None, "projects": []}
    try:
        check_database(paths.db, paths.media)
        Store(paths.root).close()
    except DamagedWorkspaceError as exc:
        log.warning("recovering %s: %s", paths.root, exc)
        result["damaged"] = True
        result["set_aside"] = str(_set_aside(paths.db, stamp))
        backup = latest_backup(paths.root)
        if backup is not None:
            shutil.copyfile(backup, paths.db)
            result["restored_backup"] = str(backup)
    with Store(paths.root) as store:
        for kind, files in sorted(_orphans(store).items()):
            result["projects"].append(_import_orphans(store, kind, files, stamp))
    log.info("recovered workspace %s: %s", paths.root, result)
    return result


def recover_text(result: dict) -> str:
    """The human summary of :func:`recover_workspace`."""
    lines = []
    if result["damaged"]:
        lines.append(f"set the damaged database aside as {result['set_aside']}")
        lines.append(
            f"restored the backup {result['restored_backup']}"
            if result["restored_backup"]
            else "started a new database (no backup was found)"
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
