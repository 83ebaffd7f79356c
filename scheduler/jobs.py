"""The job queue: persisted jobs run one at a time (by default) in worker processes.

States: queued -> running -> done | failed | cancelled. A cancelled or failed job, including one
whose worker process died, can be resumed; the job function skips finished work through its own
cache and the small state it saved with ``ctx.checkpoint``.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from modeldesk.scheduler.jobstore import TERMINAL, JobStore
from modeldesk.scheduler.registry import UnknownJobKind, allowed_target
from modeldesk.scheduler.worker import PARENT_ENV, parent_token

log = logging.getLogger(__name__)


def _pid_alive(pid: int | None, started: float | None) -> bool:
    """Whether ``pid`` is still the process that was started at ``started`` (not a zombie)."""
    if not pid:
        return False
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(process.create_time() - started) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _create_time(pid: int) -> float | None:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def _wait_exit(process, timeout: float) -> bool:
    """Wait for a ``Popen`` or ``multiprocessing.Process``; True when it exited in time."""
    if hasattr(process, "join"):
        process.join(timeout)
        return process.exitcode is not None
    try:
        process.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "worker process is gone"
    if code < 0:
        try:
            return f"worker process killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"worker process killed by signal {-code}"
    return f"worker process exited with code {code}"


class JobQueue:
    """Jobs persisted in the SQLite file ``db_path`` (tables ``jobs`` and ``job_events``).

    Parameters
    ----------
    db_path : path-like
        The database (the app passes the workspace's ``workspace.db``); other tables are untouched.
    log_dir : path-like, optional
        Folder of the per-job log files (default: ``logs/jobs`` next to the database).
    max_parallel : int
        Jobs running at the same time (jobs usually use every core, so 1).
    grace_s : float
        After a cancel, how long a job may take to stop by itself before it is terminated.
    autostart : bool
        Start queued jobs as soon as a slot is free (False: only :meth:`run_inline` runs them).
    tied : bool
        The workers this queue starts cancel their job when this process is gone (killed without a
        chance to cancel): for a command that waits for its job. False: jobs run on by themselves.

    Examples
    --------
        queue = JobQueue(tmp / "workspace.db")
        job = queue.submit("train", "modeldesk.app.training_job:run_training", {"project": "p"})
        queue.wait(job, on_event=print)["state"]
    'done'
    """

    def __init__(
        self,
        db_path,
        *,
        log_dir=None,
        max_parallel: int = 1,
        grace_s: float = 10.0,
        autostart: bool = True,
        tied: bool = False,
    ):
        self.db_path = Path(db_path)
        self.tied = tied  # workers cancel their job when this process dies (a command that waits)
        self.log_dir = Path(log_dir) if log_dir is not None else self.db_path.parent / "logs" / "jobs"
        self.max_parallel = max(1, int(max_parallel))
        self.grace_s = float(grace_s)
        self.autostart = autostart
        self.store = JobStore(self.db_path)
        self.store.create()
        self._lock = threading.RLock()
        self._processes: dict = {}
        self._subscribers: dict = {}
        self._poller: threading.Thread | None = None
        self._closed = threading.Event()
        self.reap()
        if autostart:
            self._dispatch()

    # -- submitting and reading ---------------------------------------------------------------
    def submit(self, kind: str, target: str, params: dict, *, plan=None) -> int:
        """Queue a job; returns its id.

        ``target`` is "package.module:function", called in the worker as ``fn(params, ctx)``; it must
        be the target registered for ``kind`` (:func:`~modeldesk.scheduler.registry.register_job_kind`).
        ``params`` and ``plan`` (a dict or a :class:`~modeldesk.scheduler.planner.Plan`) must be
        JSON-serialisable.
        """
        allowed_target(kind, target)
        if hasattr(plan, "to_dict"):
            plan = plan.to_dict()
        try:
            json.dumps(params)
            json.dumps(plan)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"job params and plan must be JSON-serialisable: {exc}") from exc
        job_id = self.store.insert(kind, target, dict(params), plan, self.log_dir)
        log.info("queued job %d (%s): %s", job_id, kind, target)
        if self.autostart:
            self._dispatch()
        return job_id

    def get(self, job_id: int) -> dict:
        """The job as a dict: ``id``, ``kind``, ``state``, ``stage``, ``fraction``, ``eta_s``,
        ``result``, ``error``, ``resumable``, ``checkpoint``, ``attempts``, ``log_path``, ..."""
        return self.store.get(job_id)

    def jobs(self, state: str | None = None, kind: str | None = None, limit: int = 100) -> list[dict]:
        """Newest jobs first, optionally filtered by state and kind."""
        return self.store.list(state, kind, limit)

    def events(self, job_id: int, after_seq: int = 0) -> list[dict]:
        """Events with ``seq > after_seq``: dicts with ``seq``, ``ts``, ``type`` ("state" or
        "progress"), ``stage`` (the new state for "state" events), ``fraction``, ``eta_s``,
        ``metrics``, ``message``."""
        return self.store.events(job_id, after_seq)

    def log_text(self, job_id: int) -> str:
        """The job's log file ("" when it has none yet)."""
        path = self.get(job_id)["log_path"]
        return (
            Path(path).read_text(encoding="utf-8", errors="replace") if path and Path(path).exists() else ""
        )

    # -- running ------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        """Start queued jobs while fewer than ``max_parallel`` run."""
        with self._lock:
            if self._closed.is_set():
                return
            while len(self.store.list(state="running", limit=self.max_parallel + 1)) < self.max_parallel:
                job = self.store.next_queued()
                if job is None:
                    return
                try:
                    target = allowed_target(job["kind"], job["target"])
                except UnknownJobKind as exc:  # a row this app did not write: never imported, never run
                    log.error("refused job %d: %s", job["id"], exc)
                    self.store.set_state(
                        job["id"],
                        "failed",
                        where_state="queued",
                        resumable=0,
                        error=str(exc),
                        message=str(exc),
                    )
                    continue
                if not self.store.set_state(
                    job["id"],
                    "running",
                    where_state="queued",
                    started_at=time.time(),
                    attempts=job["attempts"] + 1,
                    pid=None,
                    pid_started=None,
                ):
                    continue
                try:
                    self._launch(job["id"], target)
                except OSError as exc:
                    log.error("could not start a worker for job %d: %s", job["id"], exc)
                    self.store.set_state(
                        job["id"],
                        "failed",
                        where_state="running",
                        resumable=1,
                        error=f"could not start the worker process: {exc}",
                    )

    def _launch(self, job_id: int, target: str) -> None:
        job = self.store.get(job_id)
        log_path = Path(job["log_path"])
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if getattr(sys, "frozen", False):
            process = self._launch_spawn(job_id, log_path, target)
            pid = process.pid
        else:
            env = dict(os.environ, PYTHONUNBUFFERED="1")
            env.pop(PARENT_ENV, None)
            if self.tied:
                env[PARENT_ENV] = parent_token()
            with open(log_path, "ab") as stream:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "modeldesk.scheduler.worker",
                        str(self.db_path),
                        str(job_id),
                        target,
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=stream,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            pid = process.pid
        self.store.update(job_id, pid=pid, pid_started=_create_time(pid))
        self._processes[job_id] = process
        threading.Thread(
            target=self._monitor,
            args=(job_id, job["attempts"], process),
            name=f"modeldesk-job-{job_id}",
            daemon=True,
        ).start()
        log.info("job %d runs in process %d", job_id, pid)

    def _launch_spawn(self, job_id: int, log_path: Path, target: str):
        import multiprocessing

        from modeldesk.scheduler.worker import spawn_entry

        process = multiprocessing.get_context("spawn").Process(
            target=spawn_entry,
            args=(str(self.db_path), job_id, str(log_path), target, parent_token() if self.tied else None),
            daemon=False,
        )
        process.start()
        return process

    def _monitor(self, job_id: int, attempt: int, process) -> None:
        """Wait for a worker to exit; a job it left 'running' died: mark it and start the next."""
        if hasattr(process, "wait"):
            code = process.wait()
        else:
            process.join()
            code = process.exitcode
        with self._lock:
            if self._processes.get(job_id) is process:
                del self._processes[job_id]
        if self._closed.is_set() and not self.db_path.exists():
            # the queue was closed and its store removed (a throw-away workspace): reading it would
            # create an empty database in a folder that is being deleted
            log.info("job %d's worker exited after its queue was closed and its store removed", job_id)
            return
        self._finish_dead(job_id, code, attempt)
        if self.autostart:
            self._dispatch()

    def _finish_dead(self, job_id: int, code: int | None, attempt: int | None = None) -> None:
        """Mark a job whose worker is gone, unless it already finished or was restarted since."""
        job = self.store.get(job_id)
        attempt = job["attempts"] if attempt is None else attempt
        if job["state"] != "running" or job["attempts"] != attempt:
            return
        reason = _exit_reason(code)
        state = "cancelled" if job["cancel_requested"] else "failed"
        self._append_log(
            job, f"{reason}; job marked {state} (resumable)"
        )  # before the state, which ends waits
        if state == "cancelled":
            self.store.set_state(
                job_id,
                state,
                where_state="running",
                where_attempts=attempt,
                resumable=1,
                message=f"cancelled: stopped after the grace period ({reason})",
            )
        else:
            self.store.set_state(
                job_id,
                state,
                where_state="running",
                where_attempts=attempt,
                resumable=1,
                error=reason,
                message=reason,
            )

    @staticmethod
    def _append_log(job: dict, line: str) -> None:
        if job.get("log_path"):
            Path(job["log_path"]).parent.mkdir(parents=True, exist_ok=True)
            with open(job["log_path"], "a", encoding="utf-8") as stream:
                stream.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} ERROR modeldesk.scheduler.jobs: {line}\n")

    def reap(self) -> list[int]:
        """Mark 'running' jobs whose worker process is gone as failed (resumable); returns their ids.

        Covers workers started by another (perhaps crashed) app instance too.
        """
        reaped = []
        for job in self.store.list(state="running", limit=10**6):
            if job["id"] in self._processes:
                continue
            if job["pid"] is None and time.time() - (job["started_at"] or 0) < 30:
                continue  # being launched right now by another queue
            if not _pid_alive(job["pid"], job["pid_started"]):
                self._finish_dead(job["id"], None)
                reaped.append(job["id"])
        return reaped

    def run_inline(self, job_id: int) -> dict:
        """Run a queued (or resumed) job in this process, synchronously; returns the final job.

        For tests and the command line; the job function's exceptions are recorded, not raised.
        """
        from modeldesk.scheduler.worker import execute

        job = self.store.get(job_id)
        target = allowed_target(job["kind"], job["target"])
        if not self.store.set_state(
            job_id,
            "running",
            where_state="queued",
            started_at=time.time(),
            attempts=job["attempts"] + 1,
            pid=os.getpid(),
            pid_started=_create_time(os.getpid()),
        ):
            raise ValueError(f"job {job_id} is {job['state']}, not queued")
        execute(self.db_path, job_id, target)
        return self.store.get(job_id)

    # -- cancel and resume --------------------------------------------------------------------
    def cancel(self, job_id: int, *, grace_s: float | None = None) -> bool:
        """Ask a job to stop; returns False when it had already finished.

        A queued job is cancelled at once. A running one sees ``ctx.should_stop()`` turn True; if it
        has not stopped after ``grace_s`` (default: the queue's), its process is terminated.
        """
        if self.store.set_state(
            job_id, "cancelled", where_state="queued", resumable=1, message="cancelled before it started"
        ):
            return True
        if not self.store.update(job_id, where_state="running", cancel_requested=1):
            return False
        self.store.add_event(job_id, "progress", stage="cancelling", message="cancel requested")
        grace = self.grace_s if grace_s is None else float(grace_s)
        threading.Thread(
            target=self._enforce_cancel, args=(job_id, grace), name=f"modeldesk-cancel-{job_id}", daemon=True
        ).start()
        return True

    def _enforce_cancel(self, job_id: int, grace_s: float) -> None:
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if self.store.get(job_id)["state"] != "running":
                return
            time.sleep(0.05)
        job = self.store.get(job_id)
        if job["state"] != "running":
            return
        if not _pid_alive(job["pid"], job["pid_started"]) or job["pid"] == os.getpid():
            if job["pid"] != os.getpid():
                self._finish_dead(job_id, None)
            return
        log.warning("job %d did not stop within %.1fs; terminating process %d", job_id, grace_s, job["pid"])
        own = self._processes.get(job_id)
        if own is not None:  # our child: its monitor thread reaps it and marks the job
            own.terminate()
            if not _wait_exit(own, 5):
                own.kill()
            return
        import psutil

        try:
            process = psutil.Process(job["pid"])
            process.terminate()
            try:
                process.wait(5)
            except psutil.TimeoutExpired:
                process.kill()
                process.wait(5)
        except psutil.NoSuchProcess:
            pass
        self._finish_dead(job_id, None)

    def resume(self, job_id: int) -> None:
        """Queue a cancelled or failed job again; it starts with its last checkpoint in ``ctx.state``."""
        job = self.store.get(job_id)
        if not self.store.set_state(
            job_id,
            "queued",
            where_state=("cancelled", "failed"),
            cancel_requested=0,
            error=None,
            finished_at=None,
            message="resumed",
        ):
            raise ValueError(f"job {job_id} is {job['state']}; only cancelled or failed jobs can be resumed")
        log.info("resuming job %d", job_id)
        if self.autostart:
            self._dispatch()

    # -- following ----------------------------------------------------------------------------
    def wait(self, job_id: int, on_event=None, timeout: float | None = None, poll_s: float = 0.05) -> dict:
        """Block until the job is done, failed or cancelled; returns the job.

        ``on_event(event)`` is called for each new event, in order. Raises TimeoutError after
        ``timeout`` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        seq, last_reap = 0, time.monotonic()
        while True:
            job = self.store.get(job_id)
            for event in self.store.events(job_id, seq):
                seq = event["seq"]
                if on_event is not None:
                    on_event(event)
            if job["state"] in TERMINAL:
                return job
            if time.monotonic() - last_reap > 1.0:
                last_reap = time.monotonic()
                if job["state"] == "running":
                    self.reap()
                elif self.autostart:  # a slot may have been freed by a worker another queue started
                    self._dispatch()
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job['state']} after {timeout}s")
            time.sleep(poll_s)

    def subscribe(self, job_id: int, callback, *, after_seq: int = 0):
        """Call ``callback(event)`` for each event of the job, on a background thread, until the job
        ends; returns a function that unsubscribes. (The UI relays to its own thread.)"""
        token = object()
        with self._lock:
            self._subscribers.setdefault(int(job_id), {})[token] = [callback, int(after_seq)]
            if self._poller is None or not self._poller.is_alive():
                self._poller = threading.Thread(target=self._poll, name="modeldesk-job-events", daemon=True)
                self._poller.start()

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers.get(int(job_id), {}).pop(token, None)

        return unsubscribe

    def _poll(self, poll_s: float = 0.1) -> None:
        while not self._closed.is_set():
            with self._lock:
                watched = {job_id: dict(subs) for job_id, subs in self._subscribers.items() if subs}
            if not watched:
                with self._lock:
                    if not any(self._subscribers.values()):
                        self._poller = None
                        return
            for job_id, subs in watched.items():
                state = self.store.get(job_id)["state"]
                for token, entry in subs.items():
                    callback, seq = entry
                    for event in self.store.events(job_id, seq):
                        entry[1] = event["seq"]
                        try:
                            callback(event)
                        except Exception:  # noqa: BLE001 - a subscriber's bug must not stop the others
                            log.exception("job event subscriber failed")
                    with self._lock:
                        if token in self._subscribers.get(job_id, {}):
                            self._subscribers[job_id][token][1] = entry[1]
                            if state in TERMINAL:
                                self._subscribers[job_id].pop(token)
            self._closed.wait(poll_s)

    def close(self, *, cancel_running: bool = False, timeout: float = 30.0) -> None:
        """Stop following jobs; with ``cancel_running``, cancel this queue's running jobs and wait."""
        if cancel_running:
            running = list(self._processes)
            for job_id in running:
                self.cancel(job_id)
            for job_id in running:
                try:
                    self.wait(job_id, timeout=timeout + self.grace_s)
                except TimeoutError:
                    log.warning("job %d did not stop while closing the queue", job_id)
        self._closed.set()
