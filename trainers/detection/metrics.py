"""Detection metrics the way detection people read them.

``detection_report`` gives mAP at IoU 0.5 (``map50``) and 0.75 (``map75``, how many boxes sit on the
object rather than near it), COCO's mAP over IoU 0.50:0.05:0.95 (``map``),
AP per class, and precision, recall, F1, missed objects and false boxes at a score threshold. AP is
COCO's: precision made monotone, then averaged at 101 recall points. Predictions are matched to true
boxes greedily by score, per image and class, each true box at most once.

Boxes are ``(label, x0, y0, x1, y1)`` for the truth and ``{"label", "score", "box": [x0, y0, x1, y1]}``
for predictions (the predictor's format), one list per image.
"""

from __future__ import annotations

import numpy as np

IOU_THRESHOLDS = np.round(np.arange(0.5, 0.96, 0.05), 2)
RECALL_POINTS = np.linspace(0.0, 1.0, 101)
IOU_75 = int(np.flatnonzero(IOU_THRESHOLDS == 0.75)[0])


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU matrix (len(a), len(b)) of (x0, y0, x1, y1) boxes."""
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    area_a = np.prod(np.clip(a[:, 2:] - a[:, :2], 0, None), axis=1)
    area_b = np.prod(np.clip(b[:, 2:] - b[:, :2], 0, None), axis=1)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def _truth_arrays(truth):
    labels = [str(t[0]) for t in truth]
    boxes = np.array([[float(v) for v in t[1:5]] for t in truth], np.float64).reshape(-1, 4)
    return labels, boxes


def _pred_arrays(predictions):
    labels = [str(p["label"]) for p in predictions]
    boxes = np.array([p["box"] for p in predictions], np.float64).reshape(-1, 4)
    scores = np.array([p["score"] for p in predictions], np.float64)
    return labels, boxes, scores


def match_image(truth, predictions, iou_threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """(true-positive flag per prediction, matched flag per true box), greedy by score within each class."""
    t_labels, t_boxes = _truth_arrays(truth)
    p_labels, p_boxes, p_scores = _pred_arrays(predictions)
    tp = np.zeros(len(p_labels), bool)
    matched = np.zeros(len(t_labels), bool)
    if not len(p_labels) or not len(t_labels):
        return tp, matched
    ious = box_iou(p_boxes, t_boxes)
    same = np.array(p_labels, object)[:, None] == np.array(t_labels, object)[None, :]
    ious = np.where(same, ious, -1.0)
    for i in np.argsort(-p_scores, kind="stable"):
        candidates = np.where(matched, -1.0, ious[i])
        j = int(np.argmax(candidates))
        if candidates[j] >= iou_threshold:
            tp[i] = matched[j] = True
    return tp, matched


def average_precision(tp: np.ndarray, scores: np.ndarray, n_true: int) -> float:
    """COCO 101-point interpolated AP of predictions with true-positive flags ``tp``."""
    if n_true == 0:
        return float("nan")
    if not len(tp):
        return 0.0
    order = np.argsort(-np.asarray(scores), kind="stable")
    hits = np.asarray(tp, float)[order]
    tps, fps = np.cumsum(hits), np.cumsum(1 - hits)
    recall = tps / n_true
    precision = tps / np.maximum(tps + fps, 1e-12)
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    index = np.searchsorted(recall, RECALL_POINTS, side="left")
    sampled = np.where(index < len(precision), precision[np.minimum(index, len(precision) - 1)], 0.0)
    return float(sampled.mean())


def _flags(truths, predictions, iou_threshold):
    """Per class: (tp flags, scores, number of true boxes), over all images."""
    out: dict = {}
    for truth, preds in zip(truths, predictions):
        tp, _ = match_image(truth, preds, iou_threshold)
        for flag, pred in zip(tp, preds):
            entry = out.setdefault(str(pred["label"]), [[], [], 0])
            entry[0].append(flag)
            entry[1].append(float(pred["score"]))
        for t in truth:
            out.setdefault(str(t[0]), [[], [], 0])[2] += 1
    return out


def mean_ap(truths, predictions, labels, iou_threshold: float = 0.5) -> tuple[float, dict]:
    """(mean AP over the classes that have true boxes, AP per class) at one IoU threshold."""
    flags = _flags(truths, predictions, iou_threshold)
    per_class = {}
    for label in labels:
        tp, scores, n_true = flags.get(str(label), [[], [], 0])
        per_class[str(label)] = average_precision(np.array(tp, bool), np.array(scores), n_true)
    present = [ap for ap in per_class.values() if not np.isnan(ap)]
    return (float(np.mean(present)) if present else float("nan")), per_class


def counts_at(truths, predictions, threshold: float, iou_threshold: float = 0.5) -> dict:
    """True positives, missed objects and false boxes of the predictions scoring >= ``threshold``."""
    tp = misses = false = 0
    for truth, preds in zip(truths, predictions):
        kept = [p for p in preds if p["score"] >= threshold]
        flags, matched = match_image(truth, kept, iou_threshold)
        tp += int(flags.sum())
        false += int((~flags).sum())
        misses += int((~matched).sum())
    precision = tp / (tp + false) if tp + false else 0.0
    recall = tp / (tp + misses) if tp + misses else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "tp": tp,
        "misses": misses,
        "false_boxes": false,
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }


def best_threshold(truths, predictions, *, floor: float = 0.05) -> float:
    """The score threshold with the best F1 at IoU 0.5, halfway down to the next lower score (to
    ``floor`` when none is lower: a cut exactly at the weakest true box would lose it to the graph's
    float rounding)."""
    scores = sorted(
        {float(p["score"]) for preds in predictions for p in preds if p["score"] >= floor}, reverse=True
    )
    if not scores:
        return 0.5
    best, best_f1 = scores[0], -1.0
    for score in scores:
        f1 = counts_at(truths, predictions, score)["f1"]
        if f1 > best_f1:
            best, best_f1 = score, f1
    lower = [s for s in scores if s < best]
    return float((best + (lower[0] if lower else floor)) / 2)


def image_errors(truth, predictions, threshold: float, iou_threshold: float = 0.5) -> dict:
    """One image's misses (true boxes no kept prediction found) and false boxes at ``threshold``."""
    kept = [p for p in predictions if p["score"] >= threshold]
    flags, matched = match_image(truth, kept, iou_threshold)
    return {
        "misses": [list(map(float, t[1:5])) + [str(t[0])] for t, m in zip(truth, matched) if not m],
        "false_boxes": [p for p, f in zip(kept, flags) if not f],
    }


