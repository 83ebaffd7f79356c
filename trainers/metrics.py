"""Evaluation metrics as plain, JSON-serialisable Python objects.

``classification_report`` and ``multilabel_report`` feed the ``evaluate`` / ``train`` JSON of the
command line and the HTML report; ``most_confident_mistakes`` picks the samples a person should
look at first.  Conventions follow scikit-learn: a precision or recall whose denominator is zero
is 0.0, and the confusion matrix has true labels in rows and predicted labels in columns.
"""

from __future__ import annotations

import numpy as np

__all__ = ["accuracy_interval", "classification_report", "most_confident_mistakes", "multilabel_report"]

#: Wider than this (high - low), a test split cannot tell apart models whose accuracies differ by a few points.
TOO_WIDE = 0.06


def _py(label):
    """A label as a plain Python value (numpy scalars -> int/float/str)."""
    return label.item() if isinstance(label, np.generic) else label


def _key(label) -> str:
    """The JSON key of a label."""
    return str(_py(label))


def _check_labels(labels) -> list:
    labels = [_py(lab) for lab in labels]
    if len(labels) < 1:
        raise ValueError("labels is empty")
    keys = [_key(lab) for lab in labels]
    if len(set(keys)) != len(keys):
        raise ValueError(f"labels must be unique, got {keys}")
    return labels


def _check_proba(proba, n_cols, n_rows=None) -> np.ndarray:
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[1] != n_cols:
        raise ValueError(f"proba must have shape (n_samples, {n_cols}), got {proba.shape}")
    if n_rows is not None and proba.shape[0] != n_rows:
        raise ValueError(f"proba has {proba.shape[0]} rows, y_true has {n_rows}")
    if proba.shape[0] == 0:
        raise ValueError("no samples to evaluate")
    if not np.all(np.isfinite(proba)):
        raise ValueError("proba contains NaN or infinity")
    return proba


def _encode(y_true, labels) -> np.ndarray:
    """Class indices of ``y_true``: integers are indices into ``labels``, anything else a label value."""
    y = np.asarray(y_true)
    if y.ndim != 1:
        raise ValueError(f"y_true must be 1-D, got shape {y.shape}")
    if np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.bool_):
        idx = y.astype(np.int64)
        if y.size and (idx.min() < 0 or idx.max() >= len(labels)):
            raise ValueError(f"y_true holds class indices outside 0..{len(labels) - 1}")
        return idx
    position = {_key(lab): i for i, lab in enumerate(labels)}
    unknown = sorted({_key(v) for v in y.tolist()} - set(position))
    if unknown:
        raise ValueError(f"y_true has labels not in labels: {unknown}")
    return np.array([position[_key(v)] for v in y.tolist()], dtype=np.int64)


def _prf(tp, n_pred, n_true):
    """Precision, recall, F1 arrays from true positives, predicted and true counts (0 where undefined)."""
    tp, n_pred, n_true = (np.asarray(a, dtype=np.float64) for a in (tp, n_pred, n_true))
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(n_pred > 0, tp / n_pred, 0.0)
        recall = np.where(n_true > 0, tp / n_true, 0.0)
        f1 = np.where(n_pred + n_true > 0, 2 * tp / (n_pred + n_true), 0.0)
    return precision, recall, f1


def classification_report(y_true, proba, labels) -> dict:
    """Accuracy, macro F1, per-class precision/recall/F1 and the confusion matrix.

    Parameters
    ----------
    y_true : sequence of N class indices (ints into ``labels``) or of label values
    proba : array (N, C), scores per class in the order of ``labels``; the prediction is the argmax
    labels : sequence of C class names

    Returns
    -------
    dict with ``accuracy``, ``macro_f1`` (mean over the classes that occur in ``y_true`` or in
    the predictions, as scikit-learn's default), ``weighted_f1``, ``per_class``
    ({str(label): {precision, recall, f1, support}}), ``confusion`` (list of lists, rows = true,
    columns = predicted, in ``labels`` order), ``labels`` and ``n``.

    Example
    -------
    >>> classification_report([0, 1, 1], [[.9, .1], [.2, .8], [.6, .4]], ["cat", "dog"])["accuracy"]
    0.6666666666666666
    """
    labels = _check_labels(labels)
    y = _encode(y_true, labels)
    proba = _check_proba(proba, len(labels), len(y))
    pred = np.argmax(proba, axis=1)
    c = len(labels)
    confusion = np.bincount(y * c + pred, minlength=c * c).reshape(c, c)
    tp = np.diag(confusion)
    support = confusion.sum(axis=1)
    n_pred = confusion.sum(axis=0)
    precision, recall, f1 = _prf(tp, n_pred, support)
    present = (support + n_pred) > 0
    return {
        "accuracy": float(tp.sum() / len(y)),
        "macro_f1": float(f1[present].mean()),
        "weighted_f1": float(np.sum(f1 * support) / support.sum()),
        "per_class": _per_label(labels, precision, recall, f1, support),
        "confusion": confusion.astype(int).tolist(),
        "labels": list(labels),
        "n": int(len(y)),
    }


