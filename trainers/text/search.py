"""Choosing the text head's settings by cross-validation on the training split, within a time budget.

Each fold keeps one head per feature set and walks the candidates' ``C`` in the order given, warm
started from the previous solution (a path over ``C`` costs a fraction of cold fits). The final fit on
train + validation texts starts from the chosen candidate's first fold. Every fit is bounded in
seconds: the search shares what is left of its time among the fits still to run, so a fit that ends
early leaves its time to the next, and the final fit gets what the plan reserved for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from modeldesk.trainers.heads import stratified_folds, usable_folds
from modeldesk.trainers.text.head import SparseLogisticRegression

MIN_FIT_S = 0.5  # no fit is given less (a fit that has no time left still takes a few steps)


@dataclass
class FitLog:
    """What the fits did: for the cost model (units x evaluations per second) and the report."""

    seconds: float = 0.0
    unit_evals: float = 0.0  # sum of fit units x evaluations
    fits: int = 0
    #: evaluations and number of the fits that ended on their own (not at their time limit), by start
    free: dict = field(default_factory=lambda: {"cold": [0, 0], "warm": [0, 0]})
    timed_out: int = 0
    trials: list = field(default_factory=list)


def _fit(head, X, y, E, n_classes, seconds, log: FitLog, units: float, should_stop):
    head.max_seconds = max(seconds, MIN_FIT_S)
    start = "warm" if head.warm_start and hasattr(head, "coef_") else "cold"
    started = time.monotonic()
    head.fit(X, y, E, n_classes, should_stop=should_stop)
    log.seconds += time.monotonic() - started
    log.unit_evals += units * head.n_evals_
    log.fits += 1
    if head.timed_out_:
        log.timed_out += 1
    else:
        log.free[start][0] += head.n_evals_
        log.free[start][1] += 1
    return head


def search(
    X, E, y, n_classes, candidates, *, folds: int, seconds: float, units, should_stop=None, on_trial=None
) -> tuple[dict, dict | None, FitLog]:
    """Cross-validated accuracy of each candidate, in order, while ``seconds`` last.

    Returns (best candidate, its fold-0 coefficients for a warm start or None, log). ``units(rows,
    embedding)`` is the work of one evaluation; ``on_trial(i, trial)`` is called after each candidate.
    """
    log = FitLog()
    n_folds = usable_folds(y, folds)
    if len(candidates) <= 1 or n_folds < 2:
        return candidates[0], None, log
    split = stratified_folds(y, n_folds)
    parts = [(X.take(fit), X.take(held), fit, held) for fit, held in split]
    heads: dict = {}
    deadline = time.monotonic() + seconds
    remaining = len(candidates) * n_folds
    starts: dict = {}
    for i, candidate in enumerate(candidates):
        if log.trials and time.monotonic() >= deadline:
            break
        scores = []
        for f, (Xf, Xh, fit, held) in enumerate(parts):
            key = (f, candidate["embedding"])
            head = heads.setdefault(key, SparseLogisticRegression(warm_start=True))
            head.C = candidate["C"]
            Ef = None if candidate["embedding"] is None else E[fit]
            share = (deadline - time.monotonic()) / remaining
            _fit(
                head,
                Xf,
                y[fit],
                Ef,
                n_classes,
                share,
                log,
                units(len(fit), candidate["embedding"]),
                should_stop,
            )
            remaining -= 1
            proba = head.predict_proba(Xh, None if Ef is None else E[held])
            scores.append(float(np.mean(proba.argmax(axis=1) == y[held])))
            if f == 0:
                starts[i] = (
                    head.coef_.copy(),
                    None if head.dense_coef_ is None else head.dense_coef_.copy(),
                    head.intercept_.copy(),
                )
        log.trials.append({**candidate, "cv_accuracy": float(np.mean(scores))})
        if on_trial is not None:
            on_trial(i, log.trials[-1])
    best = max(range(len(log.trials)), key=lambda t: log.trials[t]["cv_accuracy"])
    return candidates[best], starts.get(best), log


def final_fit(
    X, E, y, n_classes, candidate, start, *, seconds: float, units: float, log: FitLog, should_stop=None
) -> SparseLogisticRegression:
    """The chosen candidate fitted on all of ``X`` (warm started from ``start`` when given)."""
    head = SparseLogisticRegression(C=candidate["C"], warm_start=start is not None)
    if start is not None:
        head.coef_, head.dense_coef_, head.intercept_ = start
    return _fit(
        head, X, y, E if candidate["embedding"] else None, n_classes, seconds, log, units, should_stop
    )
