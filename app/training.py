"""Training runs: the Workspace calls that plan, start, follow, stop and resume training, and choose
where it runs (the devices, the cluster).

:class:`TrainingCalls` is mixed into :class:`~modeldesk.app.workspace.Workspace` (uses its ``store``,
``paths`` and lock); Qt-free and safe to call from a worker thread.
"""

from __future__ import annotations

import logging

from modeldesk.app import pipeline

log = logging.getLogger(__name__)

TRAINING_TARGET = "modeldesk.app.training_job:run_training"
#: Every job kind the app runs: the job queue runs nothing else, whatever the database says.
APP_JOB_KINDS = {"train": TRAINING_TARGET}


class TrainingCalls:
    """Workspace calls on training: readiness, runs and their jobs, devices, the cluster (mixed into
    ``Workspace``)."""

    def check_training(self, project, template: str) -> None:
        """Raise UserError with one sentence when ``project`` cannot train with ``template`` yet."""
        pipeline.check_trainable(self, self.project(project), template)

    def training_readiness(self, project) -> str:
        """Why ``project`` cannot train yet, as one sentence ("" when it can).

        The rules (how many classes, what the task's trainer needs) live with training; the UI only
        shows the sentence.
        """
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

    # -- the job queue and training ----------------------------------------------------------

    @property
    def jobs(self):
        """The persistent job queue (jobs run in worker processes)."""
        with self._lock:
            if self._jobs is None:
                from modeldesk.scheduler import JobQueue, register_job_kind

                for kind, target in APP_JOB_KINDS.items():
                    register_job_kind(kind, target)
                self._jobs = JobQueue(self.paths.db, tied=self._tie_jobs)
            return self._jobs

    def templates(self, task: str | None = None) -> list[dict]:
        from modeldesk.trainers.templates import list_templates

        return [t.to_dict() for t in list_templates(task)]

    def estimate_training(
        self, project, template: str, device: str = "auto", *, cluster: str | None = None, credentials=None
    ) -> dict:
        """The plan and ETA the cost model gives before a run (probes each device the first time).

        ``cluster``: a Dask scheduler address, "off", or None for the workspace setting.
        """
        return pipeline.estimate(
            self,
            self.project(project),
            template,
            device=device,
            cluster=self.resolve_cluster(cluster, credentials),
        )

    def submit_training(
        self,
        project,
        template: str,
        *,
        time_budget=None,
        device: str = "auto",
        cluster: str | None = None,
        credentials=None,
        auto: bool = False,
    ) -> int:
        """Queue a training job (it starts in a worker process as soon as the queue is free).

        ``auto``: a background run of "Improve as I label" (``app.keep_up``), marked so in its params."""
        project = self.project(project)
        pipeline.check_trainable(self, project, template)
        params = {
            "workspace": str(self.paths.root),
            "project": project.name,
            "template": template,
            "time_budget": time_budget,
            "device": device,
            "cluster": self.resolve_cluster(cluster, credentials),
        }
        if auto:
            params["auto"] = True
        job_id = self.jobs.submit("train", TRAINING_TARGET, params)
        log.info("submitted training job %s for %r with %s", job_id, project.name, template)
        return job_id

    def training_jobs(self, project, states=("queued", "running")) -> list[dict]:
        """The project's training jobs in ``states``, newest first."""
        name = self.project(project).name
        return [
            job
            for state in states
            for job in self.jobs.jobs(state=state, kind="train")
            if (job.get("params") or {}).get("project") == name
        ]

    def train(
        self,
        project,
        template: str,
        *,
        time_budget=None,
        device: str = "auto",
        progress=None,
        cluster: str | None = None,
        credentials=None,
    ) -> dict:
        """Train and wait: ``progress(event)`` gets every job event; returns the job's result."""
        job_id = self.submit_training(
            project,
            template,
            time_budget=time_budget,
            device=device,
            cluster=cluster,
            credentials=credentials,
        )
        return self.wait_job(job_id, progress=progress)

    def wait_job(self, job_id: int, *, progress=None) -> dict:
        """Wait for a job; return its result or raise RuntimeError with its error message."""
        try:
            status = self.jobs.wait(job_id, on_event=progress)
        except KeyboardInterrupt:
            self.jobs.cancel(job_id)
            raise
        if status["state"] != "done":
            raise RuntimeError(status.get("error") or f"job {job_id} ended as {status['state']}")
        return status["result"]

    # -- where training runs: devices and the cluster (app/cluster.py) -----------------------

    def devices(self) -> dict:
        from modeldesk.scheduler import detect_resources

        return detect_resources(self.paths.root)

    @staticmethod
    def device_choices(resources: dict) -> list[tuple[str, str]]:
        """``(device, words)`` for "Run on": automatic, the CPU, then each device whose provider
        works here (from the one device table that the planner and the runtime read too)."""
        from modeldesk.devices import DEVICES

        providers = resources.get("providers") or {}
        choices = [("auto", "Best available (automatic)"), ("cpu", DEVICES["cpu"][1])]
        for name, (provider, words) in DEVICES.items():
            needs_gpu = name in ("cuda", "tensorrt")
            if name != "cpu" and providers.get(provider) and (resources.get("gpus") or not needs_gpu):
                choices.append((name, words))
        return choices

    def resolve_cluster(self, cluster: str | None = None, credentials=None) -> dict | None:
        """``{"address", "credentials"}`` for ``cluster`` ("off": None; None: the workspace setting)."""
        from modeldesk.app import cluster as cluster_setup

        return cluster_setup.resolve(self, cluster, credentials)

    def cluster_workers(self, cluster: str | None = None, credentials=None) -> list[dict]:
        """The workers of ``cluster`` (default: the setting): cores, GPUs, memory, versions,
        ``refused`` (why, or None) and ``measured`` speed; [] when no cluster is set."""
        from modeldesk.app import cluster as cluster_setup

        spec = self.resolve_cluster(cluster, credentials)
        return cluster_setup.workers(self, spec) if spec else []

    def use_cluster(self, address: str | None, credentials=None) -> dict:
        """Make ``address`` (None or "off": none) the cluster training uses by default."""
        from modeldesk.app import cluster as cluster_setup

        return cluster_setup.use(self, address, credentials)

    def start_cluster(self, host: str = "127.0.0.1", port: int | None = None, credentials=None) -> dict:
        """Start a Dask scheduler on this machine for other machines' workers (see app/cluster.py)."""
        from modeldesk.app import cluster as cluster_setup

        return cluster_setup.start(self, host, port, credentials)

    def stop_cluster(self) -> dict:
        from modeldesk.app import cluster as cluster_setup

        return cluster_setup.stop(self)

    def cluster_status(self) -> dict:
        from modeldesk.app import cluster as cluster_setup

        return cluster_setup.status(self)
