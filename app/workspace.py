"""The Workspace facade: the one set of calls behind both the command line and the desktop app.

It composes the core packages and holds no task logic of its own: datasets keep the data, the
scheduler runs jobs, trainers train, deploy exports and serves.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from modeldesk.app import pipeline
from modeldesk.app.logs import fallback_log_file, setup_logging
from modeldesk.app.masks import MaskCalls
from modeldesk.app.paths import default_workspace
from modeldesk.app.projects import ProjectCalls
from modeldesk.app.recovery import open_paths, start_cleanup
from modeldesk.app.serving import ServingCalls
from modeldesk.app.settings import Settings
from modeldesk.app.training import TrainingCalls
from modeldesk.datasets import Store, export_project, import_path
from modeldesk.trainers.tasks import FEW_EXAMPLES

log = logging.getLogger(__name__)

#: the names other layers take from here: the facade, and the task registry's "too few examples" rule
__all__ = ["FEW_EXAMPLES", "Workspace"]

TRAINING_TARGET = "modeldesk.app.training_job:run_training"
#: Every job kind the app runs: the job queue runs nothing else, whatever the database says.
APP_JOB_KINDS = {"train": TRAINING_TARGET}


class Workspace(ProjectCalls, MaskCalls, TrainingCalls, ServingCalls):
    """One workspace folder: the data store, the models, the caches and the job queue.

    A thin facade: the calls on projects and samples are ``app/projects.py``'s, on training runs
    ``app/training.py``'s, on serving ``app/serving.py``'s (mixins); the rest is here or in
    ``app/pipeline.py``.

    Parameters
    ----------
    root : path-like, optional
        The workspace folder; ``None`` uses ``MODELDESK_WORKSPACE`` or the platform's user data dir.
    cleanup : bool
        Remove what killed work left behind (old temporary files, orphan media), in the background.
    tie_jobs : bool
        Jobs this workspace starts are cancelled when this process dies (the command line, which
        waits for its jobs); the desktop app leaves them running to be picked up again.

    A folder that cannot be written opens read-only (``read_only`` is True): reading commands work,
    changes raise an error saying the folder is read-only. ``warnings`` lists problems found while
    opening (a damaged settings file).
    """

    def __init__(self, root=None, *, cleanup: bool = True, tie_jobs: bool = False):
        self.paths, self.read_only = open_paths(root if root is not None else default_workspace())
        setup_logging(fallback_log_file() if self.read_only else self.paths.log)
        self.store = Store(self.paths.root, read_only=self.read_only)
        self.warnings: list[str] = []
        self.settings = Settings.load(self.paths.root, self.warnings)
        self._cleanup = start_cleanup(self.store, self.paths.cache) if cleanup else None
        self._jobs = None
        self._tie_jobs = tie_jobs
        self._predictors: dict = {}
        self._lock = threading.Lock()

    # -- projects and data ------------------------------------------------------------------

    # -- tasks --------------------------------------------------------------------------------

    def tasks(self) -> list[dict]:
        """Every task the app knows: ``name``, ``title``, ``description``, ``input_kind``, ``target``,
        ``trainable``, ``missing`` (why it cannot train yet), ``min_classes`` and ``templates``."""
        from modeldesk.trainers.tasks import list_tasks

        return [self._task_dict(task) for task in list_tasks()]

    def task(self, name: str) -> dict:
        """One task (see :meth:`tasks`); UserError naming the choices for an unknown one."""
        from modeldesk.trainers.tasks import get_task

        return self._task_dict(get_task(name))

    @staticmethod
    def _task_dict(task) -> dict:
        from modeldesk.trainers.templates import list_templates

        templates = [t.name for t in list_templates(task.name)] if task.trainable else []
        return {**task.to_dict(), "templates": templates}

    # -- projects and data ------------------------------------------------------------------

    def create_project(self, name: str, task: str) -> dict:
        """Create a project for one of the registered tasks (see :meth:`tasks`)."""
        from modeldesk.trainers.tasks import get_task

        spec = get_task(task)
        project = self.store.create_project(name, spec.name, kind=spec.input_kind, target=spec.target)
        log.info("created project %r (%s)", project.name, project.task)
        return self._project_dict(project)

    def list_projects(self) -> list[dict]:
        return [self._project_dict(p) for p in self.store.list_projects()]

    def _project_dict(self, project) -> dict:
        return {
            "name": project.name,
            "task": project.task,
            "input_kind": project.kind,
            "target": project.target,
            "created": project.created,
            "samples": self.store.stats(project)["samples"],
        }

    def project(self, name):
        """The project called ``name`` (KeyError with a readable message if there is none)."""
        return self.store.get_project(name)

    def import_data(
        self,
        project,
        path,
        format: str = "auto",
        *,
        progress=None,
        should_stop=None,
        text_column=None,
        label_column=None,
    ) -> dict:
        """Import files, a folder or a zip archive; returns the import report as a dict."""
        report = import_path(
            self.store,
            self.project(project),
            path,
            format=format,
            text_column=text_column,
            label_column=label_column,
            progress=progress,
            should_stop=should_stop,
        )
        for failure in report.failed:
            log.warning("import refused %s: %s", failure["file"], failure["reason"])
        log.info(
            "imported %s into %r: %s added, %s duplicates, %s failed",
            path,
            project,
            report.added,
            report.duplicates,
            report.failed_total,
        )
        return report.to_dict()

    def stats(self, project) -> dict:
        return self.store.stats(self.project(project))

    def export_data(self, project, out, format: str) -> dict:
        return export_project(self.store, self.project(project), out, format)

    # -- training -----------------------------------------------------------------------------

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

    def import_outside_model(self, onnx_path, labels_path, **options) -> dict:
        """An ONNX image classifier made elsewhere, as a model of a project (see ``app.outside_models``)."""
        from modeldesk.app.outside_models import import_outside_model

        return import_outside_model(self, onnx_path, labels_path, **options)

    def inspect_outside_model(self, onnx_path) -> dict:
        """What an outside ONNX file says about itself, or UserError with why it cannot be imported."""
        from modeldesk.app.outside_models import inspect_model

        return inspect_model(onnx_path)

    def preview_outside_model(self, onnx_path, labels_path, project, normalisation: str = "auto") -> dict:
        """An outside model's answers on three of ``project``'s photos, before importing it."""
        from modeldesk.app.outside_models import preview

        return preview(self, onnx_path, labels_path, project, normalisation)

    def can_import_outside_model(self, project) -> bool:
        """Whether ``project`` takes outside models (image classification and detection ones do)."""
        from modeldesk.app.outside_models import TASKS

        return self.project(project).task in {task for task, _ in TASKS.values()}

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

    # -- models -------------------------------------------------------------------------------

    def list_models(self, project) -> list[dict]:
        return self.store.list_models(self.project(project))

    def model_path(self, model) -> Path:
        """The artifact folder for a model id or an artifact path."""
        candidate = Path(str(model)).expanduser()
        if candidate.exists():
            return candidate
        try:
            record = self.store.get_model(str(model))
        except KeyError:
            raise KeyError(
                f"no model {model!r}: give a model id from `modeldesk train` or the path of an exported model"
            ) from None
        return Path(record["path"])

    def model_report(self, model_id: str) -> dict:
        """The evaluation JSON saved with the model; its mistakes carry the project's sample ids."""
        from modeldesk.deploy import load_artifact

        report = dict(load_artifact(self.model_path(model_id)).card.get("metrics", {}))
        report["has_html"] = (self.model_path(model_id) / "report.html").is_file()
        mistakes = report.get("mistakes") or []
        try:
            project = self.store.get_model(str(model_id))["project"]
        except KeyError:  # an exported artifact: no project to point into
            return report
        ids = self.store.ids_for_hashes(project, [m["key"] for m in mistakes])
        report["mistakes"] = [{**m, "sample_id": ids.get(m["key"])} for m in mistakes]
        return report

    def report_html(self, model_id: str) -> Path:
        path = self.model_path(model_id) / "report.html"
        if not path.exists():
            raise FileNotFoundError(f"{path}: this model has no HTML report")
        return path

    def predict(self, model, files) -> list[dict]:
        """Predictions as the service gives them, one dict per file (``file`` added).

        For a text model each file is a UTF-8 text file read one text per non-empty line
        (``file`` is then ``name:line``, and ``text`` is added).
        """
        predictor = self._predictor(model)
        if predictor.input.inline:
            return self.predict_texts(model, *pipeline.text_lines(files))
        files = [str(f) for f in files]
        results = []
        for start in range(0, len(files), 32):
            chunk = files[start : start + 32]
            results += [{"file": f, **p} for f, p in zip(chunk, predictor.predict(chunk))]
        respond = getattr(predictor.output, "respond", None)  # as the service answers: no raw arrays
        return [respond(r) for r in results] if respond is not None else results

    def predict_texts(self, model, texts, names=None) -> list[dict]:
        """Predictions for texts (a text model), one dict per text with ``text`` (and ``file`` when
        ``names`` are given) added."""
        predictor = self._predictor(model)
        texts = [str(t) for t in texts]
        names = list(names) if names is not None else [f"text {i + 1}" for i in range(len(texts))]
        results = []
        for start in range(0, len(texts), predictor.batch_size):
            chunk, chunk_names = (
                texts[start : start + predictor.batch_size],
                names[start : start + predictor.batch_size],
            )
            predictions = predictor.predict(chunk, names=chunk_names)
            results += [{"file": n, "text": t, **p} for n, t, p in zip(chunk_names, chunk, predictions)]
        return results

    def _predictor(self, model):
        """One predictor per model, kept: creating the session costs more than a prediction."""
        from modeldesk.deploy import Predictor

        path = self.serving_path(model).resolve()  # a kept compressed copy when one is in use
        graph = path / "model.onnx" if path.is_dir() else path
        key = (path, graph.stat().st_mtime_ns if graph.exists() else None)  # a re-export is new
        with self._lock:
            if key not in self._predictors:
                if len(self._predictors) >= 2:  # keep memory bounded: the last two models tried
                    self._predictors.pop(next(iter(self._predictors)))
                self._predictors[key] = Predictor(path)
            return self._predictors[key]

    def evaluate(self, model, path, format: str = "auto", *, progress=None) -> dict:
        """Evaluate a model on labeled data outside the project (any import format)."""
        return pipeline.evaluate_outside(self, self.model_path(model), path, format, progress=progress)

    def export_model(
        self, model, out, *, compress: bool = False, bundle: bool = False, progress=None
    ) -> dict:
        return pipeline.export(self, model, out, compress=compress, bundle=bundle, progress=progress)

    def start_service(self, model, host: str = "127.0.0.1", port: int = 0, token=None):
        """Start the inference service in a background thread; returns a handle with url/stop()."""
        from modeldesk.app.service_handle import ServiceHandle

        return ServiceHandle.start(self.serving_path(model), host=host, port=port, token=token)

    def suggestions(self, project, model_id: str) -> dict:
        """Pre-labels for the project's unlabeled samples: sample id -> (label, score)."""
        predictions = self.store.predictions(model_id)
        unlabeled = set(self.store.sample_ids(self.project(project), unlabeled=True))
        return {sid: value for sid, value in predictions.items() if sid in unlabeled}

    def box_proposals(self, project, model_id: str) -> dict:
        """A detector's proposed boxes for the project's photos without boxes: sample id -> boxes."""
        return pipeline.box_proposals(self, self.project(project), model_id)

    def set_score_threshold(self, model, threshold: float) -> dict:
        """Move a detector's score threshold; returns its test figures at the new threshold."""
        with self._lock:  # a kept predictor would still use the old threshold
            self._predictors.clear()
        return pipeline.move_threshold(self, model, threshold)

    def suggest(self, project, model_id: str, sample_id: int) -> tuple[str, float] | None:
        """The model's guess for one sample it has not scored yet (added after it was trained), saved
        with the others; None when the model cannot read it."""
        from modeldesk.app.pipeline import _predict_tolerant, _sources

        target = self.project(project)
        sample = self.store.get_sample(int(sample_id))
        (prediction,) = _predict_tolerant(self._predictor(model_id), _sources(target, [sample]))
        if prediction is None or prediction.get("label") is None:
            return None
        self.store.save_predictions(model_id, [(sample.id, prediction["label"], prediction["score"])])
        return prediction["label"], float(prediction["score"])

    def uncertainty_order(self, project, model_id: str) -> list[int]:
        """Unlabeled sample ids, least confident prediction first ("label these next")."""
        suggestions = self.suggestions(project, model_id)
        return sorted(suggestions, key=lambda sid: suggestions[sid][1])

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

    # -- cluster (app/cluster.py) --------------------------------------------------------------

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

    def cleanup(self) -> dict:
        """Remove what killed imports and writes left behind (older than an hour); returns counts."""
        removed = self.store.cleanup()
        if any(removed.values()):
            log.info("cleaned up leftovers: %s", removed)
        return removed

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup.stop()
        self.store.close()
