"""Select on train+val, evaluate on test, refit on everything: which head saw which photos."""

from __future__ import annotations

import numpy as np
import pytest

from modeldesk.trainers.features import EMBEDDING
from modeldesk.trainers.heads import LogisticRegressionHead
from modeldesk.trainers.image import selection as image_selection
from modeldesk.trainers.image.selection import Features, select_evaluate_refit
from modeldesk.trainers.templates import Template

SEEN: list = []  # (what, sorted sample ids) for every fit and every prediction of a SpyHead


class SpyHead(LogisticRegressionHead):
    """A logistic head that records which samples (column 0 holds the sample id) it fits and predicts."""

    def fit(self, X, y, *args, **kwargs):
        SEEN.append(("fit", sorted(set(np.asarray(X)[:, 0].astype(int).tolist()))))
        return super().fit(X, y, *args, **kwargs)

    def predict_proba(self, X):
        SEEN.append(("predict", sorted(set(np.asarray(X)[:, 0].astype(int).tolist()))))
        return super().predict_proba(X)


def spy_template(**changes) -> Template:
    base = dict(
        name="image-classification/spy",
        task="image-classification",
        description="spy",
        backbone="efficientnet-lite0",
        features=EMBEDDING,
        head="spy",
        head_params={"max_iter": 50},
        search_space={"l2": [1e-2, 1e-1], "views": [("identity",), ("identity", "hflip")]},
        cv_folds=3,
    )
    return Template(**{**base, **changes})


def made_features(n_per_class=12, classes=3, seed=0):
    """Samples whose feature 0 is their id (standardised away as a near-constant-free column) plus signal."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(classes), n_per_class)
    split = np.array(["test" if i % 4 == 0 else "val" if i % 4 == 1 else "train" for i in range(len(y))])
    by_view = {}
    for view in ("identity", "hflip"):
        X = rng.normal(size=(len(y), 6)) + 3 * np.eye(classes, 6)[y]
        X[:, 0] = np.arange(len(y))
        by_view[view] = X
    return Features(list(range(len(y))), by_view), y, split


@pytest.fixture
def spy(monkeypatch):
    monkeypatch.setitem(image_selection.HEADS, "spy", SpyHead)
    SEEN.clear()
    return SEEN


def test_refitted_model_saw_every_labeled_photo_and_the_evaluation_photos_were_never_used_to_select(spy):
    feats, y, split = made_features()
    test = set(np.flatnonzero(split == "test").tolist())
    chosen = select_evaluate_refit(spy_template(), feats, y, split)

    assert chosen.trials and chosen.eval_split == "test"
    assert set(chosen.eval_idx.tolist()) == test
    fits = [ids for what, ids in spy if what == "fit"]
    # every fit of the search and of the evaluation head used train and val photos only
    assert all(not set(ids) & test for ids in fits[:-1])
    assert len(fits) == len(chosen.trials) * 3 + 2 == chosen.fits
    # the evaluation head predicted exactly the test photos, after fitting on all the others
    assert fits[-2] == sorted(set(range(len(y))) - test)
    assert ("predict", sorted(test)) in spy
    search_predictions = [ids for what, ids in spy if what == "predict" and ids != sorted(test)]
    assert search_predictions and all(not set(ids) & test for ids in search_predictions)
    # the exported head is the last fit, on every labeled photo
    assert fits[-1] == list(range(len(y)))
    assert chosen.head is not None and list(chosen.head.classes_) == [0, 1, 2]
    assert chosen.eval_proba.shape == (len(test), 3)


def test_without_a_test_split_the_evaluation_is_out_of_fold_and_says_so(spy):
    feats, y, split = made_features()
    split[split == "test"] = "train"
    chosen = select_evaluate_refit(spy_template(search_space={"l2": [1e-2]}), feats, y, split)
    assert chosen.eval_split == "cross-validation" and len(chosen.eval_idx) == len(y)
    assert any("no test images" in w for w in chosen.warnings)
    predicted = [ids for what, ids in spy if what == "predict"]
    assert sorted(i for ids in predicted for i in ids) == list(range(len(y)))  # each photo predicted once
    assert [ids for what, ids in spy if what == "fit"][-1] == list(range(len(y)))


def test_an_mlp_candidate_is_tried_with_the_best_views_and_wins_only_by_cross_validation(spy):
    feats, y, split = made_features()
    template = spy_template(
        search_space={"l2": [1e-2]}, head_candidates=({"head": "mlp", "hidden": 8, "epochs": 5},)
    )
    chosen = select_evaluate_refit(template, feats, y, split)
    tried = [t["params"].get("head") for t in chosen.trials]
    assert tried[-1] == "mlp" and tried.count("mlp") == 1
    best = max(chosen.trials, key=lambda t: t["cv_accuracy"])
    assert chosen.config["head"] == best["params"]["head"] and chosen.cv_accuracy == best["cv_accuracy"]


def test_repeated_cross_validation_scores_each_setting_by_the_mean_of_other_fold_draws(spy):
    from modeldesk.trainers import heads

    feats, y, split = made_features(seed=3)
    dev = np.flatnonzero(split != "test")
    chosen = select_evaluate_refit(spy_template(cv_repeats=2), feats, y, split)

    fits = [ids for what, ids in spy if what == "fit"]
    assert len(fits) == len(chosen.trials) * 3 * 2 + 2 == chosen.fits
    # each search fit left out a third of the search photos, and the two draws left out other thirds
    left_out = [tuple(sorted(set(dev.tolist()) - set(ids))) for ids in fits[:6]]
    assert len(set(left_out[:3])) == 3 and set(left_out[:3]) != set(left_out[3:6])
    first = chosen.trials[0]
    draws = [
        heads.cross_val_score(
            lambda: SpyHead(max_iter=50, l2=first["params"]["l2"]),
            feats.views(dev, first["views"]),
            y[dev],
            folds=3,
            random_state=draw,
        ).mean()
        for draw in (0, 1)
    ]
    assert first["cv_accuracy"] == pytest.approx(np.mean(draws))
