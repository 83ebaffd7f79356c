"""Glue between the data store and the trainers, deploy and the scheduler.

``run_training`` is the job function the scheduler's worker process calls; the others are the
parts of ``Workspace`` calls that need more than one package.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

IMAGE_TASKS = ("image-classification",)


def check_trainable(ws, project, template_name: str) -> None:
    """Raise ValueError with one readable sentence when this project cannot train yet."""
    from modeldesk.trainers.templates import get_template

    template = get_template(template_name)
    if template.task != project.task:
        raise ValueError(f"template {template_name!r} is for {template.task} projects, "
                         f"but {project.name!r} is a {project.task} project")
    stats = ws.store.stats(project)
    counts = {label: n for label, n in stats["labels"].items() if n}
    if not counts:
        raise ValueError(f"project {project.name!r} has no labeled samples: label some images first")
    if len(counts) < 2:
        (only,) = counts
        raise ValueError(f"project {project.name!r} has only one class ({only!r}): a model needs "
                         "at least two classes to tell apart")


def labeled_images(ws, project) -> list:
    """The project's labeled samples as the trainers' neutral input type."""
    from modeldesk.trainers.data import LabeledImage

    ws.store.assign_splits(project)
    return [
        LabeledImage(key=s.content_hash, path=str(s.path), label=s.labels[0], split=s.split or "train")
        for s in ws.store.samples(project)
        if s.labels and s.path is not None
    ]


def feature_cache_dir(ws) -> Path:
    return ws.paths.cache / "features"


def estimate(ws, project, template_name: str, *, device: str = "auto") -> dict:
    """The ETA and plan for training ``project`` with a template, before anything runs."""
    from modeldesk.trainers.image_classification import estimate_training
    from modeldesk.trainers.templates import get_template

    samples = labeled_images(ws, project)
    return estimate_training(samples, get_template(template_name), feature_cache_dir(ws),
                             device=device)


def run_training(params: dict, ctx) -> dict:
    """Job function: train a project's model, record it, pre-label the unlabeled samples."""
    from modeldesk.app.workspace import Workspace
    from modeldesk.deploy import new_model_id
    from modeldesk.trainers.image_classification import train_image_classifier
    from modeldesk.trainers.templates import get_template

    ws = Workspace(params["workspace"])
    try:
        project = ws.project(params["project"])
        check_trainable(ws, project, params["template"])
        template = get_template(params["template"])
        samples = labeled_images(ws, project)
        model_id = ctx.state.get("model_id") or new_model_id()
        ctx.checkpoint({"model_id": model_id})
        out_dir = ws.paths.models / model_id

        def progress(stage, fraction, eta_s=None, metrics=None):
            ctx.progress(stage, fraction, eta_s=eta_s, metrics=metrics)

        result = train_image_classifier(
            samples, template, out_dir, feature_cache_dir(ws),
            time_budget=params.get("time_budget"), device=params.get("device") or "auto",
            progress=progress, should_stop=ctx.should_stop, model_id=model_id,
        )
        ws.store.add_model(project, model_id, str(result.artifact_dir), template.name, result.metrics)
        for skipped in result.skipped:
            log.warning("training skipped %s: %s", skipped["file"], skipped["reason"])
        ctx.progress("Scoring your images for label suggestions", 0.99)
        _prelabel(ws, project, model_id, result.artifact_dir, ctx)
        return {
            "model": model_id,
            "path": str(result.artifact_dir),
            "metrics": _headline(result.metrics),
            "plan": result.plan,
            "warnings": list(result.warnings),
            "skipped": list(result.skipped),
        }
    finally:
        ws.close()


def _headline(metrics: dict) -> dict:
    keys = ("accuracy", "macro_f1", "per_class", "confusion", "labels", "n", "split")
    return {k: metrics[k] for k in keys if k in metrics}


def _prelabel(ws, project, model_id, artifact_dir, ctx) -> None:
    """Predict every sample once so the UI can suggest labels and filter the predicted-wrong."""
    from modeldesk.deploy import Predictor

    samples = [s for s in ws.store.samples(project) if s.path is not None]
    if not samples:
        return
    predictor = Predictor(artifact_dir)
    rows = []
    batch = 32
    for start in range(0, len(samples), batch):
        if ctx.should_stop():
            return
        chunk = samples[start:start + batch]
        for sample, prediction in zip(chunk, _predict_tolerant(predictor, chunk)):
            if prediction is not None:
                rows.append((sample.id, prediction["label"], prediction["score"]))
    ws.store.save_predictions(model_id, rows)


def _predict_tolerant(predictor, samples):
    try:
        return predictor.predict([str(s.path) for s in samples])
    except ValueError:
        # One bad file in the batch: fall back to one at a time so the others still get a label.
        results = []
        for sample in samples:
            try:
                results.extend(predictor.predict([str(sample.path)]))
            except ValueError as exc:
                log.warning("could not score %s: %s", sample.path, exc)
                results.append(None)
        return results


def evaluate_outside(ws, artifact_dir: Path, path, format: str, *, progress=None) -> dict:
    """Evaluate an artifact on labeled data that is not in any project of this workspace."""
    from modeldesk.datasets import Store, import_path
    from modeldesk.deploy import Predictor, load_artifact
    from modeldesk.trainers.metrics import classification_report

    artifact = load_artifact(artifact_dir)
    scratch = Path(tempfile.mkdtemp(prefix="evaluate-", dir=ws.paths.tmp))
    store = Store(scratch)
    try:
        project = store.create_project("evaluation", artifact.card.get("task", "image-classification"))
        report = import_path(store, project, path, format=format, progress=progress)
        samples = [s for s in store.samples(project) if s.labels and s.path is not None]
        if not samples:
            raise ValueError(f"{path}: no labeled samples found to evaluate on")
        unknown = sorted({s.labels[0] for s in samples} - set(artifact.labels))
        if unknown:
            raise ValueError(f"{path}: labels the model does not know: {', '.join(unknown)}")
        predictor = Predictor(artifact.path)
        predictions = predictor.predict([str(s.path) for s in samples])
        index = {label: i for i, label in enumerate(artifact.labels)}
        y_true = [index[s.labels[0]] for s in samples]
        proba = [[p["scores"][label] for label in artifact.labels] for p in predictions]
        metrics = classification_report(y_true, proba, artifact.labels)
        metrics["failed"] = report.failed
        return metrics
    finally:
        store.close()
        shutil.rmtree(scratch, ignore_errors=True)


def export(ws, model, out, *, compress: bool, bundle: bool, progress=None) -> dict:
    """Export a model; for ``compress``, calibrate on its project's training images."""
    from modeldesk.deploy import export_artifact, load_artifact

    artifact = load_artifact(ws.model_path(model))
    calibration = validation = None
    if compress:
        calibration, validation = _compression_data(ws, artifact)
    return export_artifact(artifact, out, compress=compress, bundle=bundle,
                           calibration=calibration, validation=validation, progress=progress)


def _compression_data(ws, artifact):
    """Training images for calibration and labeled validation images, from the model's project."""
    try:
        record = ws.store.get_model(artifact.id)
    except KeyError:
        raise ValueError("compression needs the model's project for calibration images: export a "
                         "model trained in this workspace") from None
    project = ws.store.get_project(record["project"])
    samples = labeled_images(ws, project)
    train = [s.path for s in samples if s.split == "train"][:200]
    validation = [(s.path, s.label) for s in samples if s.split in ("val", "test")]
    if not validation:
        raise ValueError(f"project {project.name!r} has no validation images to check the "
                         "compressed model's accuracy on")
    return train, validation
