"""Per-class offsets on the head's logits, chosen for the best mean IoU on the held-out photos.

The head learns from points drawn with rare classes and class edges favoured, so its scores carry a
prior that suits none of the classes exactly: a thin class (a pole) may lose every close call to the
wall behind it, or win too many. Adding a constant to a class's logit moves those close calls. The
offsets are chosen by coordinate ascent on the held-out photos' grid points (each class in turn, over a
small range, a few rounds) and folded into the head's last bias, so the exported graph is unchanged in
shape and cost. A change must gain more than ``MIN_GAIN`` mean IoU to be kept (no chasing noise).
"""

from __future__ import annotations

import numpy as np

from modeldesk.datasets.masks import VOID

#: the offsets tried for a class on each round (added to its current offset)
STEPS = np.array([-1.0, -0.6, -0.3, -0.15, 0.15, 0.3, 0.6, 1.0])
#: the most an offset may reach either way
LIMIT = 2.0
ROUNDS = 3
MIN_GAIN = 0.0005


def _miou(logits: np.ndarray, truth: np.ndarray, offsets: np.ndarray, n: int) -> float:
    predicted = np.argmax(logits + offsets, axis=1)
    matrix = np.bincount(truth * n + predicted, minlength=n * n).reshape(n, n)
    tp = np.diag(matrix).astype(np.float64)
    union = matrix.sum(axis=0) + matrix.sum(axis=1) - tp
    present = matrix.sum(axis=1) > 0
    return float(np.mean(tp[present] / union[present]))


def class_offsets(logits, truths, n_classes: int) -> tuple[np.ndarray, float, float]:
    """(offsets (C,), mean IoU before, after) on grid points: ``logits`` (C, ...) per photo and
    ``truths`` (...) per photo, the class of each point (``VOID``: not labeled, left out)."""
    rows = np.concatenate([np.asarray(lg, np.float32).reshape(n_classes, -1).T for lg in logits])
    truth = np.concatenate([np.asarray(t).ravel() for t in truths]).astype(np.int64)
    keep = truth != VOID
    rows, truth = rows[keep], truth[keep]
    offsets = np.zeros(n_classes, np.float32)
    if not len(truth):
        return offsets, 0.0, 0.0
    start = best = _miou(rows, truth, offsets, n_classes)
    present = np.unique(truth)
    for _ in range(ROUNDS):
        changed = False
        for c in present:
            for step in STEPS:
                trial = offsets.copy()
                trial[c] = np.clip(trial[c] + step, -LIMIT, LIMIT)
                score = _miou(rows, truth, trial, n_classes)
                if score > best + MIN_GAIN:
                    offsets, best, changed = trial, score, True
        if not changed:
            break
    return offsets, start, best


def with_offsets(layers: list, offsets) -> list:
    """The head's layers with ``offsets`` added to the last layer's bias."""
    W, b = layers[-1]
    return [*layers[:-1], (W, np.asarray(b, np.float64) + np.asarray(offsets, np.float64))]


__all__ = ["class_offsets", "with_offsets"]
