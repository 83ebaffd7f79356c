"""Evaluating an existing model artifact on labeled samples it never saw (``modeldesk evaluate``)."""

from __future__ import annotations

import numpy as np

from modeldesk.deploy import Predictor, load_artifact
from modeldesk.errors import UserError
from modeldesk.trainers.metrics import classification_report, mean_average_precision, multilabel_report

BATCH = 32


def predict_all(predictor, samples, *, batch: int = BATCH, progress=None) -> list[dict]:
    """The predictor's output for every sample's source, ``batch`` at a time (``progress(done, total, "")``)."""
    results = []
    for start in range(0, len(samples), batch):
        chunk = samples[start : start + batch]
        results += predictor.predict([s.source for s in chunk])
        if progress is not None:
            progress(min(start + batch, len(samples)), len(samples), "")
    return results


def _unknown(samples, labels, values) -> None:
    unknown = sorted({v for s in samples for v in values(s)} - set(labels))
    if unknown:
        raise UserError(f"labels the model does not know: {', '.join(unknown)}")


def evaluate_labels(artifact_path, samples, *, progress=None) -> dict:
    """Accuracy, macro F1, per-class figures and the confusion matrix of a single-label model."""
    artifact = load_artifact(artifact_path)
    labels = artifact.labels
    samples = [s for s in samples if s.label is not None]
    if not samples:
        raise UserError("no labeled samples found to evaluate on")
    _unknown(samples, labels, lambda s: [s.label])
    predictions = predict_all(Predictor(artifact), samples, progress=progress)
    index = {label: i for i, label in enumerate(labels)}
    y_true = [index[s.label] for s in samples]
    proba = [[p["scores"][label] for label in labels] for p in predictions]
    return classification_report(y_true, proba, labels)


def evaluate_tags(artifact_path, samples, *, progress=None) -> dict:
    """Per-tag precision, recall, F1 at the model's own thresholds, and mean average precision."""
    artifact = load_artifact(artifact_path)
    labels = artifact.labels
    samples = [s for s in samples if s.target]
    if not samples:
        raise UserError("no tagged samples found to evaluate on")
    _unknown(samples, labels, lambda s: s.target)
    predictions = predict_all(Predictor(artifact), samples, progress=progress)
    Y = np.array([[label in s.target for label in labels] for s in samples], dtype=int)
    proba = np.array([[p["scores"][label] for label in labels] for p in predictions])
    thresholds = artifact.card.get("thresholds") or {}
    report = multilabel_report(Y, proba, labels, [thresholds.get(label, 0.5) for label in labels])
    report.update(mean_average_precision(Y, proba, labels))
    return report
