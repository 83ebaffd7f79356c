"""The workspace database file: checked before it is opened, opened read-only where it must be, and
backed up before a migration changes it.

A ``workspace.db`` emptied to 0 bytes or cut short (a failing disk, a sync tool, a bad copy) must not
be taken for a new workspace: the media files beside it are all that is left of the user's data.
:func:`check_database` refuses such a file with a message that says how to recover, before SQLite
touches it. A workspace on a read-only disk or folder is opened read-only (SQLite's ``mode=ro``, or
``immutable`` when no WAL file is there, since a read-only WAL database needs its ``-shm`` file).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from .safety import SQLITE_CORRUPT, SQLITE_NOTADB

log = logging.getLogger(__name__)

SQLITE_MAGIC = b"SQLite format 3\x00"
BACKUP_DIR = "backups"
KEEP_BACKUPS = 3
#: ``PRAGMA quick_check`` reads every page (0.27 s for 64 MB, measured on a loaded 2-core machine): a
#: database up to this size is checked each time it is opened, a larger one at most once a day.
QUICK_CHECK_MAX_BYTES = 32 << 20
QUICK_CHECK_EVERY_S = 24 * 3600.0
_QUICK_CHECK_MARKER = Path("cache") / "last-quick-check"


class DamagedWorkspaceError(RuntimeError):
    """``workspace.db`` is damaged; the message says what is left and how to recover."""

    user_error = True


class ReadOnlyWorkspaceError(PermissionError):
    """A change was asked of a workspace opened read-only."""

    user_error = True

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def is_writable(folder) -> bool:
    """Whether files can be created in ``folder`` (tried for real: permissions, a read-only mount, ...)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=folder)
    except OSError:
        return False
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return True


def count_files(folder: Path, limit: int = 10**9) -> int:
    """Regular files under ``folder`` (stops counting at ``limit``)."""
    count = 0
    for _root, _dirs, files in os.walk(folder):
        count += len(files)
        if count >= limit:
            break
    return count


def latest_backup(root: Path) -> Path | None:
    """The newest database backup of the workspace, or None."""
    backups = sorted((Path(root) / BACKUP_DIR).glob("workspace-*.db"), key=lambda p: p.stat().st_mtime)
    return backups[-1] if backups else None


def _recovery_hint(root: Path, media_root: Path) -> str:
    media = count_files(media_root) if media_root.is_dir() else 0
    backup = latest_backup(root)
    kept = (
        f"the {media:,} media files in {media_root} are untouched" if media else "no media files are affected"
    )
    if backup is not None:
        step = (
            f"run `modeldesk recover --workspace {root}`: it sets the damaged file aside, copies every "
            "project, sample and label it can still read into a new database (or restores the backup "
            f"{backup.name} when nothing can be read) and brings back the other media as unlabeled samples"
        )
    else:
        step = (
            f"run `modeldesk recover --workspace {root}`: it sets the damaged file aside, copies every "
            "project, sample and label it can still read into a new database and brings back the other "
            "media as unlabeled samples in a new project, or restore workspace.db from your own backup"
        )
    return f"ModelDesk has not changed anything; {kept}. To recover, {step}"


