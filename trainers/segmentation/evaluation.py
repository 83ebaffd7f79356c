"""Segmentation metrics in plain terms: how much of each class the model finds and how exactly.

Per class, IoU (intersection over union: the pixels both the truth and the model call that class, over
the pixels either calls it), the mean of those (``miou``), and the share of pixels right
(``pixel_accuracy``), pooled over all photos; pixels not labeled (255) count nowhere. Intervals come
from resampling the photos (a photo's pixels are not independent of one another).
"""

from __future__ import annotations

import numpy as np

from modeldesk.datasets.masks import VOID

BOOTSTRAP_ROUNDS = 500


def confusion(truth: np.ndarray, predicted: np.ndarray, n: int) -> np.ndarray:
    """(n, n) pixel counts, rows the true class, columns the predicted one (void pixels left out)."""
    valid = truth != VOID
    pairs = truth[valid].astype(np.int64) * n + np.minimum(predicted[valid].astype(np.int64), n - 1)
    return np.bincount(pairs, minlength=n * n).reshape(n, n)


def iou_per_class(matrix: np.ndarray) -> np.ndarray:
    """IoU of every class; NaN for a class with no true pixel."""
    tp = np.diag(matrix).astype(np.float64)
    truth, said = matrix.sum(axis=1), matrix.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = tp / (truth + said - tp)
    return np.where(truth > 0, iou, np.nan)


def mean_iou(matrix: np.ndarray) -> float:
    iou = iou_per_class(matrix)
    return float(np.nanmean(iou)) if np.isfinite(iou).any() else 0.0


def pixel_accuracy(matrix: np.ndarray) -> float:
    return float(np.trace(matrix) / max(int(matrix.sum()), 1))


def interval(per_photo: np.ndarray, statistic, rounds: int = BOOTSTRAP_ROUNDS, seed: int = 0) -> list[float]:
    """95% interval of ``statistic(summed confusion)`` over photos drawn with replacement."""
    n = len(per_photo)
    if n < 2:
        value = statistic(per_photo.sum(axis=0)) if n else 0.0
        return [round(value, 4), round(value, 4)]
    rng = np.random.default_rng(seed)
    values = [statistic(per_photo[rng.integers(0, n, n)].sum(axis=0)) for _ in range(rounds)]
    low, high = np.percentile(values, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def class_intervals(per_photo: np.ndarray, rounds: int = BOOTSTRAP_ROUNDS, seed: int = 0) -> np.ndarray:
    """(C, 2) 95% intervals of every class's IoU over photos drawn with replacement (NaN for a class
    no draw shows)."""
    n, classes = len(per_photo), per_photo.shape[-1] if per_photo.ndim == 3 else 0
    if n < 2:
        value = iou_per_class(per_photo.sum(axis=0)) if n else np.full(classes, np.nan)
        return np.stack([value, value], axis=1)
    rng = np.random.default_rng(seed)
    draws = np.stack([iou_per_class(per_photo[rng.integers(0, n, n)].sum(axis=0)) for _ in range(rounds)])
    out = np.full((classes, 2), np.nan)
    for c in range(classes):
        seen = draws[:, c][np.isfinite(draws[:, c])]
        if len(seen):
            out[c] = np.percentile(seen, [2.5, 97.5])
    return out


def segmentation_metrics(per_photo: np.ndarray, labels: list[str], keys=(), files=()) -> dict:
    """The metrics of photos' confusions (P, C, C): ``miou``, ``pixel_accuracy``, ``per_class`` IoU,
    ``per_class_accuracy``, their intervals (``per_class_interval``: each class's IoU), the pooled ``confusion`` and the ``photos`` worst first."""
    total = per_photo.sum(axis=0) if len(per_photo) else np.zeros((len(labels),) * 2, np.int64)
    iou = iou_per_class(total)
    truth = total.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(truth > 0, np.diag(total) / truth, np.nan)
    photos = []
    for k, matrix in enumerate(per_photo):
        photos.append(
            {
                "key": keys[k] if k < len(keys) else None,
                "file": str(files[k]) if k < len(files) else None,
                "miou": round(mean_iou(matrix), 4),
                "pixel_accuracy": round(pixel_accuracy(matrix), 4),
            }
        )
    photos.sort(key=lambda p: p["miou"])

    def rounded(values):
        return {
            label: (None if not np.isfinite(v) else round(float(v), 4)) for label, v in zip(labels, values)
        }

    return {
        "miou": round(mean_iou(total), 4),
        "pixel_accuracy": round(pixel_accuracy(total), 4),
        "per_class": rounded(iou),
        "per_class_accuracy": rounded(recall),
        "miou_interval": interval(per_photo, mean_iou),
        "pixel_accuracy_interval": interval(per_photo, pixel_accuracy),
        "per_class_interval": {
            label: (None if not np.isfinite(lo) else [round(float(lo), 4), round(float(hi), 4)])
            for label, (lo, hi) in zip(labels, class_intervals(per_photo))
        },
        "confusion": total.astype(int).tolist(),
        "labels": list(labels),
        "n": int(len(per_photo)),
        "pixels": int(total.sum()),
        "photos": photos,
    }


def truth_mask(sample, labels: list[str]) -> np.ndarray:
    """A sample's mask as indices into ``labels`` (by class name; classes the model lacks are void)."""
    ref = sample.target
    raw = ref.read()
    table = np.full(256, VOID, np.uint8)
    index = {name: k for k, name in enumerate(labels)}
    for k, name in enumerate(ref.classes):
        table[k] = index.get(name, VOID)
    return table[raw]


def evaluate_segmentation(artifact_path, samples, *, progress=None) -> dict:
    """The metrics of an exported model on labeled photos, run as users run it (the predictor)."""
    from modeldesk.deploy import Predictor
    from modeldesk.deploy.preprocess import ImageDecodeError

    predictor = Predictor(artifact_path, device="cpu")
    labels = [str(x) for x in predictor.labels]
    matrices, keys, files, skipped = [], [], [], []
    chosen = [s for s in samples if s.target is not None]
    for done, sample in enumerate(chosen, 1):
        try:
            (result,) = predictor.predict([sample.path])
        except (ImageDecodeError, OSError, ValueError) as exc:
            skipped.append({"file": str(sample.path), "reason": str(exc)})
            continue
        truth = truth_mask(sample, labels)
        if truth.shape != result["mask"].shape:
            skipped.append({"file": str(sample.path), "reason": "its mask does not have the photo's size"})
            continue
        matrices.append(confusion(truth, result["mask"], len(labels)))
        keys.append(sample.key)
        files.append(sample.path)
        if progress is not None:
            progress(done, len(chosen), "")
    per_photo = np.stack(matrices) if matrices else np.zeros((0, len(labels), len(labels)), np.int64)
    metrics = segmentation_metrics(per_photo, labels, keys, files)
    metrics["skipped"] = skipped
    return metrics
