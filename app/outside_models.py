"""Bring your own model: an image classifier exported from another tool, as a model of a project.

The graph says its input size, layout and number of classes (``deploy.outside_onnx``); it does not
say how its pixels were normalised. With labeled photos in the project, each common convention is
tried on a sample of them and the one that answers best is kept (the user may name one instead);
then the model is evaluated on every labeled photo of the project (none of which it was trained on
here) and recorded like a trained model, so Evaluate, compression, the service and the bundle take it.
"""

from __future__ import annotations

import logging
import random
import shutil
import tempfile
from pathlib import Path

from modeldesk.errors import UserError

log = logging.getLogger(__name__)

IMPORTED_TEMPLATE = "imported"
#: labeled photos a normalisation is judged on (enough to tell conventions apart, quick on a CPU)
PROBE_PHOTOS = 48
PREVIEW_PHOTOS = 3


def _outside():
    from modeldesk.deploy import outside_onnx

    return outside_onnx


def normalisation_choices() -> list[tuple[str, str]]:
    """(name, words) of each common pixel scaling, for a person to pick from."""
    outside = _outside()
    return [(name, outside.NORMALISATION_WORDS[name]) for name in outside.NORMALISATIONS]


def inspect_model(onnx_path) -> dict:
    """What the graph says about itself (``input``, ``layout``, ``size``, ``output``, ``classes``);
    UserError with the reason for a graph ModelDesk cannot import."""
    outside = _outside()
    try:
        return outside.inspect_onnx(onnx_path).describe()
    except outside.OutsideModelError as exc:
        raise UserError(str(exc)) from None


#: the kind of outside graph -> the task of the project it goes in, and the words for it
TASKS = {
    "classifier": ("image-classification", "image classifier"),
    "detector": ("object-detection", "detector"),
}


def _project_for(ws, onnx_path: Path, project, kind: str):
    """The named project (of the task ``kind`` goes in), or a new one named after the file."""
    task, words = TASKS[kind]
    if project is not None:
        found = ws.project(project)
        if found.task != task:
            raise UserError(
                f"project {found.name!r} is a {found.task} project; an outside {words} goes in a {task} project"
            )
        return found
    names = {p["name"] for p in ws.list_projects()}
    name, n = onnx_path.stem, 2
    while name in names:
        name, n = f"{onnx_path.stem} {n}", n + 1
    ws.create_project(name, task)
    return ws.project(name)


def _labeled(ws, project) -> list:
    from modeldesk.app.pipeline import labeled_samples

    return labeled_samples(ws.store, project)


def _labels_used(samples) -> set[str]:
    """The labels of ``samples``: their class, or their boxes' labels."""
    return {
        getattr(t, "label", t)
        for s in samples
        for t in (s.target if isinstance(s.target, tuple) else [s.target])
    }


def _accuracy(artifact_dir: Path, samples: list) -> float:
    from modeldesk.deploy import Predictor

    answers = Predictor(artifact_dir).predict([s.path for s in samples])
    return sum(a["label"] == s.label for a, s in zip(answers, samples)) / len(samples)


def _choose_normalisation(graph, labels, samples, scratch: Path, options: dict) -> tuple[str, list[dict]]:
    """The convention that answers best on ``samples`` (ties: the first listed), with every score."""
    outside = _outside()
    probe = random.Random(0).sample(samples, min(PROBE_PHOTOS, len(samples)))
    tried = []
    for name, (mean, std) in outside.NORMALISATIONS.items():
        folder = outside.save_outside_classifier(graph, scratch / name, labels, mean=mean, std=std, **options)
        tried.append(
            {"normalisation": name, "accuracy": round(_accuracy(folder, probe), 4), "photos": len(probe)}
        )
    best = max(tried, key=lambda row: row["accuracy"])  # max keeps the first of equals
    return best["normalisation"], tried