def check_database(db_path: Path, media_root: Path) -> None:
    """Refuse a damaged ``workspace.db`` before SQLite opens it; a missing file is fine (a new workspace).

    Raises DamagedWorkspaceError for a file of 0 bytes while the workspace holds data (media or
    models), a file that is not SQLite, and a file shorter than its header says (truncated).
    """
    db_path = Path(db_path)
    try:
        size = db_path.stat().st_size
    except FileNotFoundError:
        return
    root = db_path.parent
    if size == 0:
        has_data = (
            (media_root.is_dir() and count_files(media_root, 1) > 0)
            or latest_backup(root) is not None
            or ((root / "models").is_dir() and any((root / "models").iterdir()))
        )
        if has_data:
            raise DamagedWorkspaceError(
                f"{db_path} is empty (0 bytes), so the workspace's projects and labels "
                f"are gone from it; {_recovery_hint(root, media_root)}"
            )
        return  # killed while the workspace was being created: nothing to lose
    with open(db_path, "rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise DamagedWorkspaceError(
            f"{db_path} is not a SQLite database (its first bytes are wrong: it was "
            f"overwritten or cut short); {_recovery_hint(root, media_root)}"
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    header_valid = header[24:28] == header[92:96]  # the page count is trusted only when this matches
    wal = db_path.with_name(db_path.name + "-wal")
    pending_wal = wal.exists() and wal.stat().st_size > 0  # a checkpoint may be half done: SQLite redoes it
    if header_valid and pages and not pending_wal and size < pages * page_size:
        raise DamagedWorkspaceError(
            f"{db_path} is truncated ({size:,} of {pages * page_size:,} bytes); "
            f"{_recovery_hint(root, media_root)}"
        )


def damaged(db_path: Path, media_root: Path, exc) -> DamagedWorkspaceError:
    """The error for SQLite finding the file corrupt ("malformed", "not a database", what quick_check
    found): it names the file and says how to recover."""
    return DamagedWorkspaceError(
        f"{db_path} is damaged ({exc}); {_recovery_hint(Path(db_path).parent, media_root)}"
    )


def connect_uri(db_path: Path, read_only: bool) -> tuple[str, bool]:
    """(database, uri) arguments for ``sqlite3.connect``: the path, or a read-only URI."""
    if not read_only:
        return str(db_path), False
    wal = Path(str(db_path) + "-wal")
    # Without a -wal/-shm pair SQLite cannot open a WAL database read-only in a read-only folder,
    # but nothing can be writing there either, so the file can be read as immutable.
    extra = "" if wal.exists() else "&immutable=1"
    return f"file:{quote(str(db_path))}?mode=ro{extra}", True


def backup_database(conn: sqlite3.Connection, root: Path, version: int) -> Path:
    """Copy the database (schema ``version``) to ``backups/`` before a migration; keep the last few."""
    folder = Path(root) / BACKUP_DIR
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = folder / f"workspace-v{version}-{stamp}.db"
    partial = target.with_name(target.name + ".partial")
    with sqlite3.connect(partial) as copy:
        conn.backup(copy)
    copy.close()
    os.replace(partial, target)
    for old in sorted(folder.glob("workspace-*.db"), key=lambda p: p.stat().st_mtime)[:-KEEP_BACKUPS]:
        old.unlink(missing_ok=True)
    log.info(
        "backed up %s (schema %d) to %s before upgrading it", Path(root) / "workspace.db", version, target
    )
    return target


def quick_check(conn: sqlite3.Connection) -> str:
    """``"ok"``, or the first problem SQLite's ``PRAGMA quick_check`` finds (damaged pages, a broken
    index, a page SQLite cannot even read)."""
    try:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as exc:
        if is_corrupt(exc):
            return str(exc)
        raise
    return " ".join(str(row[0]).split()) if row else "ok"  # SQLite's report spans lines: keep one


def _quick_check_due(db_path: Path) -> bool:
    try:
        if db_path.stat().st_size <= QUICK_CHECK_MAX_BYTES:
            return True
        return time.time() - (db_path.parent / _QUICK_CHECK_MARKER).stat().st_mtime > QUICK_CHECK_EVERY_S
    except OSError:
        return True


def _note_quick_check(db_path: Path) -> None:
    if db_path.stat().st_size <= QUICK_CHECK_MAX_BYTES:
        return
    marker = db_path.parent / _QUICK_CHECK_MARKER
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:  # a read-only workspace: it is checked again next time
        pass


def is_corrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying the database file is damaged ("malformed", "not a database")."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    return code in (SQLITE_CORRUPT, SQLITE_NOTADB) or any(
        words in str(exc) for words in ("malformed", "not a database")
    )


def open_database(connect, db_path: Path, media_root: Path, read_only: bool) -> int:
    """Check, open and (when writable) migrate a workspace database; returns the schema version it had.

    ``connect()`` gives the calling thread's connection. A database about to be migrated is backed up
    first. Raises DamagedWorkspaceError for a damaged file and ReadOnlyWorkspaceError for a read-only
    workspace whose database is too old to read without a migration.
    """
    from .schema import SCHEMA_VERSION, migrate

    check_database(db_path, media_root)
    try:
        conn = connect()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version and _quick_check_due(db_path):  # damaged pages behind an intact header
            problem = quick_check(conn)
            if problem != "ok":
                raise damaged(db_path, media_root, problem)
            _note_quick_check(db_path)
        if read_only:
            if version < SCHEMA_VERSION:
                raise ReadOnlyWorkspaceError(
                    f"the workspace {db_path.parent} is read-only and was written by an older ModelDesk: it "
                    "must be upgraded once, which needs write access; make the folder writable and try again"
                )
            return migrate(conn) if version > SCHEMA_VERSION else version
        conn.execute("PRAGMA journal_mode=WAL")
        if 0 < version < SCHEMA_VERSION:
            backup_database(conn, db_path.parent, version)
        return migrate(conn)
    except sqlite3.DatabaseError as exc:
        if is_corrupt(exc):
            raise damaged(db_path, media_root, exc) from None
        raise
