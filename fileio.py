"""Writing files so that a crash never leaves a half-written one in place: write to a temporary
name in the same folder, then rename (atomic on every platform we run on).

``durable=True`` also flushes the data to the disk before the rename, for files that must survive a
power cut (settings, built backbone graphs); media and caches skip it for speed, since a process
kill, the failure the app must survive, cannot tear them either way.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_open(path, mode: str = "wb", *, durable: bool = False, make_parent: bool = True, **kwargs):
    """Open a temporary file beside ``path``; on a clean exit it replaces ``path``, else it is removed.

    For example, ``with atomic_open(folder / "data.csv", "w", newline="") as handle: handle.write(...)``.
    """
    path = Path(path)
    if make_parent:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write(path, data, *, durable: bool = False, make_parent: bool = True) -> Path:
    """Write ``data`` (bytes, or str as UTF-8) to ``path`` atomically; returns the path."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    with atomic_open(path, "wb", durable=durable, make_parent=make_parent) as handle:
        handle.write(data)
    return Path(path)