def import_outside_model(
    ws,
    onnx_path,
    labels_path,
    *,
    project=None,
    normalisation: str = "auto",
    mean=None,
    std=None,
    bgr: bool = False,
    size: int | None = None,
) -> dict:
    """Import an outside ONNX image classifier into ``project`` (default: a new one named after the file).

    ``normalisation``: "auto" (measured on the project's labeled photos; ImageNet's without any), a
    name of ``deploy.outside_onnx.NORMALISATIONS``, or "custom" with ``mean`` and ``std`` (per
    channel, 0-255 pixels). Returns ``model``, ``project``, ``normalisation``, ``tried`` (each
    convention's accuracy on the probe photos), ``metrics`` (on every labeled photo, or {}) and
    ``graph``; the warnings a person should read are under ``warnings``.
    """
    from modeldesk.deploy import new_model_id

    outside = _outside()
    onnx_path = Path(onnx_path)
    try:
        graph = outside.inspect_onnx(onnx_path)
        labels = outside.check_labels(
            graph, outside.read_labels(labels_path), scored=graph.kind == "classifier"
        )
        if mean is not None or std is not None:
            normalisation = "custom"
            mean, std = tuple(mean or (0, 0, 0)), tuple(std or (1, 1, 1))
        elif normalisation not in ("auto", *outside.NORMALISATIONS):
            raise UserError(
                f"unknown normalisation {normalisation!r}: use auto, {', '.join(outside.NORMALISATIONS)}, "
                "or give --mean and --std"
            )
    except outside.OutsideModelError as exc:
        raise UserError(str(exc)) from None
    target = _project_for(ws, onnx_path, project, graph.kind)
    samples = _labeled(ws, target)
    unknown = sorted(_labels_used(samples) - set(labels))
    if unknown:
        raise UserError(
            f"project {target.name!r} has labels the model does not know ({', '.join(unknown[:5])}); "
            "check the labels file (one label a line, in the order of the model's outputs)"
        )
    options = {"bgr": bgr, "size": size}
    warnings, tried = [], []
    scratch = Path(tempfile.mkdtemp(prefix="outside-", dir=ws.paths.tmp))
    try:
        if normalisation == "auto" and graph.kind == "detector":
            normalisation = "unit"  # every YOLO export reads pixels / 255
        elif normalisation == "auto" and samples:
            normalisation, tried = _choose_normalisation(graph, labels, samples, scratch, options)
        elif normalisation == "auto":
            normalisation = "imagenet"
            warnings.append(
                "No labeled photos in the project to check the model's pixel normalisation on: "
                "ImageNet's was assumed. Label a few photos and import again to have it measured."
            )
        if normalisation != "custom":
            mean, std = outside.NORMALISATIONS[normalisation]
        model_id = new_model_id()
        artifact_dir = outside.save_outside_model(
            graph,
            ws.paths.models / model_id,
            labels,
            mean=mean,
            std=std,
            normalisation=normalisation,
            model_id=model_id,
            **options,
        )
    except outside.OutsideModelError as exc:
        raise UserError(str(exc)) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    metrics = _evaluate(target.task, artifact_dir, samples) if samples else {}
    if tried and max(row["accuracy"] for row in tried) < 1.5 / len(labels):
        warnings.append(
            "The model is barely better than chance on your labeled photos with every normalisation: "
            "check that the labels file lists the labels in the order of the model's outputs."
        )
    ws.store.add_model(target, model_id, str(artifact_dir), IMPORTED_TEMPLATE, metrics)
    log.info("imported %s as %s into %r (%s)", onnx_path.name, model_id, target.name, normalisation)
    return {
        "model": model_id,
        "project": target.name,
        "normalisation": normalisation,
        "tried": tried,
        "metrics": metrics,
        "graph": graph.describe(),
        "warnings": warnings,
    }


def _evaluate(task: str, artifact_dir: Path, samples: list) -> dict:
    """The evaluation on every labeled photo (none was used to train it here)."""
    from modeldesk.trainers.tasks import get_trainer

    metrics = get_trainer(task).evaluate(artifact_dir, samples)
    metrics["split"] = "all"
    return metrics


def _preview_photos(samples) -> list:
    """:data:`PREVIEW_PHOTOS` photos, one per label first, so the preview shows different answers."""
    photos = [s for s in samples if s.path is not None]
    firsts = list({(s.labels or [None])[0]: s for s in reversed(photos)}.values())[::-1]
    rest = [s for s in photos if s not in firsts]
    return (firsts + rest)[:PREVIEW_PHOTOS]


def preview(ws, onnx_path, labels_path, project, normalisation: str, *, bgr=False) -> dict:
    """The model's answers on :data:`PREVIEW_PHOTOS` photos of ``project`` under ``normalisation``
    ("auto": the one that answers best on the labeled photos): ``{"normalisation", "words",
    "answers": [{"photo", "name", "truth", "label", "score"}]}``, for a person to check before importing."""
    from modeldesk.deploy import Predictor

    outside = _outside()
    target = ws.project(project)
    graph_kind = inspect_model(onnx_path)["kind"]
    if normalisation == "auto":
        samples = _labeled(ws, target)
        normalisation = "unit" if graph_kind == "detector" else "imagenet"  # YOLO reads pixels / 255
        if samples and graph_kind == "classifier":
            scratch = Path(tempfile.mkdtemp(prefix="outside-", dir=ws.paths.tmp))
            try:
                graph = outside.inspect_onnx(onnx_path)
                labels = outside.check_labels(graph, outside.read_labels(labels_path))
                normalisation, _ = _choose_normalisation(graph, labels, samples, scratch, {"bgr": bgr})
            except outside.OutsideModelError as exc:
                raise UserError(str(exc)) from None
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "normalisation": normalisation,
        "words": outside.NORMALISATION_WORDS[normalisation],
        "answers": [],
    }
    photos = _preview_photos(ws.store.samples(target))
    if not photos:
        return result
    scratch = Path(tempfile.mkdtemp(prefix="outside-preview-", dir=ws.paths.tmp))
    try:
        graph = outside.inspect_onnx(onnx_path)
        mean, std = outside.NORMALISATIONS[normalisation]
        folder = outside.save_outside_model(
            graph, scratch / "m", outside.read_labels(labels_path), mean=mean, std=std, bgr=bgr
        )
        answers = Predictor(folder).predict([str(p.path) for p in photos])
    except outside.OutsideModelError as exc:
        raise UserError(str(exc)) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result["answers"] = [
        {
            "photo": str(p.path),
            "name": Path(p.source).name if p.source else Path(p.path).name,
            "truth": (p.labels or [None])[0],
            "label": a["label"],
            "score": a["score"],
            "boxes": len(a["boxes"]) if "boxes" in a else None,
        }
        for p, a in zip(photos, answers)
    ]
    return result
