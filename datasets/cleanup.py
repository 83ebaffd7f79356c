"""Removing what interrupted work left in a workspace: temporary files, scratch folders, orphan media.

A killed import can leave media files that no sample refers to, a killed write a ``.tmp-*`` file, a
killed unzip, evaluation or compression a folder under ``tmp/``. :func:`cleanup_workspace` removes them
once they are older than an age limit (so that work running right now keeps its files); the app runs
it in the background when it opens a workspace.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


def _newest_mtime(path: Path) -> float:
    """The latest modification time of ``path`` or anything under it (a folder in use is touched inside)."""
    newest = path.stat().st_mtime
    if path.is_dir():
        for folder, _dirs, files in os.walk(path):
            for name in files:
                try:
                    newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime)
                except OSError:
                    pass
    return newest


def _is_temp(name: str) -> bool:
    """A temporary file of an unfinished atomic write (``.x.jpg.abc123.tmp``, or the older ``.tmp-*``)."""
    return name.startswith(".tmp-") or (name.startswith(".") and name.endswith(".tmp"))


def _referenced(conn, content_hash: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM samples WHERE content_hash = ? LIMIT 1", (content_hash,)).fetchone()
        is not None
    )


def remove_unreferenced(store, media: dict[str, str]) -> int:
    """Delete those of ``media`` (hash -> extension) that no sample refers to; returns how many.

    Called at the end of an import for the files it wrote whose rows were not committed. Never
    raises: a failure here must not hide the error that stopped the import.
    """
    removed = 0
    if not media:
        return 0
    try:
        conn = store._conn()
        for content_hash, ext in media.items():
            if not _referenced(conn, content_hash):
                store.media.remove(content_hash, ext)
                removed += 1
    except Exception:  # noqa: BLE001 - best effort; the start-up cleanup catches what is left
        log.warning("could not remove the media files of an unfinished import", exc_info=True)
    return removed


def cleanup_workspace(
    store, max_age_s: float = 3600.0, should_stop: Callable[[], bool] | None = None
) -> dict:
    """Remove what interrupted work left behind, if older than ``max_age_s``; returns counts.

    That is: temporary files of unfinished writes (``.*.tmp``), folders under ``tmp/`` (unzip, evaluation
    and compression scratch space), and media files no sample refers to. Orphan media are left alone
    when the database holds no sample at all: that is a new or a replaced database, and the files may
    be all that is left of the user's data (``modeldesk recover`` imports them). ``should_stop`` is
    polled between files.
    """
    stop = should_stop or (lambda: False)
    cutoff = time.time() - max_age_s
    removed = {"temp_files": 0, "unzip_folders": 0, "orphan_media": 0}

    def old(path: Path) -> bool:
        try:
            return _newest_mtime(path) < cutoff
        except FileNotFoundError:
            return False

    if store.tmp_dir.is_dir():
        for folder in store.tmp_dir.iterdir():
            if stop():
                return removed
            if old(folder):
                if folder.is_dir():
                    shutil.rmtree(folder, ignore_errors=True)
                else:
                    folder.unlink(missing_ok=True)
                removed["unzip_folders"] += 1
    conn = store._conn()
    any_sample = conn.execute("SELECT 1 FROM samples LIMIT 1").fetchone() is not None
    for base in (store.media.root, store.thumbs_dir):
        if not base.is_dir():
            continue
        for shard in base.iterdir():
            if not shard.is_dir():
                continue
            for path in shard.iterdir():
                if stop():
                    return removed
                if _is_temp(path.name):
                    if old(path):
                        path.unlink(missing_ok=True)
                        removed["temp_files"] += 1
                elif (
                    base == store.media.root
                    and any_sample
                    and old(path)
                    and not _referenced(conn, path.name.split(".")[0])
                ):
                    path.unlink(missing_ok=True)
                    removed["orphan_media"] += 1
    return removed
