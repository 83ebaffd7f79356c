"""What every task's trainer shares: the skeleton of a training run, the evaluation of an exported model,
the split the metrics are measured on, the parity rule of the export and the card's split counts (the
card's ``versions`` are ``trainers/versions.py``'s).

A trainer subclasses :class:`TaskTrainer`, names its ``evaluator``, writes its own ``check`` and
``estimate``, and fills in the hooks of :meth:`TaskTrainer.train` (the features, the head search and
the graph are the task's own); the run's set-up, the stages, the card, the artifact and the result are
the skeleton's. A trainer that writes its own ``train`` still works.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from modeldesk.deploy.artifact import new_model_id, save_artifact
from modeldesk.deploy.graph import prune_unused
from modeldesk.trainers.progress import stage_reporter
from modeldesk.trainers.tasks import TrainResult
from modeldesk.trainers.templates import get_template
from modeldesk.trainers.versions import versions

#: how far the exported graph may differ from the training path's scores before the export fails
PARITY_TOLERANCE = 1e-4


def _no_report(stage: str, fraction: float, metrics=None) -> None:
    """The reporter before the skeleton has made the run's own."""


@dataclass
class Run:
    """One training run as :meth:`TaskTrainer.train` walks it; each hook reads what the steps before it
    filled in (``labeled`` and ``labels`` by ``prepare``, ``estimate`` by ``plan``, ``data`` by
    ``features``, ``fitted`` by ``fit``, ``metrics`` by ``measure``)."""

    template: Any
    out_dir: Path
    cache_dir: Path
    budget: float  # seconds for the whole run
    device: str
    model_id: str | None
    should_stop: Callable[[], bool] | None
    options: dict  # the task's own keyword options (``TaskTrainer.train_options``)
    started: float = field(default_factory=time.monotonic)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the run chose that the user should know
    skipped: list[dict] = field(default_factory=list)  # [{file, reason}] left out as unreadable
    marks: dict = field(default_factory=dict)  # seconds into the run at which each stage began
    resources: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)  # closed at the end
    report: Callable = _no_report  # ``report(stage, fraction, metrics=None)``, see ``trainers.progress``
    estimate: dict = field(default_factory=dict)
    extraction: dict = field(default_factory=dict)  # the feature extraction's own plan (devices used)
    labeled: list = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    data: Any = None
    fitted: Any = None
    metrics: dict = field(default_factory=dict)

    def deadline(self, share: float) -> float:
        """``time.monotonic()`` at which ``share`` of the time budget has gone."""
        return self.started + share * self.budget

    def elapsed(self) -> float:
        """Seconds since the run began, rounded as the card and the plan show them."""
        return round(time.monotonic() - self.started, 2)

    def mark(self, stage: str) -> None:
        """Note when ``stage`` began (the first time it is reported)."""
        self.marks.setdefault(stage, round(time.monotonic() - self.started, 2))

    def since(self, stage: str) -> float:
        """Seconds since ``stage`` began (at least 1 ms), for the cost model."""
        return max(time.monotonic() - self.started - self.marks.get(stage, 0.0), 1e-3)

    def readable_photos(self) -> list:
        """The labeled samples whose photo opens; each other one is noted in :attr:`skipped` with why."""
        from modeldesk.deploy.preprocess import ImageDecodeError, image_size

        readable = []
        for sample in self.labeled:
            try:
                image_size(sample.path)
                readable.append(sample)
            except (ImageDecodeError, OSError) as exc:
                self.skipped.append({"file": str(sample.path), "reason": str(exc)})
        return readable


