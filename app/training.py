"""Training runs: the Workspace calls that check a project can train and follow, stop and resume its jobs.

:class:`TrainingCalls` is mixed into :class:`~modeldesk.app.workspace.Workspace` (uses its ``store``
and ``jobs``); Qt-free and safe to call from a worker thread.
"""

from __future__ import annotations


class TrainingCalls:
    """Workspace calls on training: readiness and the job of each run (mixed into ``Workspace``)."""

    def check_training(self, project, template: str) -> None:
        """Raise UserError with one sentence when ``project`` cannot train with ``template`` yet."""
        from modeldesk.app import pipeline

        pipeline.check_trainable(self, self.project(project), template)

    def training_readiness(self, project) -> str:
        """Why ``project`` cannot train yet, as one sentence ("" when it can).

        The rules (how many classes, what the task's trainer needs) live with training; the UI only
        shows the sentence.
        """
        from modeldesk.app import pipeline
        from modeldesk.errors import describe

        record = self.project(project)
        task = self.task(record.task)
        if not task["trainable"] or not task["templates"]:
            return task.get("missing") or "This kind of project cannot be trained yet."
        try:
            pipeline.check_trainable(self, record, task["templates"][0])
        except ValueError as exc:
            return describe(exc)
        return ""

    # -- training runs -----------------------------------------------------------------------------

    def training_runs(self, project) -> list[dict]:
        """The project's training jobs, newest first."""
        name = self.project(project).name
        rows = [
            job
            for job in self.jobs.jobs(kind="train", limit=200)
            if (job.get("params") or {}).get("project") == name
        ]
        return sorted(rows, key=lambda j: j.get("id", 0), reverse=True)

    def job(self, job_id: int) -> dict:
        """One job as a dict (``state``, ``result``, ``error``, ``log_path``...)."""
        return self.jobs.get(int(job_id))

    def job_events(self, job_id: int, after_seq: int = 0) -> list[dict]:
        """A job's events after ``after_seq`` (progress, stages, metrics), oldest first."""
        return self.jobs.events(int(job_id), int(after_seq))

    def cancel_job(self, job_id: int) -> bool:
        """Ask a job to stop (it keeps its finished work, so it can be resumed)."""
        return self.jobs.cancel(int(job_id))

    def resume_job(self, job_id: int) -> int:
        """Queue a cancelled or failed job again; returns the seq of its last event so far."""
        events = self.jobs.events(int(job_id), 0)
        self.jobs.resume(int(job_id))
        return events[-1]["seq"] if events else 0
