"""The one error type for mistakes a user can fix, and how every face of the app words errors.

A ``UserError`` (or any exception that carries ``user_error = True``, as the deploy package's own
errors do, since a deploy bundle runs without the rest of ModelDesk) is shown as its message, one
sentence without the exception class. Anything else is a bug: logged with its traceback and shown
as "something went wrong, see the log".
"""

from __future__ import annotations


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


def user_message(exc: BaseException) -> str | None:
    """The one-sentence message to show for a user error (no class name), else None."""
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
