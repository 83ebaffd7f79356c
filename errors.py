"""The one error type for mistakes a user can fix, and how every face of the app words errors.

A ``UserError`` (or any exception that carries ``user_error = True``, as the deploy package's own
errors do, since a deploy bundle runs without the rest of ModelDesk) is shown as its message, one
sentence without the exception class. Anything else is a bug: logged with its traceback and shown
as "something went wrong, see the log".
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

#: errno values meaning "the disk (or the user's quota) is full".
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}

# SQLite's primary result codes, as ``sqlite3.Error.sqlite_errorcode`` reports them. The sqlite3 module
# names them only from Python 3.11 on (ModelDesk supports 3.10); the numbers are fixed by SQLite's C API.
# (datasets/safety.py holds its own copy: the datasets package imports no other ModelDesk module.)
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_NOTADB = 26


class UserError(ValueError):
    """Something the user can fix (bad input, a missing label, a wrong name); the message says how.

    It subclasses ValueError so that code catching ValueError keeps working.
    """

    user_error = True


#: Built-in exceptions that, raised by our own code on purpose, carry a message meant for users.
_PLAIN = (KeyError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)


def is_user_error(exc: BaseException) -> bool:
    """True when ``exc`` describes a mistake the user can fix, not a bug."""
    return bool(getattr(exc, "user_error", False)) or isinstance(exc, (ValueError,) + _PLAIN)


def _free_space(where) -> str:
    """' (12.0 MB free)' for the disk holding ``where`` (its nearest existing folder), else ''."""
    folder = Path(where) if where else None
    while folder is not None and not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free if folder is not None else None
    except OSError:
        free = None
    return "" if free is None else f" ({free / 1e6:,.1f} MB free)"


def disk_full_message(exc: BaseException) -> str | None:
    """One sentence for a disk that filled up ("No space left on device" from the OS, "database or disk
    is full" from SQLite), naming where when known; None for any other error. Every writer in ModelDesk
    writes to a temporary name and renames, so the sentence can say nothing half-written was kept."""
    if isinstance(exc, OSError) and exc.errno in _FULL:
        where = exc.filename
    elif isinstance(exc, sqlite3.Error) and (
        getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL or "disk is full" in str(exc)
    ):
        where = None
    else:
        return None
    place = f" holding {Path(where).parent}" if where else ""
    return (
        f"the disk{place} is full{_free_space(where)}: free some space and run it again "
        "(nothing half-written was kept)"
    )


def damaged_database_message(exc: BaseException) -> str | None:
    """One sentence for SQLite finding a database file damaged ("malformed", "not a database"), with
    the recovery step; None for any other error. (Where the workspace is known, the datasets package
    words it with the folder: ``dbfile.damaged``.)"""
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if code not in (SQLITE_CORRUPT, SQLITE_NOTADB) and not any(
        words in str(exc) for words in ("malformed", "not a database")
    ):
        return None
    return (
        f"the workspace database is damaged ({exc}): close ModelDesk and run `modeldesk recover "
        "--workspace FOLDER`, which sets it aside and copies what it still holds into a new one"
    )


def user_message(exc: BaseException) -> str | None:
    """The one-sentence message to show for a user error (no class name), else None.

    A full disk and a damaged database are user errors too: :func:`disk_full_message`,
    :func:`damaged_database_message`.
    """
    special = disk_full_message(exc) or damaged_database_message(exc)
    if special is not None:
        return special
    if not is_user_error(exc):
        return None
    if isinstance(exc, KeyError) and exc.args:
        message = str(exc.args[0])
    elif isinstance(exc, OSError) and exc.filename and exc.strerror:
        message = f"{exc.filename}: {exc.strerror}"
    else:
        message = str(exc)
    return message.strip() or type(exc).__name__


BUG_MESSAGE = "something went wrong; the log has the details"


def describe(exc: BaseException) -> str:
    """What to tell the user about ``exc``: its message for a user error, else a pointer to the log."""
    return user_message(exc) or BUG_MESSAGE
