"""The job kinds a queue may run: ``kind -> "package.module:function"``, registered by the app's own code.

A job row in the database names its target, but the database lives in the workspace folder, which
may come from someone else. So the worker never imports what a row says: the queue that launches a
worker looks the job's kind up here, checks that the row names the same target, and hands the
worker that target on its command line; the worker checks again. A kind nobody registered, or a row
whose target was changed, fails with a message instead of running.

    register_job_kind("train", "modeldesk.app.jobs:run_training")
"""

from __future__ import annotations

import re
import threading

_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_KINDS: dict[str, str] = {}
_LOCK = threading.Lock()


class UnknownJobKind(ValueError):
    """A job whose kind is not registered, or whose stored target differs from the registered one."""

    user_error = True


def register_job_kind(kind: str, target: str) -> None:
    """Allow jobs of ``kind`` to run ``target`` ("package.module:function", called as ``fn(params, ctx)``).

    Registering the same pair again is a no-op; another target for a registered kind is refused.
    """
    if not _TARGET.match(target):
        raise ValueError(f"job target {target!r} must look like 'package.module:function'")
    with _LOCK:
        known = _KINDS.get(kind)
        if known is not None and known != target:
            raise ValueError(f"job kind {kind!r} is already registered to {known}")
        _KINDS[kind] = target


def unregister_job_kind(kind: str) -> None:
    """Forget ``kind`` (tests)."""
    with _LOCK:
        _KINDS.pop(kind, None)


def job_kinds() -> dict[str, str]:
    """A copy of the registered kinds."""
    with _LOCK:
        return dict(_KINDS)


def allowed_target(kind: str, target: str) -> str:
    """The registered target of ``kind`` when ``target`` is it; UnknownJobKind otherwise."""
    with _LOCK:
        registered = _KINDS.get(kind)
    if registered is None:
        raise UnknownJobKind(
            f"job kind {kind!r} is not one this app runs (known: "
            f"{', '.join(sorted(job_kinds())) or 'none'}); the job was not started"
        )
    if target != registered:
        raise UnknownJobKind(
            f"job of kind {kind!r} names {target!r}, not the app's {registered!r}: the "
            "workspace database was changed outside ModelDesk; the job was not started"
        )
    return registered
