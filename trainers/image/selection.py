"""Choose, evaluate and refit an image classifier's head, the way scikit-learn's search does with refit.

1. *Select* the head parameters and views by cross-validation on the train and validation photos.
2. *Evaluate* that choice on the test photos, which the selection never saw: a head fitted on the
   train and validation photos predicts them (without a test split: out-of-fold predictions).
3. *Refit* the chosen configuration on every labeled photo: that head is the one exported.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from modeldesk.trainers import heads

HEADS = {"logistic": heads.LogisticRegressionHead, "mlp": heads.MLPHead}
# keys of a configuration that are not head parameters
_NOT_HEAD = ("head", "views")


class Features:
    """Cached features of the usable samples for each view, row-aligned with ``samples``."""

    def __init__(self, samples, by_view: dict):
        self.samples = samples
        self.by_view = by_view

    def views(self, indices, views) -> np.ndarray:
        """Features of sample ``indices`` as a (n_views, n_samples, dim) array."""
        return np.stack([self.by_view[v][indices] for v in views])


def make_head(template, config: dict):
    """A new head for ``config`` (``head`` kind, ``views`` and head parameters) under ``template``."""
    kind = config.get("head", template.head)
    if kind not in HEADS:
        raise ValueError(f"template {template.name}: unknown head {kind!r}")
    fixed = template.head_params if kind == template.head else {}
    return HEADS[kind](**{**fixed, **{k: v for k, v in config.items() if k not in _NOT_HEAD}})


def fit_views(head, X_views: np.ndarray, y: np.ndarray):
    """Fit ``head`` on every view of every sample; X_views is (n_views, n_samples, dim)."""
    return head.fit(X_views.reshape(-1, X_views.shape[-1]), np.tile(y, X_views.shape[0]))


def search_stages(template) -> tuple[dict, list]:
    """(starting configuration, stages of changes) that ``heads.staged_search`` walks for ``template``.

    Stage 1: the head parameter grid; stage 2: the other view sets; stage 3: other heads
    (``template.head_candidates``), each with the best views.
    """
    space = {k: v for k, v in template.search_space.items() if k != "views"}
    grid = [dict(zip(space, values)) for values in itertools.product(*space.values())] or [{}]
    views = template.candidate_views()
    start = {"head": template.head, "views": views[0]}
    stages = [grid, [{"views": v} for v in views[1:]], [dict(c) for c in template.head_candidates]]
    return start, [stage for stage in stages if stage]


def config_work(template, config: dict) -> float:
    """Relative cost of one fit of ``config`` per sample and feature: 1 for a logistic head on one view."""
    kind = config.get("head", template.head)
    per_view = 1.0
    if kind == "mlp":
        mlp = make_head(template, config)
        per_view = mlp.epochs * mlp.hidden / 600  # Adam epochs over a hidden layer vs ~100 L-BFGS steps
    return per_view * len(config.get("views", ("identity",)))


def planned_work(template) -> float:
    """:func:`config_work` summed over a full search, the evaluation fit and the refit."""
    start, stages = search_stages(template)
    # a trial's folds, each fitted on (folds - 1) / folds of the photos, cost (folds - 1) whole fits
    trial_cost = (template.cv_folds - 1) * template.cv_repeats if n_candidates(template) > 1 else 0
    widest = max(template.candidate_views(), key=len)
    work = 0.0
    for number, stage in enumerate(stages):
        for change in stage:
            config = {**start, **change}
            if number == len(stages) - 1 and "views" not in change and len(stages) > 2:
                config["views"] = widest  # the last stage runs with the best views, say the widest
            work += config_work(template, config) * trial_cost
    final = {**start, **(stages[0][0] if stages else {}), "views": widest}
    return work + 2 * config_work(template, final)


def n_candidates(template) -> int:
    """How many configurations the search can try (1: nothing to search)."""
    _, stages = search_stages(template)
    return sum(len(stage) for stage in stages)


@dataclass
class Selection:
    """What :func:`select_evaluate_refit` decided and measured."""

    config: dict
    trials: list = field(default_factory=list)
    cv_accuracy: float | None = None
    eval_idx: np.ndarray = None
    eval_split: str = "test"
    eval_proba: np.ndarray = None
    head: object = None  # the refitted head, trained on every labeled sample
    fits: int = 0
    work: float = 0.0  # config_work summed over every fit made
    warnings: list = field(default_factory=list)
    novelty: object = None  # the "not sure" reference, fitted with the graph (``NoveltyReference``)


def select_evaluate_refit(template, feats: Features, y, split, *, deadline=None, progress=None) -> Selection:
    """Select on train+val by cross-validation, evaluate on test, refit on everything.

    Parameters
    ----------
    template : the image template (its search space, views, heads and folds).
    feats : the features of every usable labeled sample.
    y : class index per sample; split : "train", "val" or "test" per sample.
    deadline : ``time.monotonic()`` after which no new search trial starts.
    progress : ``progress(fraction, metrics)`` during the search.
    """
    split = np.asarray(split)
    dev = np.flatnonzero(split != "test")
    test = np.flatnonzero(split == "test")
    everyone = np.arange(len(y))
    start, stages = search_stages(template)
    folds = heads.usable_folds(y[dev], template.cv_folds)
    out = Selection(config=dict(start))
    if folds >= 2 and sum(len(s) for s in stages) > 1:

        def score(config):
            out.work += config_work(template, config) * (folds - 1) * template.cv_repeats
            X = feats.views(dev, config["views"])
            return np.mean(
                [
                    heads.cross_val_score(
                        lambda: make_head(template, config), X, y[dev], folds=folds, random_state=draw
                    ).mean()
                    for draw in range(template.cv_repeats)
                ]
            )

        result = heads.staged_search(
            stages,
            score,
            start=start,
            deadline=deadline,
            progress=lambda done, total, best, value: (
                progress(done / total, {"cv_accuracy": best, "trial_accuracy": value}) if progress else None
            ),
        )
        out.config, out.cv_accuracy = result.best, result.best_score
        out.trials = [
            {
                "params": {k: v for k, v in t["params"].items() if k != "views"},
                "views": list(t["params"]["views"]),
                "cv_accuracy": t["score"],
            }
            for t in result.trials
        ]
        out.fits = len(result.trials) * folds * template.cv_repeats
    else:
        out.config = {**start, **(stages[0][0] if stages else {})}
    views = out.config["views"]

    if len(test):
        head = fit_views(make_head(template, out.config), feats.views(dev, views), y[dev])
        out.eval_idx, out.eval_split = test, "test"
        out.eval_proba = _aligned(head, heads.predict_views(head, feats.views(test, views)), y)
        out.fits += 1
        out.work += config_work(template, out.config) * len(dev) / len(y)
    elif folds >= 2:
        out.eval_idx, out.eval_split = dev, "cross-validation"
        out.eval_proba = heads.cross_val_predict(
            lambda: make_head(template, out.config), feats.views(dev, views), y[dev], folds=folds
        )
        out.fits += folds
        out.work += config_work(template, out.config) * (folds - 1) * len(dev) / len(y)
        out.warnings.append(
            "no test images: the evaluation comes from cross-validation on the photos that also "
            "chose the settings, so it may be a little optimistic; put some photos in the test split"
        )
    else:
        out.eval_idx, out.eval_split = everyone, "train"
        out.warnings.append("too few images to hold any out: the metrics are measured on the training images")
    out.head = fit_views(make_head(template, out.config), feats.views(everyone, views), y)
    out.fits += 1
    out.work += config_work(template, out.config)
    if out.eval_split == "train":
        out.eval_proba = heads.predict_views(out.head, feats.views(everyone, views))
    return out


def _aligned(head, proba, y) -> np.ndarray:
    """Probabilities with one column per class index of ``y`` (a class absent from training gets 0)."""
    full = np.zeros((proba.shape[0], int(y.max()) + 1))
    full[:, head.classes_] = proba
    return full