def detection_report(truths, predictions, labels, threshold: float) -> dict:
    """The evaluation of a detector on images with true boxes.

    Parameters
    ----------
    truths : per image, a list of ``(label, x0, y0, x1, y1)``.
    predictions : per image, a list of ``{"label", "score", "box"}`` (every box, low scores too).
    labels : the model's classes.
    threshold : the score threshold for precision, recall, misses and false boxes.

    Returns
    -------
    dict with ``map50``, ``map75``, ``map`` (COCO 0.5:0.95), ``per_class`` ({label: {ap50, ap, precision, recall,
    f1, support}}), ``precision``, ``recall``, ``f1``, ``misses``, ``false_boxes`` and ``boxes``
    (true boxes) at ``threshold``, ``threshold``, ``n`` (images) and ``labels``.
    """
    map50, ap50 = mean_ap(truths, predictions, labels, 0.5)
    per_iou = [mean_ap(truths, predictions, labels, float(t)) for t in IOU_THRESHOLDS]
    per_class = {}
    for label in labels:
        label = str(label)
        only_t = [[t for t in truth if str(t[0]) == label] for truth in truths]
        only_p = [[p for p in preds if str(p["label"]) == label] for preds in predictions]
        counts = counts_at(only_t, only_p, threshold)
        aps = [aps_[label] for _, aps_ in per_iou]
        per_class[label] = {
            "ap50": _num(ap50[label]),
            "ap": _num(np.mean(aps)) if not np.isnan(aps[0]) else None,
            "precision": counts["precision"],
            "recall": counts["recall"],
            "f1": counts["f1"],
            "support": sum(len(t) for t in only_t),
        }
    overall = counts_at(truths, predictions, threshold)
    maps = [m for m, _ in per_iou]
    return {
        "map50": _num(map50),
        "map75": _num(maps[IOU_75]),
        "map": _num(np.mean(maps)) if not np.isnan(maps[0]) else None,
        "per_class": per_class,
        "precision": overall["precision"],
        "recall": overall["recall"],
        "f1": overall["f1"],
        "misses": overall["misses"],
        "false_boxes": overall["false_boxes"],
        "boxes": sum(len(t) for t in truths),
        "threshold": float(threshold),
        "n": len(truths),
        "labels": [str(label) for label in labels],
    }


def _num(value) -> float | None:
    return None if value is None or np.isnan(value) else float(value)


def metrics_at_threshold(metrics: dict, threshold: float) -> dict:
    """A detector's test figures (``card["metrics"]``) recomputed at another score threshold: precision,
    recall, F1, misses and false boxes, each photo's errors (most first) and the mistakes."""
    metrics = dict(metrics)
    images = metrics.get("images") or []
    if images:
        truths = [[(t[4], *t[:4]) for t in m["truth"]] for m in images]
        counts = counts_at(truths, [m["boxes"] for m in images], threshold)
        metrics.update({k: counts[k] for k in ("precision", "recall", "f1", "misses", "false_boxes")})
        images = [{**m, **image_errors(truth, m["boxes"], threshold)} for m, truth in zip(images, truths)]
        images.sort(key=lambda m: -(len(m["misses"]) + len(m["false_boxes"])))  # the photos' errors follow
        metrics["images"] = images
        metrics["mistakes"] = [m for m in images if m["misses"] or m["false_boxes"]]
    metrics["threshold"] = threshold
    return metrics
