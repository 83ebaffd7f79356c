"""What a job function gets as ``ctx``: progress, cancellation, checkpoints and its log."""

from __future__ import annotations

import copy
import json
import logging
import time

PROGRESS_INTERVAL_S = 0.2
STOP_POLL_S = 0.2


class JobContext:
    """The job's handle on the queue, passed to ``fn(params, ctx)``.

    Attributes
    ----------
    job_id : int
    attempt : int
        1 for the first run, 2 after one resume, ...
    state : dict
        The last :meth:`checkpoint` (empty on a first run); a resumed job uses it to skip work.
    plan : dict or None
        The plan given at submit time.
    log : logging.Logger
        Writes to the job's log file.
    """

    def __init__(self, store, job: dict, logger: logging.Logger):
        self._store = store
        self.job_id = int(job["id"])
        self.attempt = int(job["attempts"])
        self.state = copy.deepcopy(job.get("checkpoint") or {})
        self.plan = job.get("plan")
        self.log = logger
        self.stop_seen = False
        self._stop_checked = 0.0
        self._stop = False
        self._last_progress = 0.0
        self._last_stage: str | None = None

    @property
    def resumed(self) -> bool:
        """True when this run continues an earlier, interrupted one."""
        return self.attempt > 1

    def progress(
        self,
        stage: str,
        fraction: float,
        eta_s: float | None = None,
        metrics: dict | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress; events are rate-limited except stage changes, messages and completion."""
        fraction = min(1.0, max(0.0, float(fraction)))
        now = time.monotonic()
        urgent = stage != self._last_stage or message is not None or fraction >= 1.0 or metrics is not None
        if not urgent and now - self._last_progress < PROGRESS_INTERVAL_S:
            return
        self._last_progress, self._last_stage = now, stage
        eta = None if eta_s is None else float(eta_s)
        self._store.progress(self.job_id, stage, fraction, eta, metrics, message)

    def should_stop(self) -> bool:
        """True once a cancel was requested (checked in the database at most every 0.2 s)."""
        now = time.monotonic()
        if not self._stop and now - self._stop_checked >= STOP_POLL_S:
            self._stop_checked = now
            self._stop = bool(self._store.get(self.job_id)["cancel_requested"])
        if self._stop:
            self.stop_seen = True
        return self._stop

    def checkpoint(self, state: dict) -> None:
        """Save small JSON-serialisable state; a resumed run finds it in :attr:`state`."""
        json.dumps(state)  # fail here, in the job, when it cannot be stored
        self.state = copy.deepcopy(state)
        self._store.update(self.job_id, checkpoint=self.state)