class TaskTrainer:
    """The shared half of the :class:`~modeldesk.trainers.tasks.Trainer` protocol and the skeleton of
    ``train``.

    ``train`` runs, in order: ``prepare`` (check the samples), ``plan`` (the estimate the progress
    bar's ETA starts from), ``features``, ``fit`` (tune and the final fit), ``measure`` (the metrics on
    held-out samples, before the export unless ``evaluates_export``), ``refit`` (the final model, where
    it is fitted again after the measurement), ``build_graph``, ``check_export``
    (the parity check), the card (``card_fields`` adds the task's own keys), the artifact (with
    ``evaluates_export``: then ``measure_export`` on the saved graph, and the card again), ``finish``
    (the report, the cost model) and the result (``result_plan``, ``summary``).

    Attributes
    ----------
    evaluator : ``"module:function"`` that scores an exported model on labeled samples
        (``function(artifact_path, samples, progress=...) -> metrics``).
    target : the card's ``target`` (what the model answers).
    train_options : the task's own keyword options of ``train`` and their defaults (e.g. ``threads``);
        any other keyword is a TypeError, as for a plain function.
    evaluates_export : measure the metrics on the exported graph after it is saved (``measure_export``)
        instead of on the training path before the export (``measure``).
    stage_at : where the progress bar stands when the skeleton's "Evaluating" and "Exporting" stages
        begin, for a task whose own stages leave them elsewhere (default: ``EXPORT_STAGES``).
    threads : the threads a run keeps busy (None: one on every core), so that its estimate counts the
        share of the cores other programs leave it (``scheduler.speed.contention``).
    """

    evaluator = "modeldesk.trainers.evaluation:evaluate_labels"
    target = "label"
    train_options: dict = {}
    evaluates_export = False
    stage_at: dict = {}
    threads: int | None = None
    #: the default ``stage_at``, by ``evaluates_export``
    EXPORT_STAGES = {
        False: {"Evaluating": 0.95, "Exporting": 0.97},
        True: {"Exporting": 0.9, "Evaluating": 0.93},
    }

    def evaluate(self, artifact_path, samples, *, progress=None) -> dict:
        """The metrics of an exported model on labeled samples, by the task's ``evaluator``."""
        from modeldesk.trainers.tasks import resolve

        return resolve(self.evaluator)(artifact_path, samples, progress=progress)

    def train(
        self,
        samples,
        template,
        out_dir,
        cache_dir,
        *,
        time_budget: float | None = None,
        device: str = "auto",
        progress: Callable | None = None,
        should_stop: Callable[[], bool] | None = None,
        model_id: str | None = None,
        **options,
    ) -> TrainResult:
        """Train on ``samples`` with ``template`` and write the artifact to ``out_dir``.

        Parameters
        ----------
        samples : ``trainers.data.LabeledSample`` items; unlabeled ones are ignored.
        template : a Template or its name.
        out_dir : artifact folder to write (replaced atomically).
        cache_dir : the workspace feature cache folder.
        time_budget : seconds for the whole run (default: the template's).
        device : where features are computed (see ``deploy.runtime.create_session``).
        progress : ``progress(stage, fraction, eta_s, metrics)``.
        should_stop : polled at every stage; when True, ``Cancelled`` is raised.
        model_id : id written to the model card (default: a new one).
        options : the task's ``train_options``.

        Returns
        -------
        ``TrainResult`` with the artifact folder, the metrics, warnings, skipped files and the plan.
        """
        unknown = sorted(set(options) - set(self.train_options))
        if unknown:
            raise TypeError(f"{type(self).__name__}.train() got unexpected keyword argument(s) {unknown}")
        template = get_template(template)
        run = Run(
            template=template,
            out_dir=Path(out_dir),
            cache_dir=Path(cache_dir),
            budget=float(time_budget or template.time_budget_s),
            device=device,
            model_id=model_id,
            should_stop=should_stop,
            options={**self.train_options, **options},
        )
        with run.resources:
            run.labeled, run.labels = self.prepare(run, samples)
            run.estimate = self.plan(run)
            run.report = stage_reporter(
                run.started, run.estimate.get("eta_s"), progress, should_stop, on_stage=run.mark
            )
            run.data = self.features(run)
            run.fitted = self.fit(run)
            at = {**self.EXPORT_STAGES[self.evaluates_export], **self.stage_at}
            if not self.evaluates_export:
                run.report("Evaluating", at["Evaluating"])
                run.metrics = self.measure(run)
            run.fitted = self.refit(run)
            run.report("Exporting", at["Exporting"])
            model = self.build_graph(run)
            self.check_export(run, model)
            model = prune_unused(model)
            card = self.card(run)
            artifact_dir = Path(save_artifact(run.out_dir, model, card))
            if self.evaluates_export:
                run.report("Evaluating", at["Evaluating"])
                run.metrics = self.measure_export(run, artifact_dir)
                card.update(metrics=run.metrics, warnings=run.warnings, training=self.training(run))
                save_artifact(artifact_dir, model, card)
            self.finish(run, card, artifact_dir)
            run.report("Done", 1.0, self.summary(run.metrics))
            return TrainResult(
                artifact_dir=artifact_dir,
                metrics=run.metrics,
                warnings=run.warnings,
                skipped=run.skipped,
                plan={**self.result_plan(run), "actual_s": run.elapsed()},
                notes=run.notes,
            )

    # -- the hooks of ``train``; a task overrides ``prepare``, ``features``, ``fit``, ``build_graph``,
    # ``card_fields`` and ``measure`` (or ``measure_export``), and the others (``refit``...) where it differs.

    def prepare(self, run: Run, samples) -> tuple[list, list[str]]:
        """(the samples to train on, the sorted labels); raise UserError when they cannot train, and
        add any warning to ``run.warnings``."""
        raise NotImplementedError

    def plan(self, run: Run) -> dict:
        """``{"eta_s", "plan"}`` for the run's samples: by default the task's ``estimate``."""
        return self.estimate(  # type: ignore[attr-defined]
            run.labeled, run.template, run.cache_dir, device=run.device, time_budget=run.budget
        )

    def features(self, run: Run) -> Any:
        """What the head learns from, for ``run.labeled`` (unreadable files left out and added to
        ``run.skipped``): becomes ``run.data``."""
        raise NotImplementedError

    def fit(self, run: Run) -> Any:
        """The tuned and fitted head (and whatever the graph and the card need of the search):
        becomes ``run.fitted``."""
        raise NotImplementedError

    def measure(self, run: Run) -> dict:
        """The metrics on held-out samples through the training path, before the export."""
        return {}

    def refit(self, run: Run) -> Any:
        """After ``measure``, before the export: the final model (e.g. fitted again on every labeled
        sample once the metrics are measured): becomes ``run.fitted``; by default ``run.fitted``."""
        return run.fitted

    def measure_export(self, run: Run, artifact_dir: Path) -> dict:
        """With ``evaluates_export``: the metrics of the saved graph on held-out samples."""
        return {}

    def build_graph(self, run: Run):
        """The one ONNX graph to export (unused nodes are pruned after ``check_export``)."""
        raise NotImplementedError

    def check_export(self, run: Run, model) -> None:
        """Compare ``model`` with the training path on a few samples (into ``run.metrics``); raise when
        it disagrees by more than ``PARITY_TOLERANCE``."""

    def card_fields(self, run: Run) -> dict:
        """The task's own keys of the model card (preprocessing, input and output names, head...)."""
        return {}

    def training(self, run: Run) -> dict:
        """``card["training"]``: the samples per split, the seconds, the skipped files."""
        return {
            "samples": self.sample_counts(run),
            "seconds": run.elapsed(),
            "skipped": run.skipped,
        }

    def sample_counts(self, run: Run) -> dict:
        """``card["training"]["samples"]``: by default how many of ``run.labeled`` each split holds."""
        split = [s.split for s in run.labeled]
        return {name: split.count(name) for name in ("train", "val", "test")}

    def card(self, run: Run) -> dict:
        """The model card: the keys every task writes, then the task's ``card_fields``."""
        if run.model_id is None:
            run.model_id = new_model_id()
        return {
            "id": run.model_id,
            "task": run.template.task,
            "target": self.target,
            "labels": run.labels,
            "template": run.template.name,
            **self.card_fields(run),
            "metrics": run.metrics,
            "versions": versions(),
            "warnings": run.warnings,
            "training": self.training(run),
        }

    def finish(self, run: Run, card: dict, artifact_dir: Path) -> None:
        """After the artifact is written: the HTML report, the cost model's figures."""

    def summary(self, metrics: dict) -> dict:
        """The metrics the last progress report shows."""
        return {k: metrics[k] for k in ("accuracy", "macro_f1") if k in metrics}

    def result_plan(self, run: Run) -> dict:
        """The result's ``plan`` (``actual_s`` is added): by default the estimate's plan, the extraction's
        and the ETA."""
        return {**run.estimate.get("plan", {}), **run.extraction, "eta_s": run.estimate.get("eta_s")}


def evaluation_split(
    test: np.ndarray, val: np.ndarray, train: np.ndarray, warnings: list | None = None, why: str = ""
) -> tuple[np.ndarray, str]:
    """The samples the metrics are measured on and the split's name: the test split, else the
    validation split, else (``why`` added to ``warnings``) the training samples."""
    if len(test):
        return test, "test"
    if len(val):
        return val, "val"
    if warnings is not None and why:
        warnings.append(why)
    return train, "train"


def split_counts(train, val, test) -> dict:
    """``card["training"]["samples"]``: how many samples each split held."""
    return {"train": int(len(train)), "val": int(len(val)), "test": int(len(test))}
