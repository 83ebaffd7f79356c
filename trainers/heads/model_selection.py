"""Model selection: stratified folds, cross-validated scores, and the one search every trainer uses.

Samples may come with several *views* (the same photo mirrored, cropped...): ``X`` of shape
(V, N, D) holds view ``v`` of sample ``n`` at ``X[v, n]``.  A head is then fitted on every view
of its training rows and scored on the mean of its predictions over the views, which is what an
exported model with test-time views computes.

Example
-------
    result = staged_search(
        [[{"l2": a} for a in (1e-2, 1e-1)], [{"views": ("identity", "hflip")}]],
        lambda p: cross_val_score(lambda: LogisticRegressionHead(l2=p["l2"]), X, y).mean(),
        start={"views": ("identity",)})
    result.best
{'views': ('identity',), 'l2': 0.01}
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger(__name__)

__all__ = [
    "stratified_folds",
    "usable_folds",
    "predict_views",
    "cross_val_predict",
    "cross_val_score",
    "staged_search",
    "SearchResult",
]

SCORINGS = ("accuracy", "neg_log_loss")


def stratified_folds(y, folds=3, random_state=0):
    """Index pairs ``[(train, test), ...]``: each class is spread evenly over the folds.

    For a 2-D (multi-label) ``y`` the folds are a plain shuffled split.
    """
    y = np.asarray(y)
    folds = int(folds)
    if folds < 2 or folds > len(y):
        raise ValueError(f"folds must be between 2 and the number of samples ({len(y)}), got {folds}")
    rng = np.random.default_rng(random_state)
    assign = np.empty(len(y), dtype=int)
    if y.ndim == 1:
        offset = 0
        for cls in np.unique(y):
            members = rng.permutation(np.flatnonzero(y == cls))
            assign[members] = (np.arange(len(members)) + offset) % folds
            offset += len(members)  # keep fold sizes balanced across classes
    else:
        assign[rng.permutation(len(y))] = np.arange(len(y)) % folds
    return [(np.flatnonzero(assign != k), np.flatnonzero(assign == k)) for k in range(folds)]


def usable_folds(y, wanted: int) -> int:
    """``wanted`` folds, fewer when the smallest class has fewer samples (below 2: no CV possible)."""
    y = np.asarray(y)
    if y.ndim != 1:
        return min(int(wanted), len(y))
    counts = np.unique(y, return_counts=True)[1]
    return int(min(wanted, counts.min())) if len(counts) else 0


def _as_views(X) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim == 2:
        return X[None]
    if X.ndim != 3:
        raise ValueError(
            f"X must be (n_samples, n_features) or (n_views, n_samples, n_features), got {X.shape}"
        )
    return X


def predict_views(head, X) -> np.ndarray:
    """Mean of ``head.predict_proba`` over the views of ``X`` ((N, D) or (V, N, D))."""
    return np.mean([head.predict_proba(view) for view in _as_views(X)], axis=0)


def _score(head, proba, y, scoring) -> float:
    if y.ndim == 2:
        if scoring == "accuracy":
            return float(np.mean((proba >= head.threshold) == y))
        p = np.clip(proba, 1e-15, 1 - 1e-15)
        return float(np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
    if scoring == "accuracy":
        return float(np.mean(head.classes_[proba.argmax(axis=1)] == y))
    col = {c: i for i, c in enumerate(head.classes_.tolist())}
    p_true = np.array([proba[i, col[c]] if c in col else 0.0 for i, c in enumerate(y.tolist())])
    return float(np.mean(np.log(np.clip(p_true, 1e-15, 1.0))))


def _folds(X, y, folds, random_state):
    X = _as_views(X)
    y = np.asarray(y)
    if y.shape[0] != X.shape[1]:
        raise ValueError(f"X has {X.shape[1]} samples, y has {y.shape[0]}")
    for train, test in stratified_folds(y, folds, random_state):
        yield X, y, train, test


def _fit_views(make_head, X, y, rows):
    return make_head().fit(X[:, rows].reshape(-1, X.shape[2]), np.concatenate([y[rows]] * X.shape[0]))


def cross_val_predict(make_head, X, y, folds=3, random_state=0) -> np.ndarray:
    """Out-of-fold probabilities (N, C): each row predicted by a head that never saw it.

    Columns follow ``np.unique(y)`` (every class must be in every fold's training part, which
    stratified folds ensure when each class has at least ``folds`` samples).  ``X``, ``y`` as in
    :func:`cross_val_score`.
    """
    proba = None
    for X_, y_, train, test in _folds(X, y, folds, random_state):
        head = _fit_views(make_head, X_, y_, train)
        part = predict_views(head, X_[:, test])
        if proba is None:
            proba = np.zeros((len(y_), part.shape[1]))
        if y_.ndim == 1 and not np.array_equal(head.classes_, np.unique(y_)):
            raise ValueError("a class is missing from a training fold: use fewer folds")
        proba[test] = part
    return proba


def cross_val_score(make_head, X, y, folds=3, random_state=0, scoring="accuracy"):
    """Score a head configuration with stratified k-fold cross-validation.

    Parameters
    ----------
    make_head : callable returning a new unfitted head, e.g. ``lambda: MLPHead(hidden=128)``
    X : (N, D) features, or (V, N, D) for V views of each sample
    y : (N,) labels, or an (N, C) 0/1 matrix for :class:`SigmoidHead`
    scoring : "accuracy" (for multi-label: mean per-label accuracy at the head's
        threshold) or "neg_log_loss" (higher is better)

    Returns
    -------
    numpy array of one score per fold
    """
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {', '.join(SCORINGS)}, got {scoring!r}")
    scores = []
    for X_, y_, train, test in _folds(X, y, folds, random_state):
        head = _fit_views(make_head, X_, y_, train)
        scores.append(_score(head, predict_views(head, X_[:, test]), y_[test], scoring))
    return np.array(scores)


@dataclass
class SearchResult:
    """The outcome of :func:`staged_search`.

    Attributes
    ----------
    best : the winning parameters.
    best_score : its score.
    trials : ``[{"params", "score"}, ...]`` in the order tried.
    complete : False when the deadline stopped the search before every candidate was tried.
    """

    best: dict
    best_score: float
    trials: list = field(default_factory=list)
    complete: bool = True


def staged_search(
    stages: Sequence[Sequence[dict]],
    score: Callable[[dict], float],
    *,
    start: dict | None = None,
    deadline: float | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> SearchResult:
    """The best parameters by ``score``, trying one stage of changes at a time.

    Each stage is a list of parameter changes; a candidate is the best parameters found so far
    (``start`` at first) updated with one change.  So a first stage can walk a grid of head
    parameters and a second try other views with the best of them.  A candidate tried before is
    not tried again, ties keep the earlier one (list the cheaper or best-known changes first), and
    no new trial starts after ``deadline`` (a ``time.monotonic()`` value), except the very first.

    Parameters
    ----------
    stages : lists of dicts of parameter changes.
    score : ``score(params) -> float``, higher is better (e.g. a mean of :func:`cross_val_score`).
    start : parameters every candidate starts from.
    deadline : when to stop starting trials.
    progress : ``progress(trials_done, trials_planned, best_score, trial_score)`` after each trial
        (the trial's own score moves up and down; the best one only climbs).
    """
    best = dict(start or {})
    best_score = -np.inf
    trials: list = []
    seen: list = []
    planned = sum(len(stage) for stage in stages)
    done = 0
    for stage in stages:
        base = dict(best)
        for change in stage:
            params = {**base, **change}
            done += 1
            if params in seen:
                continue
            if trials and deadline is not None and time.monotonic() > deadline:
                log.info("time budget reached after %d of %d search trials", len(trials), planned)
                return SearchResult(best, float(best_score), trials, complete=False)
            seen.append(params)
            value = float(score(params))
            trials.append({"params": params, "score": value})
            if value > best_score:
                best, best_score = params, value
            if progress is not None:
                progress(done, planned, float(best_score), value)
    return SearchResult(best, float(best_score), trials)
