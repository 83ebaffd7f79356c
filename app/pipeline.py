"""Glue between the data store and the trainers and deploy: the parts of ``Workspace`` calls that
need more than one package (the training job itself is in ``training_job``). Nothing here knows a task by name:
the trainers' task registry says what each task needs and which trainer runs it.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from modeldesk.app.anomaly_formatting import HEADLINE_KEYS as ANOMALY_KEYS
from modeldesk.app.anomaly_formatting import answer_label
from modeldesk.app.seg_formatting import HEADLINE_KEYS as SEG_KEYS
from modeldesk.datasets.kinds import sample_kind
from modeldesk.errors import UserError

log = logging.getLogger(__name__)

#: what the Deploy page says while a detector's heads are fitted across folds, before its copies are judged
FOLD_FITS_MESSAGE = "Learning the detector's head again, each time without a fifth of the photos"


def labeled_samples(store, project) -> list:
    """The project's labeled samples as the trainers' neutral input type (``LabeledSample``)."""
    from modeldesk.datasets.masks import class_slots, mask_ref
    from modeldesk.trainers.data import LabeledSample

    store.assign_splits(project)
    kind = sample_kind(project.kind)
    mask_tables = (
        {
            "classes": store.labels(project),
            "label_ids": store.label_ids(project),
            "merged": store.merged_labels(project),
            "slots": class_slots(store, project),
        }
        if project.target == "mask"
        else {}
    )
    samples = []
    for s in store.samples(project):
        source = kind.source(s)
        if source is None:
            continue
        if project.target == "label":
            target = s.labels[0] if s.labels else None
        elif project.target == "tags":
            target = tuple(s.labels) or None
        elif project.target == "mask":
            target = mask_ref(store, project, s, **mask_tables) if s.labels else None
        else:
            target = tuple(s.boxes) or None
        if target is not None:
            samples.append(LabeledSample(s.content_hash, source, target, s.split or "train", s.source))
    return samples


def class_counts(samples, target: str) -> Counter:
    """How many samples carry each label (a tag or a box label counts once per sample)."""
    counts: Counter = Counter()
    for sample in samples:
        if target == "label":
            counts[sample.target] += 1
        elif target == "tags":
            counts.update(set(sample.target))
        elif target == "mask":
            counts.update(sample.target.present)
        else:
            counts.update({box.label for box in sample.target})
    return counts


def check_trainable(ws, project, template_name: str) -> list:
    """Raise UserError with one readable sentence when this project cannot train yet.

    Returns the labeled samples, so the caller need not read them again.
    """
    from modeldesk.trainers.tasks import get_task, get_trainer
    from modeldesk.trainers.templates import get_template

    task = get_task(project.task)
    trainer = get_trainer(task)
    template = get_template(template_name)
    if template.task != project.task:
        raise UserError(
            f"template {template_name!r} is for {template.task} projects, "
            f"but {project.name!r} is a {project.task} project"
        )
    samples = labeled_samples(ws.store, project)
    counts = class_counts(samples, project.target)
    if not counts:
        raise UserError(f"project {project.name!r} has no labeled samples: label some first")
    if len(counts) < task.min_classes:
        (only,) = counts
        raise UserError(
            f"project {project.name!r} has only one class ({only!r}): a model needs at "
            f"least {task.min_classes} classes to tell apart"
        )
    trainer.check(samples)
    return samples


def feature_cache_dir(ws) -> Path:
    return ws.paths.cache / "features"


def estimate(ws, project, template_name: str, *, device: str = "auto", cluster: dict | None = None) -> dict:
    """The ETA and plan for training ``project`` with a template, before anything runs (with
    ``cluster``, ``{"address", "credentials"}``, its workers' first contact probes them)."""
    from modeldesk.app.calibration import calibrate, measure_load
    from modeldesk.app.run_time import scoring_count, scoring_seconds, whole_run
    from modeldesk.trainers.tasks import get_trainer
    from modeldesk.trainers.templates import get_template

    samples = labeled_samples(ws.store, project)
    options = {"cluster": cluster} if cluster else {}
    trainer = get_trainer(project.task)
    # before the trainer's estimate, which may time a probe of its own
    factor = measure_load(getattr(trainer, "threads", None))
    estimate = trainer.estimate(
        samples, get_template(template_name), feature_cache_dir(ws), device=device, **options
    )
    # every stage the run performs: the worker starting and the scoring for label suggestions too
    raw = whole_run(
        estimate,
        scoring_seconds(
            feature_cache_dir(ws),
            project,
            scoring_count(ws.store, project),
            estimate.get("plan"),
            template_name,
        ),
    )
    return calibrate(feature_cache_dir(ws), template_name, raw, factor)  # this machine, as busy as now


def headline(metrics: dict) -> dict:
    keys = (
        "accuracy",
        "macro_f1",
        "per_class",
        "confusion",
        "labels",
        "n",
        "split",
        "micro_f1",
        "map",
        "per_label",
        "per_label_ap",
        "map50",
        "precision",
        "recall",
        "f1",
        "misses",
        "false_boxes",
        "threshold",
        *ANOMALY_KEYS,
        "mae",
        "rmse",
        "r2",
        "interval",
        *SEG_KEYS,
    )
    return {k: metrics[k] for k in keys if k in metrics}


def text_lines(files) -> tuple[list[str], list[str]]:
    """(texts, names) of UTF-8 text files, one text per non-empty line, named ``file:line``."""
    texts, names = [], []
    for file in files:
        path = Path(file)
        try:
            content = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise UserError(
                f"{path}: not UTF-8 text (bad byte at position {exc.start}); save it as UTF-8"
            ) from None
        for number, line in enumerate(content.splitlines(), 1):
            if line.strip():
                texts.append(line)
                names.append(f"{path.name}:{number}")
    if not texts:
        raise UserError(f"{', '.join(map(str, files))}: no text found (one text per line)")
    return texts, names


def sample_sources(project, samples) -> list:
    """What a predictor reads for each of ``samples`` (a file's path, a text), by the project's input kind."""
    kind = sample_kind(project.kind)
    return [kind.source(s) for s in samples]


def prelabel(ws, project, model_id, artifact_dir, ctx, progress=None) -> None:
    """Predict every sample once so the UI can suggest labels and filter the predicted-wrong;
    ``progress(done, total)`` after each batch. The time taken is kept for the next run's ETA.

    Detectors (target ``boxes``) propose boxes on the photos without any (see :func:`prelabel_boxes`).
    """
    import time

    from modeldesk.app.run_time import record_scoring

    started = time.monotonic()
    if project.target == "boxes":
        count = prelabel_boxes(ws, project, model_id, artifact_dir, ctx, progress)
    else:
        count = _prelabel_labels(ws, project, model_id, artifact_dir, ctx, progress)
    if count:
        record_scoring(
            feature_cache_dir(ws), project, count, time.monotonic() - started, _template_of(artifact_dir)
        )


def _template_of(artifact_dir) -> str | None:
    import json

    try:
        return json.loads((Path(artifact_dir) / "model.json").read_text(encoding="utf-8")).get("template")
    except (OSError, ValueError, AttributeError):
        return None


def _prelabel_labels(ws, project, model_id, artifact_dir, ctx, progress=None) -> int:
    from modeldesk.deploy import Predictor

    samples = [s for s in ws.store.samples(project) if s.path is not None or s.text is not None]
    if not samples:
        return 0
    # texts of like length batched together: a text graph pads each batch to its longest text, so one
    # long text among short ones made 60,000 texts take 108 s instead of a few
    samples.sort(key=lambda s: len(s.text or ""))
    predictor = Predictor(artifact_dir)
    rows = []
    batch = 32
    for start in range(0, len(samples), batch):
        if ctx.should_stop():
            return 0
        chunk = samples[start : start + batch]
        for sample, prediction in zip(chunk, predict_tolerant(predictor, sample_sources(project, chunk))):
            if prediction is not None:
                # how sure, 0..1 (an anomaly score is a distance, so its output says how sure apart)
                rows.append(
                    (
                        sample.id,
                        answer_label(prediction, sample.labels),
                        # a regression's answer has no score: 0, so its rows count as least sure
                        prediction.get("confidence", prediction["score"]) or 0.0,
                    )
                )
        if progress is not None:
            progress(start + len(chunk), len(samples))
    ws.store.save_predictions(model_id, rows)
    return len(samples)


def prelabel_boxes(ws, project, model_id, artifact_dir, ctx, progress=None) -> int:
    """Propose a detector's boxes on the photos that have none yet (``trainers/detection/proposals.py``).

    The boxes at or above the model's threshold go to the proposals file in the model folder; the
    predictions table gets each photo's best label and how sure the detector is, so that the least
    confident photos can be labeled first.
    """
    from modeldesk.deploy import Predictor
    from modeldesk.trainers.detection.proposals import FLOOR, proposal_rows, write_proposals

    samples = [s for s in ws.store.samples(project) if s.path is not None and not s.boxes]
    if not samples:
        return 0
    predictor = Predictor(artifact_dir)
    threshold = predictor.output.threshold
    predictor.output.threshold = min(FLOOR, threshold)
    rows, proposals = [], {}
    for start in range(0, len(samples), 16):
        if ctx.should_stop():
            return 0
        if progress is not None and start:
            progress(start, len(samples))
        chunk = samples[start : start + 16]
        predictions = predict_tolerant(predictor, sample_sources(project, chunk))
        chunk_rows, chunk_proposals = proposal_rows([s.id for s in chunk], predictions, threshold)
        rows += chunk_rows
        proposals.update(chunk_proposals)
    write_proposals(artifact_dir, proposals)
    ws.store.save_predictions(model_id, rows)
    return len(samples)


def box_proposals(ws, project, model_id) -> dict:
    """sample id -> proposed boxes (``{"label", "score", "box"}``) for the project's photos still without boxes."""
    from modeldesk.trainers.detection.proposals import read_proposals

    return read_proposals(ws.model_path(model_id), set(ws.store.sample_ids(project, unlabeled=True)))


def move_threshold(ws, model, threshold: float) -> dict:
    """Set a detector's score threshold; returns its test figures recomputed at the new threshold."""
    from modeldesk.deploy import load_artifact, save_artifact
    from modeldesk.trainers.detection.metrics import metrics_at_threshold

    if not 0.0 < float(threshold) < 1.0:
        raise UserError(f"the score threshold must be between 0 and 1, not {threshold}")
    artifact = load_artifact(ws.model_path(model))
    if artifact.target != "boxes":
        raise UserError("only detectors have a score threshold to move")
    card = dict(artifact.card)
    metrics = metrics_at_threshold(card.get("metrics") or {}, float(threshold))
    card["score_threshold"] = float(threshold)
    card["metrics"] = metrics
    save_artifact(artifact.path, artifact.model_bytes(), card)
    return metrics


def predict_tolerant(predictor, sources) -> list:
    """``predictor.predict(sources)``, with ``None`` (and a logged warning) for each source it cannot read
    instead of failing the batch."""
    try:
        return predictor.predict(sources)
    except ValueError:
        # One bad file in the batch: fall back to one at a time so the others still get a label.
        results = []
        for source in sources:
            try:
                results.extend(predictor.predict([source]))
            except ValueError as exc:
                log.warning("could not score %s: %s", source, exc)
                results.append(None)
        return results


def evaluate_outside(ws, artifact_dir: Path, path, format: str, *, progress=None) -> dict:
    """Evaluate an artifact on labeled data that is not in any project of this workspace."""
    from modeldesk.datasets import Store, import_path
    from modeldesk.datasets.anomaly_folders import mask_files
    from modeldesk.datasets.records import TARGETS
    from modeldesk.deploy import load_artifact
    from modeldesk.trainers.tasks import get_task, get_trainer

    artifact = load_artifact(artifact_dir)
    scratch = Path(tempfile.mkdtemp(prefix="evaluate-", dir=ws.paths.tmp))
    store = Store(scratch)
    try:
        kind, target = artifact.input_kind, artifact.target
        if target not in TARGETS:  # an output of its own (anomaly): the project holds the task's target
            task = get_task(artifact.card["task"])
            kind, target = task.input_kind, task.target
        project = store.create_project("evaluation", artifact.card["task"], kind=kind, target=target)
        target = (artifact.card.get("preprocessing") or {}).get("target")  # a table model's target column
        report = import_path(store, project, path, format=format, label_column=target, progress=progress)
        samples = labeled_samples(store, project)
        if not samples:
            raise UserError(f"{path}: no labeled samples found to evaluate on")
        hashes = {s.source: s.content_hash for s in store.samples(project)}
        defect_masks = mask_files(path, hashes) if project.target != "mask" else {}  # class masks are targets
        masks = {hashes[source]: mask for source, mask in defect_masks.items()}
        options = {"masks": masks} if masks else {}  # defect masks beside the photos: pixel AUROC
        try:
            metrics = get_trainer(project.task).evaluate(artifact.path, samples, **options)
        except UserError as exc:
            raise UserError(f"{path}: {exc}") from None
        metrics["failed"] = report.failed
        return metrics
    finally:
        store.close()
        shutil.rmtree(scratch, ignore_errors=True)


def export(ws, model, out, *, compress: bool, bundle: bool, progress=None) -> dict:
    """Export a model; for ``compress``, calibrate on its project's training images.

    ``progress(done, total, message, eta_s)``: for a compression, ``eta_s`` comes from the time
    compressions took here before (per labeled photo), blended with the pace of this one.
    """
    import time

    from threadpoolctl import threadpool_limits

    from modeldesk.app.run_time import (
        blended_eta,
        compression_fraction,
        compression_seconds,
        compression_work,
        record_compression,
    )
    from modeldesk.deploy import export_artifact, load_artifact
    from modeldesk.scheduler.speed import free_cores, slowdown
    from modeldesk.trainers.compression import head_refitter

    # A bundle carries the copy in use (a kept compressed one); compression starts from the original.
    artifact = load_artifact(ws.serving_path(model) if bundle and not compress else ws.model_path(model))
    calibration = validation = training = metric = None
    planned = n_samples = None
    started = time.monotonic()
    factor = slowdown() if compress else None  # this machine, as busy as it is now
    work = compression_work(artifact.card)

    def fold_fits(done, total, photos):  # a detector's heads, fitted across folds before the copies
        copies = compression_seconds(
            feature_cache_dir(ws), artifact.input_kind, photos, factor, artifact.target, work
        )
        left = (time.monotonic() - started) / done * (total - done) if done else None
        if progress is not None:
            progress(done, total, FOLD_FITS_MESSAGE, None if left is None else left + copies)

    if compress:
        calibration, validation, training, metric = _compression_data(ws, artifact, progress=fold_fits)
        started = time.monotonic()  # the copies' plan (COMPRESSION_PRIORS) starts after the fold fits
        metric = metric or compression_metric(artifact, validation)
        n_samples = len(validation) + len(training or ())
        planned = compression_seconds(
            feature_cache_dir(ws), artifact.input_kind, n_samples, factor, artifact.target, work
        )

    def report(done, total=0, message=""):
        fraction = compression_fraction(done, total)
        eta = None if planned is None else blended_eta(planned, time.monotonic() - started, fraction)
        if progress is not None:
            progress(done, total, message, eta)

    report(0, 1, "")
    with threadpool_limits(free_cores()):  # numpy's head fits leave the cores other programs use
        result = export_artifact(
            artifact,
            out,
            compress=compress,
            bundle=bundle,
            calibration=calibration,
            validation=validation,
            progress=report,
            tmp_dir=ws.paths.tmp,
            training=training,
            refit_head=head_refitter(artifact.card) if compress else None,
            metric=metric,
            candidates=compression_candidates(artifact) if compress else None,
        )
    if compress:
        record_compression(
            feature_cache_dir(ws),
            artifact.input_kind,
            n_samples,
            time.monotonic() - started,
            factor,
            artifact.target,
            work,
        )
    return result


def compression_metric(artifact, validation=None):
    """What compression keeps within 1 point: label accuracy (None: the default), or for a detector
    mAP50 with a refusal of copies that do not reproduce the original's boxes
    (``trainers.detection.compression``), or for an anomaly model image AUROC, each copy with its own
    threshold chosen on the held-back good photos among ``validation``, or for a mask model mean IoU."""
    if artifact.target == "anomaly":
        from modeldesk.trainers.anomaly.compression import AnomalyJudge

        return AnomalyJudge.for_model(artifact.card, validation)
    if artifact.target == "mask":
        from modeldesk.trainers.segmentation.compression import SegmentationJudge

        return SegmentationJudge(artifact.labels)
    if artifact.target != "boxes":
        return None
    from modeldesk.trainers.detection.compression import DetectionJudge

    return DetectionJudge(artifact.labels, artifact.card.get("score_threshold", 0.5))


def compression_candidates(artifact):
    """The recipes compression tries for ``artifact`` (None: the default search)."""
    if artifact.target == "anomaly":
        from modeldesk.trainers.anomaly.compression import candidates_for

        return candidates_for(artifact.card)
    if artifact.target == "mask":
        from modeldesk.trainers.segmentation.compression import CANDIDATES as MASK_CANDIDATES

        return list(MASK_CANDIDATES)
    return None


def compression_refusal(artifact) -> str:
    """Why making ``artifact`` smaller is not offered ("" when it is), in one sentence."""
    from modeldesk.deploy.inputs import input_class

    model_input = input_class(artifact.input_kind)
    if model_input.not_compressible:
        return model_input.not_compressible.format(size_mb=artifact.size_bytes() / 1e6)
    if model_input.inline or artifact.target not in ("label", "boxes", "anomaly", "mask"):
        return "Making this kind of model smaller is not available yet."
    return ""


def _compression_data(ws, artifact, progress=None):
    """Calibration images, labeled validation images, labeled training images (for re-fitted heads),
    from the model's project, and the metric that judges a detector's copies (else None)."""
    refusal = compression_refusal(artifact)
    if refusal:
        raise UserError(f"{refusal} Export it without compression (no --compress).")
    try:
        record = ws.store.get_model(artifact.id)
    except KeyError:
        raise UserError(
            "compression needs the model's project for calibration images: export a "
            "model trained in this workspace"
        ) from None
    project = ws.store.get_project(record["project"])
    samples = labeled_samples(ws.store, project)
    training = [(s.path, s.target) for s in samples if s.split == "train"]
    validation = [(s.path, s.target) for s in samples if s.split in ("val", "test")]
    judge = None
    if artifact.target == "boxes":  # every labeled photo, by detection heads fitted across folds
        from modeldesk.trainers.detection.compression import detection_judging

        judge, validation = detection_judging(artifact, samples, feature_cache_dir(ws), progress=progress)
    if artifact.target == "anomaly":  # judged on the photos that did not fill the memory bank
        from modeldesk.trainers.anomaly.compression import judging_photos as anomaly_judging_photos

        validation = anomaly_judging_photos(samples)
    if artifact.target == "mask":  # a segmentation copy is judged against the original on labeled photos
        from modeldesk.trainers.segmentation.compression import judging_photos as mask_judging_photos

        validation = mask_judging_photos(samples)
    if not validation:
        raise UserError(
            f"project {project.name!r} has no validation images to check the compressed model's accuracy on"
        )
    # A re-fitted head learns from the photos the model's own head was fitted on (the trainers refit
    # on every labeled photo), so it is judged against the original on equal terms.
    refit = [(s.path, s.target) for s in samples]
    from modeldesk.trainers.compression import head_refitter

    refits = artifact.card.get("features_output") and head_refitter(artifact.card)
    from modeldesk.deploy.inputs import input_class

    if input_class(artifact.input_kind).pictures and artifact.target == "label" and refits:
        # judged on every labeled photo, by heads fitted across folds (deploy.compress.FOLDS): the more
        # photos, the tighter the proven bound, and none judges a head it trained
        validation = refit
    if artifact.target == "label" and not input_class(artifact.input_kind).compress_in_batches:
        if head_refitter(artifact.card):  # clips too (deploy.compress_clips): every one, across folds
            validation = refit
    calibrating = 200
    if artifact.target == "anomaly":
        from modeldesk.trainers.anomaly.compression import CALIBRATION_PHOTOS as calibrating
    if artifact.target == "mask":
        from modeldesk.trainers.segmentation.compression import CALIBRATION_PHOTOS as calibrating
    return [path for path, _ in training[:calibrating]], validation, refit, judge
