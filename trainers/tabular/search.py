"""The choice among a template's candidates: cross-validation on the training rows, within a deadline."""

from __future__ import annotations

import time

import numpy as np

from modeldesk.trainers.tabular import models


def _folds(y: np.ndarray, classes: int, folds: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import KFold, StratifiedKFold

    if classes:
        smallest = int(np.bincount(y, minlength=classes)[np.bincount(y, minlength=classes) > 0].min())
        folds = max(2, min(folds, smallest))
        if smallest >= 2:
            return list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))
    folds = max(2, min(folds, len(y)))
    return list(KFold(folds, shuffle=True, random_state=seed).split(np.zeros(len(y))))


def cv_answers(candidate: dict, X: np.ndarray, y: np.ndarray, classes: int, splits) -> np.ndarray:
    """The candidate's answer for every row from the fold that held it out."""
    answers = np.zeros((len(y), classes)) if classes else np.zeros(len(y))
    for fit_idx, held_idx in splits:
        model = models.fit(candidate, X[fit_idx], y[fit_idx], classes)
        answers[held_idx] = models.predict(model, X[held_idx], classes)
    return answers


def score(answers: np.ndarray, y: np.ndarray, classes: int) -> dict:
    """Held-out figures of cross-validated answers: accuracy and log loss, or MAE and RMSE."""
    if classes:
        p = np.clip(answers[np.arange(len(y)), y], 1e-12, 1.0)
        return {
            "cv_accuracy": float(np.mean(np.argmax(answers, axis=1) == y)),
            "cv_log_loss": float(-np.mean(np.log(p))),
        }
    error = answers - y
    return {"cv_mae": float(np.mean(np.abs(error))), "cv_rmse": float(np.sqrt(np.mean(error**2)))}


def _key(trial: dict) -> tuple:
    # log loss, a proper scoring rule: over a few hundred rows the accuracy of a dozen candidates moves in
    # steps of one row, and the best of them is mostly the luckiest
    if "cv_accuracy" in trial:
        return (round(trial["cv_log_loss"], 6), -trial["cv_accuracy"])
    return (trial["cv_rmse"],)


def _blend(trials: list[dict], answers: list[np.ndarray], y, classes: int) -> dict | None:
    """The average of the best model of each kind (trees and linear) as one more trial, scored on the
    same held-out folds (no refit: the folds' answers are averaged), or None with a single kind."""
    best: dict[str, int] = {}
    for i, trial in enumerate(trials):
        kind = trial["model"]
        if kind not in best or _key(trial) < _key(trials[best[kind]]):
            best[kind] = i
    if len(best) < 2:
        return None
    picks = sorted(best.values())
    parts = [{k: v for k, v in trials[i].items() if not k.startswith("cv_")} for i in picks]
    return {
        "model": "blend",
        "parts": parts,
        **score(np.mean([answers[i] for i in picks], axis=0), y, classes),
    }


def search(candidates, X, y, classes: int, *, folds: int, deadline: float, on_trial=None):
    """(best candidate, trials, dropped): each candidate scored by ``folds``-fold cross-validation on
    (X, y) while time is left before ``deadline`` (``time.monotonic``); the first is always tried."""
    candidates = [dict(c) for c in candidates]
    if len(candidates) == 1:
        return candidates[0], [], False
    splits = _folds(y, classes, folds)
    trials: list[dict] = []
    answers: list[np.ndarray] = []
    spent: dict[str, float] = {}
    for i, candidate in enumerate(candidates):
        guess = spent.get(candidate["model"], 0.0)
        if trials and time.monotonic() + guess > deadline:
            continue
        began = time.monotonic()
        held_out = cv_answers(candidate, X, y, classes, splits)
        trial = {**candidate, **score(held_out, y, classes)}
        spent[candidate["model"]] = max(spent.get(candidate["model"], 0.0), time.monotonic() - began)
        trials.append(trial)
        answers.append(held_out)
        if on_trial is not None:
            on_trial(i, len(candidates), {k: v for k, v in trial.items() if k.startswith("cv_")})
    blend = _blend(trials, answers, y, classes)
    if blend is not None:
        trials.append(blend)
    best = min(trials, key=_key)
    chosen = {k: v for k, v in best.items() if not k.startswith("cv_")}
    return chosen, trials, len(trials) < len(candidates)
