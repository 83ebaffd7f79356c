"""Run one job: ``python -m modeldesk.scheduler.worker DB_PATH JOB_ID TARGET``.

``TARGET`` ("package.module:function") comes from the launching queue's registry of job kinds, not
from the database (see :mod:`modeldesk.scheduler.registry`); a job row naming anything else is failed
without importing it. The target is called as ``fn(params, ctx)``; its return value (a
JSON-serialisable dict) becomes the job's result. A crash marks the job failed with
the traceback in the job's log; a cancel the job saw marks it cancelled. Both can be resumed.

A job launched by a command that waits for it (``modeldesk train``) is tied to that process: the
environment variable :data:`PARENT_ENV` names it, and a watchdog thread cancels the job when it is
gone (killed with SIGKILL, say), so that no model appears later without anyone waiting for it. A job
that has not stopped :data:`CANCEL_GRACE_S` after that is marked cancelled and its process exits.
"""

from __future__ import annotations

import faulthandler
import importlib
import logging
import os
import sys
import threading
import traceback
from pathlib import Path

from modeldesk.scheduler.context import JobContext
from modeldesk.scheduler.jobstore import JobStore

_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(process)d]: %(message)s"
#: ``PID:CREATE_TIME`` of the process the job belongs to; unset for jobs that run on by themselves.
PARENT_ENV = "MODELDESK_JOB_PARENT"
WATCH_S = 0.25
CANCEL_GRACE_S = 10.0


def resolve(target: str):
    """Import ``package.module:function`` and return the function."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"job target {target!r} must look like 'package.module:function'")
    obj = importlib.import_module(module_name)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"job target {target!r} is not callable")
    return obj


def _job_logger(job: dict) -> tuple[logging.Logger, logging.Handler]:
    logger = logging.getLogger(f"modeldesk.jobs.{job['id']}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    path = Path(job["log_path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_LOG_FORMAT))
    logger.addHandler(handler)
    return logger, handler


def parent_token() -> str:
    """The :data:`PARENT_ENV` value that ties a worker to this process."""
    import psutil

    return f"{os.getpid()}:{psutil.Process().create_time()}"


def _parent_alive(pid: int, started: float) -> bool:
    if os.name == "posix" and os.getppid() == pid:  # cheap: a dead parent's children are re-parented
        return True
    import psutil

    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and abs(process.create_time() - started) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _watch_parent(token: str, store: JobStore, job_id: int, logger: logging.Logger, done: threading.Event):
    """Cancel job ``job_id`` once the process ``token`` names is gone; end this process if the job has
    not stopped :data:`CANCEL_GRACE_S` later."""
    pid_text, _, started_text = token.partition(":")
    pid, started = int(pid_text), float(started_text or 0)
    while not done.wait(WATCH_S):
        if _parent_alive(pid, started):
            continue
        logger.warning("the command that started this job (process %d) is gone: cancelling the job", pid)
        store.update(job_id, where_state="running", cancel_requested=1)
        if done.wait(CANCEL_GRACE_S):
            return
        logger.warning("the job did not stop within %.0f s; ending its process", CANCEL_GRACE_S)
        store.set_state(
            job_id,
            "cancelled",
            where_state="running",
            resumable=1,
            message="cancelled: its command was killed",
        )
        os._exit(1)


def _is_cancel(exc: BaseException) -> bool:
    from modeldesk.scheduler.partition import Cancelled

    return isinstance(exc, Cancelled)


def execute(db_path, job_id: int, allowed_target: str) -> str:
    """Run job ``job_id`` in this process; returns its final state.

    The job must be in state ``running`` (claimed by the queue); anything else is left alone. Its
    stored target must be ``allowed_target`` (what the app registered for its kind), else it fails
    unrun.
    """
    store = JobStore(db_path)
    job = store.get(job_id)
    if job["state"] != "running":
        return job["state"]
    if job["target"] != allowed_target:
        error = (
            f"job {job_id} names {job['target']!r}, not {allowed_target!r}: the workspace database was "
            "changed outside ModelDesk; the job was not run"
        )
        store.set_state(job_id, "failed", where_state="running", error=error, resumable=0, message=error)
        return "failed"
    store.update(job_id, pid=os.getpid())
    logger, handler = _job_logger(job)
    ctx = JobContext(store, job, logger)
    finished = threading.Event()
    if os.environ.get(PARENT_ENV):
        threading.Thread(
            target=_watch_parent,
            args=(os.environ[PARENT_ENV], store, job_id, logger, finished),
            name="modeldesk-parent-watch",
            daemon=True,
        ).start()
    logger.info("job %s (%s) attempt %d: %s", job_id, job["kind"], ctx.attempt, job["target"])
    try:
        fn = resolve(job["target"])
        result = fn(job["params"], ctx)
        if result is None:
            result = {}
        if not isinstance(result, dict):
            raise TypeError(f"the job function returned {type(result).__name__}; it must return a dict")
        if ctx.stop_seen:
            logger.info("stopped on request")
            store.set_state(job_id, "cancelled", where_state="running", resumable=1, message="cancelled")
            return "cancelled"
        store.update(job_id, fraction=1.0)
        store.set_state(job_id, "done", where_state="running", result=result, resumable=0, error=None)
        logger.info("done")
        return "done"
    except BaseException as exc:  # noqa: BLE001 - a job's failure is recorded, never propagated
        if isinstance(exc, KeyboardInterrupt) or _is_cancel(exc) or ctx.stop_seen:
            logger.info("cancelled: %s", exc)
            store.set_state(
                job_id, "cancelled", where_state="running", resumable=1, message=f"cancelled: {exc}"
            )
            return "cancelled"
        text = traceback.format_exc()
        logger.error("job failed:\n%s", text)
        # A mistake the user can fix (by modeldesk.errors' one rule: UserError, ValueError...) is
        # recorded as its own sentence; anything else keeps its class name for the log reader.
        from modeldesk.errors import user_message

        error = user_message(exc) or f"{type(exc).__name__}: {exc}"
        store.set_state(job_id, "failed", where_state="running", error=error, resumable=1, message=error)
        return "failed"
    finally:
        finished.set()
        logger.removeHandler(handler)
        handler.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the worker process; stdout and stderr are the job's log file."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3:
        print("usage: python -m modeldesk.scheduler.worker DB_PATH JOB_ID TARGET", file=sys.stderr)
        return 2
    faulthandler.enable()
    logging.basicConfig(level=logging.INFO, format=_LOG_FORMAT, stream=sys.stderr)
    state = execute(argv[0], int(argv[1]), argv[2])
    return 0 if state in ("done", "cancelled") else 1


def spawn_entry(db_path: str, job_id: int, log_path: str, target: str, parent: str | None = None) -> None:
    """Target for a multiprocessing (spawn) worker, used when running frozen."""
    if parent:
        os.environ[PARENT_ENV] = parent
    with open(log_path, "a", encoding="utf-8") as stream:
        sys.stdout = sys.stderr = stream
        sys.exit(main([db_path, str(job_id), target]))


if __name__ == "__main__":
    sys.exit(main())
