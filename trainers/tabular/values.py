"""Regression figures: MAE, RMSE and R² with bootstrap intervals, the worst rows, and the evaluator of
an exported regression model on labeled rows."""

from __future__ import annotations

import numpy as np

from modeldesk.errors import UserError

LEVEL = 0.9
BOOTSTRAP = 1000
MAX_POINTS = 400  # (true, predicted) pairs kept for the predicted-against-true plot


def _r2(y, p) -> float:
    total = float(np.sum((y - np.mean(y)) ** 2))
    return 1.0 - float(np.sum((y - p) ** 2)) / total if total > 0 else 0.0


def regression_report(y_true, y_pred, *, seed: int = 0) -> dict:
    """``mae``, ``rmse``, ``r2``, ``n``, ``interval`` (90 % bootstrap intervals of each), ``worst``
    (indices and values of the rows furthest off) and ``points`` (``[true, predicted]`` of at most
    ``MAX_POINTS`` rows, for a plot), on held-out rows."""
    y = np.asarray(y_true, dtype=np.float64).reshape(-1)
    p = np.asarray(y_pred, dtype=np.float64).reshape(-1)
    if not len(y):
        raise UserError("no rows with a value to measure the model on")
    error = p - y
    metrics = {
        "n": int(len(y)),
        "mae": float(np.mean(np.abs(error))),
        "rmse": float(np.sqrt(np.mean(error**2))),
        "r2": _r2(y, p),
    }
    rng = np.random.default_rng(seed)
    draws = {"mae": [], "rmse": [], "r2": []}
    for _ in range(BOOTSTRAP if len(y) > 1 else 0):
        pick = rng.integers(0, len(y), len(y))
        e = error[pick]
        draws["mae"].append(np.mean(np.abs(e)))
        draws["rmse"].append(np.sqrt(np.mean(e**2)))
        draws["r2"].append(_r2(y[pick], p[pick]))
    tail = 100 * (1 - LEVEL) / 2
    metrics["interval"] = {
        name: {
            "low": float(np.percentile(v, tail)),
            "high": float(np.percentile(v, 100 - tail)),
            "level": LEVEL,
        }
        for name, v in draws.items()
        if v
    }
    worst = np.argsort(-np.abs(error))[:12]
    metrics["worst"] = [{"index": int(i), "true": float(y[i]), "predicted": float(p[i])} for i in worst]
    shown = np.random.default_rng(seed).permutation(len(y))[:MAX_POINTS]
    metrics["points"] = [[round(float(y[i]), 6), round(float(p[i]), 6)] for i in sorted(shown)]
    return metrics


def evaluate_values(artifact_path, samples, *, progress=None) -> dict:
    """MAE, RMSE and R² of an exported regression model on labeled rows it never saw."""
    from modeldesk.deploy import load_artifact
    from modeldesk.deploy.predictor import Predictor
    from modeldesk.trainers.evaluation import predict_all

    artifact = load_artifact(artifact_path)
    samples = [s for s in samples if s.label not in (None, "")]
    if not samples:
        raise UserError("no rows with a value found to evaluate on")
    try:
        y = np.array([float(s.label) for s in samples])
    except ValueError:
        raise UserError("the column to predict holds values that are not numbers") from None
    predictions = predict_all(Predictor(artifact), samples, progress=progress)
    return regression_report(y, [p["value"] for p in predictions])