def most_confident_mistakes(y_true, proba, keys, labels, k=12) -> list:
    """The ``k`` wrong predictions the model was most sure of, most confident first.

    Parameters
    ----------
    y_true : N class indices or label values (as in :func:`classification_report`)
    proba : array (N, C)
    keys : N sample identifiers (e.g. media hashes or file names), returned as given
    labels : C class names
    k : how many to return at most

    Returns
    -------
    list of {"key", "true", "predicted", "score"}: labels as plain values, ``score`` the
    probability of the wrong predicted class.  Ties keep the input order.
    """
    labels = _check_labels(labels)
    y = _encode(y_true, labels)
    proba = _check_proba(proba, len(labels), len(y))
    keys = list(keys)
    if len(keys) != len(y):
        raise ValueError(f"keys has {len(keys)} entries, y_true has {len(y)}")
    pred = np.argmax(proba, axis=1)
    score = proba[np.arange(len(y)), pred]
    wrong = np.flatnonzero(pred != y)
    order = wrong[np.argsort(-score[wrong], kind="stable")][: max(int(k), 0)]
    return [
        {"key": _py(keys[i]), "true": labels[y[i]], "predicted": labels[pred[i]], "score": float(score[i])}
        for i in order
    ]


def multilabel_report(Y_true, proba, labels, threshold=0.5) -> dict:
    """Metrics for multi-label predictions: a label is predicted where ``proba >= threshold``.

    Parameters
    ----------
    Y_true : (N, C) 0/1 matrix
    proba : (N, C) per-label probabilities
    labels : C label names
    threshold : float, or a sequence of C per-label thresholds

    Returns
    -------
    dict with ``micro_f1``, ``macro_f1`` (over all labels), ``exact_match`` (share of samples
    whose whole label set is right), ``hamming_accuracy`` (share of right sample-label
    decisions), ``per_label`` ({str(label): {precision, recall, f1, support}}), ``labels``,
    ``threshold`` and ``n``.
    """
    labels = _check_labels(labels)
    Y = np.asarray(Y_true)
    if Y.ndim != 2 or Y.shape[1] != len(labels):
        raise ValueError(f"Y_true must have shape (n_samples, {len(labels)}), got {Y.shape}")
    if not np.all((Y == 0) | (Y == 1)):
        raise ValueError("Y_true must contain only 0 and 1")
    Y = Y.astype(bool)
    proba = _check_proba(proba, len(labels), Y.shape[0])
    thr = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (len(labels),))
    P = proba >= thr
    tp = (P & Y).sum(axis=0)
    n_pred, support = P.sum(axis=0), Y.sum(axis=0)
    precision, recall, f1 = _prf(tp, n_pred, support)
    micro_f1 = _prf(tp.sum(), n_pred.sum(), support.sum())[2]
    return {
        "micro_f1": float(micro_f1),
        "macro_f1": float(f1.mean()),
        "exact_match": float(np.mean(np.all(P == Y, axis=1))),
        "hamming_accuracy": float(np.mean(P == Y)),
        "per_label": _per_label(labels, precision, recall, f1, support),
        "labels": list(labels),
        "threshold": float(thr[0]) if np.ndim(threshold) == 0 else [float(t) for t in thr],
        "n": int(Y.shape[0]),
    }


def average_precision(y_true, scores) -> float:
    """Area under the precision-recall curve of one binary label (scikit-learn's definition:
    the sum over thresholds of (R_n - R_{n-1}) * P_n); NaN when there is no positive."""
    y = np.asarray(y_true, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    positives = int(y.sum())
    if positives == 0:
        return float("nan")
    order = np.argsort(-scores, kind="stable")
    y, scores = y[order], scores[order]
    last = np.r_[np.flatnonzero(np.diff(scores)), len(y) - 1]  # last index of each distinct score
    tp = np.cumsum(y)[last]
    precision = tp / (last + 1)
    recall = tp / positives
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def mean_average_precision(Y_true, proba, labels) -> dict:
    """``{"map": mean AP over labels with positives, "per_label_ap": {label: AP}}``."""
    labels = _check_labels(labels)
    Y = np.asarray(Y_true)
    proba = _check_proba(proba, len(labels), Y.shape[0])
    ap = [average_precision(Y[:, i], proba[:, i]) for i in range(len(labels))]
    present = [a for a in ap if not np.isnan(a)]
    return {
        "map": float(np.mean(present)) if present else float("nan"),
        "per_label_ap": {_key(lab): (None if np.isnan(a) else float(a)) for lab, a in zip(labels, ap)},
    }


def _per_label(labels, precision, recall, f1, support) -> dict:
    """{label: {precision, recall, f1, support}} as plain Python numbers."""
    return {
        _key(lab): {
            "precision": float(precision[i]),
            "recall": float(recall[i]),
            "f1": float(f1[i]),
            "support": int(support[i]),
        }
        for i, lab in enumerate(labels)
    }


def accuracy_interval(correct: int, n: int, level: float = 0.9) -> dict:
    """Wilson score interval of an accuracy measured as ``correct`` right out of ``n``.

    Returns ``{"low", "high", "level", "method", "correct", "n", "text", "too_wide"}``: ``text``
    words it for people ("92 to 97 out of 100"); ``too_wide`` is True when the interval spans more
    than :data:`TOO_WIDE`, i.e. the test split is too small to tell two similar models apart.

    >>> accuracy_interval(95, 100)["text"]
    '90 to 98 out of 100'
    """
    from statistics import NormalDist

    if n <= 0 or not 0 <= correct <= n:
        raise ValueError(f"need 0 <= correct <= n and n > 0, got {correct} of {n}")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if correct == 0 else max(0.0, centre - half)
    high = 1.0 if correct == n else min(1.0, centre + half)
    return {
        "low": float(low),
        "high": float(high),
        "level": level,
        "method": "wilson",
        "correct": int(correct),
        "n": int(n),
        "text": f"{int(np.floor(100 * low))} to {int(np.ceil(100 * high))} out of 100",
        "too_wide": bool(high - low > TOO_WIDE),
    }
