"""Evaluating a detector artifact on photos with true boxes: through the predictor, as users run it."""

from __future__ import annotations

from modeldesk.deploy import Predictor, load_artifact
from modeldesk.errors import UserError
from modeldesk.trainers.detection.metrics import detection_report, image_errors
from modeldesk.trainers.evaluation import predict_all

BATCH = 16
MAX_IMAGES_LISTED = 200
BOXES_LISTED = 20


def predict_boxes(artifact_path, samples, *, threshold: float = 0.0, progress=None) -> list[dict]:
    """The detector's output for every sample, keeping boxes down to ``threshold``."""
    predictor = Predictor(artifact_path)
    predictor.output.threshold = float(threshold)
    return predict_all(predictor, samples, batch=BATCH, progress=progress)


def evaluate_boxes(artifact_path, samples, *, progress=None, threshold: float | None = None) -> dict:
    """mAP50, mAP 0.5:0.95, AP per class, precision/recall/misses/false boxes at the model's threshold.

    Also ``mistakes``: the photos with a missed object or a false box, most errors first, each with
    ``key``, ``file``, ``truth``, ``boxes`` (predictions above a low floor), ``misses`` and
    ``false_boxes`` (what the Evaluate page draws).
    """
    artifact = load_artifact(artifact_path)
    labels = artifact.labels
    samples = [s for s in samples if s.target and not isinstance(s.target, str)]
    if not samples:
        raise UserError("no images with boxes found to evaluate on")
    unknown = sorted({str(b.label) for s in samples for b in s.target} - set(labels))
    if unknown:
        raise UserError(f"labels the model does not know: {', '.join(unknown)}")
    cut = float(artifact.card.get("score_threshold", 0.5) if threshold is None else threshold)
    predictions = [p["boxes"] for p in predict_boxes(artifact.path, samples, progress=progress)]
    truths = [[(str(b.label), b.x0, b.y0, b.x1, b.y1) for b in s.target] for s in samples]
    report = detection_report(truths, predictions, labels, cut)
    images = []
    for sample, truth, preds in zip(samples, truths, predictions):
        errors = image_errors(truth, preds, cut)
        images.append(
            {
                "key": sample.key,
                "file": str(sample.source),
                "truth": [[*t[1:], t[0]] for t in truth],
                "boxes": [p for p in preds if p["score"] >= min(cut, 0.1)][:BOXES_LISTED],
                "misses": errors["misses"],
                "false_boxes": errors["false_boxes"],
            }
        )
    images.sort(key=lambda m: -(len(m["misses"]) + len(m["false_boxes"])))
    report["mistakes"] = [m for m in images if m["misses"] or m["false_boxes"]][:MAX_IMAGES_LISTED]
    report["images"] = images[:MAX_IMAGES_LISTED]
    return report
