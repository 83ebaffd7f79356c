"""Guards against hostile or failing input: full disks, non-finite boxes and spreadsheet formulas.

* Writing into a workspace can fail (a full disk, a quota, a read-only folder). Such a failure stops
  an import at once with :class:`DiskFullError` or :class:`WorkspaceWriteError`: every later file would
  fail the same way, and reporting each would bury the one line that matters.
* A box from a label file must have four finite coordinates (NaN, infinities and numbers too large
  for a float are refused for that file only).
* Text exported to CSV is escaped as the OWASP "CSV injection" guidance says, so that a spreadsheet
  does not run ``=HYPERLINK(...)`` from a label or a text; importing reverses the escape.
"""

from __future__ import annotations

import errno
import math
import os
import shutil
import sqlite3
import stat
from collections.abc import Iterable
from pathlib import Path

from .records import Box

#: errno values meaning "the disk (or the user's quota) is full".
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}

# SQLite's primary result codes, as ``sqlite3.Error.sqlite_errorcode`` reports them. The sqlite3 module
# names them only from Python 3.11 on (ModelDesk supports 3.10); the numbers are fixed by SQLite's C API.
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26
#: Characters that make a spreadsheet read a cell as a formula (OWASP: = + - @ tab CR).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class WorkspaceWriteError(OSError):
    """The workspace folder cannot be written (read-only, no permission, I/O error); the message says so.

    ``report`` holds the import report (a dict) when an import stopped on it.
    """

    user_error = True

    def __init__(self, message: str, report: dict | None = None):
        super().__init__(message)
        self.report = report

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DiskFullError(WorkspaceWriteError):
    """The disk holding the workspace (or the user's quota) is full."""


def special_file_problem(path) -> str | None:
    """Why ``path`` must not be opened as a file (a named pipe, a device, a socket, a folder), or None.

    Opening a FIFO blocks until something writes to it and a device can be endless, so importers look
    with ``os.stat`` (no open) first. A path that cannot be looked at gives the reason too.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"cannot read the file ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        what = "a named pipe (FIFO)"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        what = "a device"
    elif stat.S_ISSOCK(mode):
        what = "a socket"
    elif stat.S_ISDIR(mode):
        what = "a folder"
    else:
        what = "a special file"
    return f"skipped: it is {what}, not a regular file"


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is a "no space left" error from the OS or from SQLite."""
    if isinstance(exc, DiskFullError):
        return True
    if isinstance(exc, OSError):
        return exc.errno in _FULL
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code == SQLITE_FULL or "disk is full" in str(exc)
    return False


def is_write_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the workspace cannot be written at all (as opposed to one bad input file)."""
    if isinstance(exc, WorkspaceWriteError) or is_disk_full(exc):
        return True
    if isinstance(exc, OSError):
        return exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO)
    if isinstance(exc, sqlite3.OperationalError):
        code = getattr(exc, "sqlite_errorcode", None)
        return code in (SQLITE_READONLY, SQLITE_IOERR, SQLITE_CANTOPEN)
    return False


def free_bytes(folder) -> int | None:
    """Free bytes on the file system holding ``folder`` (or its nearest existing parent)."""
    path = Path(folder)
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def human_bytes(count: float | None) -> str:
    """``1.2 GB``, ``850 KB``: a size for a message (decimal units, as file managers show)."""
    if count is None:
        return "an unknown amount"
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if abs(count) < 1000 or unit == "TB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} TB"  # pragma: no cover


def space_needed(items) -> int:
    """Bytes of the files behind ``items`` (import items with a ``path``): what importing them needs."""
    total = 0
    for item in items:
        path = getattr(item, "path", None)
        if path is not None and not getattr(item, "error", None):
            try:
                total += Path(path).stat().st_size
            except OSError:
                pass
    return total


def write_error(exc: BaseException, where, *, doing: str = "write") -> WorkspaceWriteError:
    """The one-sentence error for a failed write into ``where`` (a workspace folder)."""
    if is_disk_full(exc):
        return DiskFullError(
            f"no space left on the disk of {where} ({human_bytes(free_bytes(where))} free): "
            f"free some space, then try again"
        )
    reason = getattr(exc, "strerror", None) or str(exc)
    if isinstance(exc, OSError) and exc.errno == errno.EROFS or "readonly" in reason.replace("-", "").lower():
        return WorkspaceWriteError(
            f"the workspace folder {where} is read-only, so ModelDesk cannot {doing} "
            "there: make it writable or choose another workspace (--workspace)"
        )
    return WorkspaceWriteError(
        f"cannot {doing} in the workspace folder {where} ({reason}): check that the "
        "folder is writable and the disk is working"
    )


# ---------------------------------------------------------------------------------------------- boxes
def to_float(value) -> float:
    """``float(value)``, with numbers too large for a float giving ``inf`` instead of OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if str(value).strip()[:1] != "-" else -math.inf


def bad_coordinate(boxes: Iterable[Box]) -> str | None:
    """Why one of ``boxes`` cannot be stored (a NaN or infinite coordinate), or None when all are finite."""
    for number, box in enumerate(boxes, 1):
        for name in ("x0", "y0", "x1", "y1"):
            value = getattr(box, name)
            try:
                finite = math.isfinite(value)
            except (TypeError, OverflowError):
                finite = False
            if not finite:
                return (
                    f"box {number} ({box.label!r}) has a coordinate that is not a finite number "
                    f"({str(value)[:20]}); fix the label file"
                )
    return None


# ---------------------------------------------------------------------------------------------- CSV
def escape_cell(text) -> str:
    """A text cell safe to open in a spreadsheet: a leading ``= + - @`` tab or CR gets a ``'`` in front.

    This is the OWASP "CSV Injection" advice; numbers are not passed through here, so ``-1.5`` in a
    coordinate column stays a number. :func:`unescape_cell` undoes it on import.
    """
    text = "" if text is None else str(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def unescape_cell(text: str) -> str:
    """Undo :func:`escape_cell`: ``'=A1`` reads back as ``=A1``; other texts are unchanged."""
    if len(text) > 1 and text[0] == "'" and text[1:].startswith(FORMULA_STARTS):
        return text[1:]
    return text
