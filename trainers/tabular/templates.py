"""The tabular templates, for classification and regression (the task registry points here)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class TableTemplate:
    """A table training preset.

    Parameters
    ----------
    name, task, description, time_budget_s : as every template (``trainers.templates``).
    candidates : the models tried, in order (``trainers/tabular/models.py``); with more than one, the
        one that predicts held-out folds of the training rows best is kept.
    cv_folds : folds of that cross-validation.
    """

    name: str
    task: str
    description: str
    time_budget_s: float
    candidates: tuple = ()
    cv_folds: int = 5

    def to_dict(self) -> dict:
        return {**asdict(self), "candidates": [dict(c) for c in self.candidates]}


def _linear(classes: bool) -> tuple:
    if classes:
        return tuple({"model": "linear", "C": c} for c in (0.03, 0.1, 0.3, 1.0, 3.0, 10.0))
    return tuple({"model": "linear", "alpha": a} for a in (0.1, 1.0, 10.0, 100.0))


def _trees() -> tuple:
    return tuple(
        {
            "model": "trees",
            "learning_rate": lr,
            "num_leaves": leaves,
            "min_child_samples": m,
            "n_estimators": n,
        }
        for lr, leaves, m, n in (
            (0.05, 7, 10, 200),
            (0.05, 15, 20, 300),
            (0.03, 7, 5, 400),
            (0.1, 31, 10, 150),
            (0.02, 15, 10, 600),
        )
    )


def _templates(task: str, classes: bool, what: str) -> tuple:
    return (
        TableTemplate(
            name=f"{task}/fast",
            task=task,
            description=f"A weighted sum of the columns (numbers scaled, categories one-hot, words counted) "
            f"that {what}. The quickest and easy to read; misses interactions between columns.",
            time_budget_s=60.0,
            candidates=_linear(classes),
        ),
        TableTemplate(
            name=f"{task}/accurate",
            task=task,
            description=f"Gradient-boosted decision trees that {what}, tuned by cross-validation within the "
            "time budget (the weighted sum is among the candidates). Usually the most accurate on tables.",
            time_budget_s=300.0,
            candidates=_trees() + _linear(classes),
        ),
    )


CLASSIFICATION_TEMPLATES = _templates("tabular-classification", True, "predicts the target column's class")
REGRESSION_TEMPLATES = _templates("tabular-regression", False, "predicts the target column's number")
