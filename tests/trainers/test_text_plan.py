"""The text run's time plan: fits bounded in time, warm starts, what a small budget leaves out."""

from __future__ import annotations

import numpy as np
import pytest

from modeldesk.scheduler import CostModel
from modeldesk.trainers.templates import get_template
from modeldesk.trainers.text.features import CSR
from modeldesk.trainers.text.head import SparseLogisticRegression
from modeldesk.trainers.text.plan import EVAL_WORK, EVALS_WORK, plan_fits, plan_run


def _data(n=300, d=40, seed=0):
    rng = np.random.default_rng(seed)
    dense = rng.random((n, d)) * (rng.random((n, d)) < 0.3)
    y = (dense[:, :5].sum(axis=1) > dense[:, 5:10].sum(axis=1)).astype(int) + (dense[:, 10] > 0.5)
    rows, cols = np.nonzero(dense)
    return CSR(
        dense[rows, cols], cols, np.concatenate([[0], np.cumsum(np.count_nonzero(dense, axis=1))]), d
    ), y


def test_a_fit_out_of_time_keeps_its_solution_so_far():
    X, y = _data()
    head = SparseLogisticRegression(C=10.0, max_seconds=0.0).fit(X, y)
    assert head.timed_out_ and head.n_iter_ == 1
    assert np.isfinite(head.coef_).all() and head.predict_proba(X).shape == (len(y), 3)
    free = SparseLogisticRegression(C=10.0).fit(X, y)
    assert not free.timed_out_ and free.n_iter_ > 1


def test_a_warm_start_needs_fewer_evaluations_than_a_cold_one():
    X, y = _data()
    head = SparseLogisticRegression(C=1.0, warm_start=True).fit(X, y)
    head.C = 3.0
    warm = head.fit(X, y).n_evals_
    cold = SparseLogisticRegression(C=3.0).fit(X, y).n_evals_
    assert warm < cold


def test_a_stop_request_interrupts_the_fit():
    X, y = _data()
    with pytest.raises(InterruptedError):
        SparseLogisticRegression().fit(X, y, should_stop=lambda: True)


def _cost(seconds_per_unit_eval=1.0, evals=100.0) -> CostModel:
    cost = CostModel(None)
    cost.record(EVAL_WORK, "cpu", 1, 1, n_items=1, seconds=seconds_per_unit_eval)
    for key in EVALS_WORK.values():
        cost.record(key, "cpu", 1, 1, n_items=1, seconds=evals)
    return cost


CANDIDATES = [{"C": c, "embedding": e} for e in (None, "usem3") for c in (3.0, 10.0, 30.0)]


def test_plenty_of_time_keeps_every_candidate_unbounded():
    plan = plan_fits(
        _cost(), CANDIDATES, nnz_fit=1e4, n_fit=1000, n_train=800, n_classes=2, folds=3, available_s=1e6
    )
    assert plan.candidates == CANDIDATES and not plan.cut and not plan.dropped
    assert plan.search_s > plan.final_s > 0


def test_a_short_budget_drops_the_encoder_first_then_settings_then_bounds_the_fit():
    kwargs = dict(nnz_fit=1e6, n_fit=10_000, n_train=8000, n_classes=2, folds=3)
    one_fit = 100 * 1.0 * (1e6 + 0) * 2 / 1e6  # evaluations x seconds per unit x units
    no_encoder = plan_fits(_cost(), CANDIDATES, available_s=12 * one_fit, **kwargs)
    assert [c["embedding"] for c in no_encoder.candidates] == [None] * 3
    assert no_encoder.dropped == ["the sentence encoder"] and not no_encoder.cut
    fewer = plan_fits(_cost(), CANDIDATES, available_s=4 * one_fit, **kwargs)
    assert len(fewer.candidates) < 3 and "some settings of the search" in fewer.dropped
    assert fewer.search_s + fewer.final_s <= 4 * one_fit + 1e-9
    bounded = plan_fits(_cost(), CANDIDATES, available_s=0.5 * one_fit, **kwargs)
    assert bounded.candidates == [{"C": 10.0, "embedding": None}] and bounded.cut
    assert bounded.final_s == pytest.approx(0.5 * one_fit)


def test_the_eta_follows_the_measured_speed():
    from modeldesk.trainers.data import LabeledSample

    samples = [
        LabeledSample(str(i), "some words here " * 5, "ab"[i % 2], "train" if i % 4 else "test")
        for i in range(400)
    ]
    template = get_template("text-classification/fast")
    slow = plan_run(samples, template, _cost(seconds_per_unit_eval=1.0), lambda s: 0, 1e6)
    fast = plan_run(samples, template, _cost(seconds_per_unit_eval=0.01), lambda s: 0, 1e6)
    assert slow["seconds"]["final_fit"] == pytest.approx(100 * fast["seconds"]["final_fit"], rel=0.1)
    bounded = plan_run(samples, template, _cost(seconds_per_unit_eval=1.0), lambda s: 0, 10)
    assert bounded["bounded"] and bounded["eta_s"] <= 10


def test_the_encoder_is_timed_once_on_a_few_texts_before_the_first_plan(monkeypatch):
    from modeldesk.trainers.data import LabeledSample
    from modeldesk.trainers.text import trainer as tc
    from modeldesk.trainers.text.plan import EMBED_WORK

    read = []
    monkeypatch.setattr(
        tc, "sentence_embeddings", lambda texts: read.append(list(texts)) or np.zeros((len(texts), 512))
    )
    samples = [LabeledSample(str(i), f"text {i}", "ab"[i % 2], "train") for i in range(80)] + [
        LabeledSample("u", "unlabeled", None, "train")
    ]
    cost = CostModel(None)
    tc._probe_encoder(cost, samples)
    tc._probe_encoder(cost, samples)
    chunks = [tc.PROBE_CHUNK] * (tc.PROBE_TEXTS // tc.PROBE_CHUNK)
    assert [len(r) for r in read] == [1, *chunks] and "unlabeled" not in read[1]  # a warm-up, then timed
    assert cost.get(EMBED_WORK, "cpu", 1, 1)["source"] == "probe"
