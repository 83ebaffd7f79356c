"""Tests of the numpy heads: gradients, learning, class weights, conformance, ONNX export."""

import copy

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from modeldesk.trainers import heads
from modeldesk.trainers.heads import (
    LogisticRegressionHead,
    MLPHead,
    NotFittedError,
    SigmoidHead,
    cross_val_score,
    head_onnx_model,
    mlp_loss_grad,
    sigmoid_loss_grad,
    softmax_loss_grad,
    staged_search,
    stratified_folds,
    usable_folds,
)


def make_blobs(n=400, d=12, c=4, sep=3.0, seed=0, weights=None):
    """Gaussian classes on raw-looking features: offset, and very different scales per feature."""
    rng = np.random.default_rng(seed)
    y = rng.choice(c, size=n, p=weights)
    centers = rng.normal(size=(c, d)) * sep
    X = centers[y] + rng.normal(size=(n, d))
    scales = np.exp(rng.uniform(-3, 3, size=d))
    return X * scales + 7.0, y


def make_multilabel(n=400, d=12, c=3, seed=0, rates=(0.5, 0.3, 0.2)):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, c)) < np.asarray(rates)[:c]).astype(int)
    X = Y @ (rng.normal(size=(c, d)) * 3) + rng.normal(size=(n, d))
    return X * np.exp(rng.uniform(-2, 2, size=d)) - 3.0, Y


def numeric_grad(fun, theta, eps=1e-6):
    g = np.zeros_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = eps
        g[i] = (fun(theta + e)[0] - fun(theta - e)[0]) / (2 * eps)
    return g


def small_head(kind, **kw):
    """Heads small enough for exhaustive finite differences."""
    if kind == "mlp":
        return MLPHead(hidden=5, **kw)
    if kind == "sigmoid":
        return SigmoidHead(**kw)
    return LogisticRegressionHead(**kw)


# ---------------------------------------------------------------- gradients


def test_softmax_loss_grad_matches_finite_differences():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(20, 4)), rng.integers(0, 3, 20)
    T, w = np.eye(3)[y], rng.uniform(0.1, 2.0, 20)
    W0, b0 = rng.normal(size=(4, 3)), rng.normal(size=3)

    def fun(th):
        loss, (gW, gb) = softmax_loss_grad(th[:12].reshape(4, 3), th[12:], X, T, w, 0.7)
        return loss, np.concatenate([gW.ravel(), gb])

    theta = np.concatenate([W0.ravel(), b0])
    np.testing.assert_allclose(fun(theta)[1], numeric_grad(fun, theta), rtol=1e-6, atol=1e-8)


def test_sigmoid_loss_grad_matches_finite_differences():
    rng = np.random.default_rng(2)
    X, T = rng.normal(size=(20, 4)), (rng.random((20, 3)) < 0.4).astype(float)
    w = rng.uniform(0.1, 2.0, (20, 3))

    def fun(th):
        loss, (gW, gb) = sigmoid_loss_grad(th[:12].reshape(4, 3), th[12:], X, T, w, 0.7)
        return loss, np.concatenate([gW.ravel(), gb])

    theta = rng.normal(size=15)
    np.testing.assert_allclose(fun(theta)[1], numeric_grad(fun, theta), rtol=1e-6, atol=1e-8)


def test_mlp_loss_grad_with_dropout_mask_matches_finite_differences():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(15, 4)), rng.integers(0, 3, 15)
    T, w = np.eye(3)[y], rng.uniform(0.1, 2.0, 15)
    mask = (rng.random((15, 6)) < 0.7) / 0.7
    shapes = [(4, 6), (6,), (6, 3), (3,)]
    bounds = np.cumsum([0] + [int(np.prod(s)) for s in shapes])

    def fun(th):
        parts = [th[a:b].reshape(s) for a, b, s in zip(bounds[:-1], bounds[1:], shapes)]
        loss, grads = mlp_loss_grad(*parts, X, T, w, 0.3, mask)
        return loss, np.concatenate([g.ravel() for g in grads])

    theta = rng.normal(size=bounds[-1])
    np.testing.assert_allclose(fun(theta)[1], numeric_grad(fun, theta), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kind", ["logreg", "mlp", "sigmoid"])
def test_head_objective_gradient_with_l2_class_and_sample_weights(kind):
    """The exact objective each head optimises (standardised, class-weighted, L2) has the right gradient."""
    rng = np.random.default_rng(4)
    if kind == "sigmoid":
        X, y = make_multilabel(n=40, d=5, seed=4)
    else:
        X, y = make_blobs(n=40, d=5, c=3, seed=4, weights=[0.6, 0.3, 0.1])
    sw = rng.uniform(0.2, 3.0, len(X))
    head = small_head(kind, l2=0.5, class_weight="balanced")
    fun, n_params = head._loss_and_grad_fn(X, y, sample_weight=sw)
    theta = rng.normal(size=n_params) * 0.3
    np.testing.assert_allclose(fun(theta)[1], numeric_grad(fun, theta), rtol=1e-5, atol=1e-8)
    # the weights change the objective (so they are really in it)
    fun_plain, _ = small_head(kind, l2=0.5)._loss_and_grad_fn(X, y)
    assert abs(fun(theta)[0] - fun_plain(theta)[0]) > 1e-3


def test_lbfgs_reaches_the_optimum_found_by_scipy():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    X, y = make_blobs(n=300, d=8, c=3, sep=0.8, seed=5)
    head = LogisticRegressionHead(l2=1e-2, tol=1e-8, max_iter=1000)
    fun, n_params = head._loss_and_grad_fn(X, y)
    ref = scipy_optimize.minimize(
        fun, np.zeros(n_params), jac=True, method="L-BFGS-B", options={"gtol": 1e-10}
    )
    head.fit(X, y)
    ours = fun(np.concatenate([head.coef_.ravel(), head.intercept_]))[0]
    assert ours == pytest.approx(ref.fun, rel=1e-7, abs=1e-9)


def test_logistic_head_matches_scikit_learn():
    linear_model = pytest.importorskip("sklearn.linear_model")
    X, y = make_blobs(n=300, d=8, c=3, sep=0.8, seed=5)
    l2 = 1e-2
    head = LogisticRegressionHead(l2=l2, tol=1e-9, max_iter=2000).fit(X, y)
    # sklearn minimises C * sum(CE) + 0.5 * ||W||^2; ours mean(CE) + 0.5 * l2 * ||W||^2 on standardised X
    ref = linear_model.LogisticRegression(C=1.0 / (l2 * len(X)), tol=1e-10, max_iter=5000)
    ref.fit((X - head.mean_) / head.scale_, y)
    np.testing.assert_allclose(
        head.predict_proba(X), ref.predict_proba((X - head.mean_) / head.scale_), atol=1e-4
    )


def test_mlp_adam_fits_a_problem_a_linear_head_cannot():
    """XOR of two features: no linear head gets it, the Adam-trained hidden layer must."""
    rng = np.random.default_rng(15)
    X = rng.uniform(-1, 1, size=(600, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    linear = np.mean(LogisticRegressionHead().fit(X[:400], y[:400]).predict(X[400:]) == y[400:])
    mlp = np.mean(
        MLPHead(hidden=32, epochs=200, lr=1e-2, dropout=0.0).fit(X[:400], y[:400]).predict(X[400:]) == y[400:]
    )
    assert linear < 0.7 and mlp > 0.9


# ---------------------------------------------------------------- learning

SOFTMAX_HEADS = [
    pytest.param(lambda **kw: LogisticRegressionHead(**kw), id="logreg-lbfgs"),
    pytest.param(lambda **kw: MLPHead(hidden=32, epochs=60, **kw), id="mlp"),
]


@pytest.mark.parametrize("make", SOFTMAX_HEADS)
def test_softmax_heads_beat_chance_by_a_wide_margin(make):
    X, y = make_blobs(n=600, d=16, c=5, sep=1.5, seed=6)
    head = make().fit(X[:400], y[:400], X[400:500], y[400:500])
    accuracy = np.mean(head.predict(X[500:]) == y[500:])
    assert accuracy >= 0.9  # chance is 0.2
    assert head.predict_proba(X[500:]).shape == (100, 5)


def test_sigmoid_head_learns_every_label():
    X, Y = make_multilabel(n=600, seed=7)
    head = SigmoidHead().fit(X[:400], Y[:400], X[400:500], Y[400:500])
    pred = head.predict(X[500:])
    for j in range(Y.shape[1]):
        majority = max(Y[500:, j].mean(), 1 - Y[500:, j].mean())
        accuracy = np.mean(pred[:, j] == Y[500:, j])
        assert accuracy >= 0.95 and accuracy > majority + 0.15


def test_string_labels_come_back_as_given():
    X, y = make_blobs(n=200, d=6, c=3, sep=3, seed=8)
    names = np.array(["猫 <cat>", "dog & co", "bird"])[y]
    head = LogisticRegressionHead().fit(X, names)
    assert sorted(head.classes_.tolist()) == sorted(set(names.tolist()))
    assert np.mean(head.predict(X) == names) > 0.95


@pytest.mark.parametrize("make", SOFTMAX_HEADS)
def test_balanced_class_weight_raises_minority_recall(make):
    X, y = make_blobs(n=3000, d=6, c=2, sep=0.6, seed=9)
    minority = np.flatnonzero(y == 1)
    train = np.concatenate([np.flatnonzero(y == 0)[:1000], minority[:70]])  # 7% minority
    test = minority[70:]
    X, y, Xt = X[train], y[train], X[test]
    recall = {}
    for cw in (None, "balanced"):
        head = make(class_weight=cw).fit(X, y)
        recall[cw] = np.mean(head.predict(Xt) == 1)
    assert recall["balanced"] > recall[None] + 0.15


def test_balanced_class_weight_raises_rare_label_recall_in_sigmoid_head():
    X, Y = make_multilabel(n=1500, d=6, seed=10, rates=(0.5, 0.05, 0.3))
    noise = np.random.default_rng(1).normal(size=X.shape) * 3 * X.std(axis=0)
    X = X + noise  # make the rare label hard
    recall = {}
    for cw in (None, "balanced"):
        pred = SigmoidHead(class_weight=cw).fit(X[:1000], Y[:1000]).predict(X[1000:])
        recall[cw] = np.mean(pred[Y[1000:, 1] == 1, 1])
    assert recall["balanced"] > recall[None] + 0.15


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda **kw: LogisticRegressionHead(**kw), id="logreg"),
        pytest.param(lambda **kw: MLPHead(hidden=64, epochs=300, lr=1e-2, dropout=0.0, **kw), id="mlp"),
    ],
)
def test_early_stopping_keeps_the_best_validation_weights(make):
    # few samples, many noisy features, no L2: the validation loss rises if training runs on
    X, y = make_blobs(n=700, d=60, c=3, sep=0.25, seed=11)
    Xtr, ytr, Xv, yv = X[:120], y[:120], X[120:], y[120:]
    early = make(l2=0.0).fit(Xtr, ytr, Xv, yv)
    full = make(l2=0.0, patience=10_000).fit(Xtr, ytr)

    def val_loss(h):
        p = h.predict_proba(Xv)
        return -np.mean(np.log(p[np.arange(len(yv)), np.searchsorted(h.classes_, yv)]))

    assert early.best_val_loss_ == pytest.approx(val_loss(early), rel=1e-4)
    assert val_loss(early) < val_loss(full) - 0.05


# ---------------------------------------------------------------- conformance

ALL_HEADS = [
    pytest.param(lambda: LogisticRegressionHead(), "single", id="logreg-lbfgs"),
    pytest.param(
        lambda: LogisticRegressionHead(l2=0.1, class_weight="balanced"), "single", id="logreg-balanced"
    ),
    pytest.param(lambda: MLPHead(hidden=16, epochs=15, dropout=0.3), "single", id="mlp"),
    pytest.param(lambda: SigmoidHead(), "multi", id="sigmoid"),
    pytest.param(lambda: SigmoidHead(class_weight="balanced", threshold=0.4), "multi", id="sigmoid-balanced"),
]


def data_for(kind, seed=12):
    return (
        make_blobs(n=150, d=7, c=3, seed=seed) if kind == "single" else make_multilabel(n=150, d=7, seed=seed)
    )


@pytest.mark.parametrize("make, kind", ALL_HEADS)
def test_conformance(make, kind):
    X, y = data_for(kind)
    head = make()
    params = copy.deepcopy(head.get_params())
    assert type(head)(**params).get_params() == params  # clone-able from its params

    with pytest.raises(NotFittedError, match="not fitted"):
        head.predict_proba(X)
    with pytest.raises(NotFittedError):
        head.to_onnx("x", "y", "h/")

    assert head.fit(X, y) is head
    assert head.get_params() == params  # fit does not touch the parameters
    assert not hasattr(make(), "n_features_in_")

    proba = head.predict_proba(X)
    n_out = 3
    assert proba.shape == (len(X), n_out) and proba.dtype == np.float64
    assert np.all((proba >= 0) & (proba <= 1))
    if kind == "single":
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
        assert set(head.predict(X).tolist()) <= set(head.classes_.tolist())
    else:
        assert head.predict(X).shape == y.shape

    again = make().fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(proba, again)  # deterministic with a fixed random_state

    with pytest.raises(ValueError, match="features"):
        head.predict_proba(X[:, :-1])
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        make().fit(bad, y)
    with pytest.raises(ValueError):
        make().fit(X, y[:-1])
    with pytest.raises(ValueError, match="X_val"):
        make().fit(X, y, X_val=X)
    rebuilt = eval(repr(head), vars(heads))  # repr names exactly the parameters that differ from the defaults
    assert type(rebuilt) is type(head) and rebuilt.get_params() == params


@pytest.mark.parametrize("make, kind", [ALL_HEADS[0], ALL_HEADS[3]])  # full-batch heads: no minibatch order
def test_sample_weight_zero_equals_dropping_the_rows(make, kind):
    X, y = data_for(kind)
    sw = np.ones(len(X))
    sw[:30] = 0
    a = make().fit(X, y, sample_weight=sw).predict_proba(X)
    b = make().fit(X[30:], y[30:]).predict_proba(X)
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_random_state_changes_stochastic_heads():
    X, y = data_for("single")
    a = MLPHead(hidden=16, epochs=5, random_state=0).fit(X, y).predict_proba(X)
    b = MLPHead(hidden=16, epochs=5, random_state=1).fit(X, y).predict_proba(X)
    assert np.abs(a - b).max() > 1e-4


@pytest.mark.parametrize(
    "bad",
    [
        lambda: LogisticRegressionHead(max_iter=0),
        lambda: LogisticRegressionHead(class_weight="auto"),
        lambda: LogisticRegressionHead(l2=-1),
        lambda: MLPHead(dropout=1.0),
        lambda: MLPHead(hidden=0),
        lambda: SigmoidHead(class_weight={0: 2.0}),
    ],
)
def test_invalid_parameters_are_rejected_at_fit(bad):
    kind = "multi" if isinstance(bad(), SigmoidHead) else "single"
    X, y = data_for(kind)
    with pytest.raises(ValueError):
        bad().fit(X, y)


def test_class_weight_dict_and_unknown_validation_labels():
    X, y = data_for("single")
    head = LogisticRegressionHead(class_weight={0: 5.0}).fit(X, y)
    np.testing.assert_allclose(head.class_weight_, [5.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="not in y"):
        LogisticRegressionHead(class_weight={7: 2.0}).fit(X, y)
    with pytest.raises(ValueError, match="not seen"):
        LogisticRegressionHead().fit(X, y, X[:5], np.array([0, 1, 2, 9, 0]))
    with pytest.raises(ValueError, match="2 classes"):
        LogisticRegressionHead().fit(X, np.zeros(len(X)))


# ---------------------------------------------------------------- ONNX export


def run_onnx(model, X):
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {model.graph.input[0].name: X.astype(np.float32)})[0]


@pytest.mark.parametrize("make, kind", ALL_HEADS)
def test_onnx_export_matches_predict_proba(make, kind):
    X, y = data_for(kind)
    head = make().fit(X, y)
    out = run_onnx(head_onnx_model(head), X)
    assert out.shape == (len(X), 3)
    np.testing.assert_allclose(out, head.predict_proba(X), atol=1e-5)


def test_onnx_export_appends_to_a_larger_graph_with_prefixed_names():
    X, y = make_blobs(n=200, d=6, c=3, seed=13)
    head = MLPHead(hidden=8, epochs=20).fit(X, y)
    nodes, inits = head.to_onnx("embedding", "probabilities", prefix="cls/")
    assert all(n.name.startswith("cls/") for n in nodes) and all(i.name.startswith("cls/") for i in inits)
    assert all(i.data_type == TensorProto.FLOAT for i in inits)
    # a stand-in "backbone": features = raw * 2, so the head must see raw values
    backbone = helper.make_node("Mul", ["image", "two"], ["embedding"], name="backbone/Mul")
    two = onnx.numpy_helper.from_array(np.array(2.0, np.float32), "two")
    graph = helper.make_graph(
        [backbone, *nodes],
        "backbone_plus_head",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 6])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 3])],
        [two, *inits],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    np.testing.assert_allclose(run_onnx(model, X / 2), head.predict_proba(X), atol=1e-5)


# ---------------------------------------------------------------- cross-validation


def test_stratified_folds_partition_and_balance_classes():
    y = np.array([0] * 30 + [1] * 12 + [2] * 6)
    folds = stratified_folds(y, folds=3, random_state=0)
    tests = np.concatenate([t for _, t in folds])
    assert sorted(tests.tolist()) == list(range(len(y)))
    for train, test in folds:
        assert not set(train) & set(test)
        assert np.bincount(y[test], minlength=3).tolist() == [10, 4, 2]
    assert [t.tolist() for _, t in folds] == [t.tolist() for _, t in stratified_folds(y, 3, 0)]
    with pytest.raises(ValueError):
        stratified_folds(y, folds=1)


def test_cross_val_score_ranks_a_good_setting_above_a_bad_one():
    X, y = make_blobs(n=300, d=10, c=3, sep=1.0, seed=14)
    good = cross_val_score(lambda: LogisticRegressionHead(l2=1e-3), X, y, folds=3)
    bad = cross_val_score(lambda: LogisticRegressionHead(l2=1e4), X, y, folds=3, scoring="neg_log_loss")
    good_ll = cross_val_score(lambda: LogisticRegressionHead(l2=1e-3), X, y, folds=3, scoring="neg_log_loss")
    assert good.shape == (3,) and np.all(good > 0.85)
    assert good_ll.mean() > bad.mean() + 0.2
    Xm, Ym = make_multilabel(n=150, d=7)
    assert cross_val_score(lambda: SigmoidHead(), Xm, Ym, folds=3).mean() > 0.9


def test_cross_val_score_with_views_fits_every_view_and_averages_them():
    X, y = make_blobs(n=240, d=6, c=3, sep=1.0, seed=16)
    one = cross_val_score(lambda: LogisticRegressionHead(l2=1e-2), X, y)
    # two identical views: the same optimum (duplicated rows weigh the same), the same predictions
    np.testing.assert_allclose(
        cross_val_score(lambda: LogisticRegressionHead(l2=1e-2), np.stack([X, X]), y), one
    )
    # a second view that is pure noise changes the score, so the views really are used
    noise = np.random.default_rng(0).normal(size=X.shape) * X.std(axis=0) * 5
    assert (
        cross_val_score(lambda: LogisticRegressionHead(l2=1e-2), np.stack([X, noise]), y).mean() < one.mean()
    )
    with pytest.raises(ValueError, match="samples"):
        cross_val_score(lambda: LogisticRegressionHead(), np.stack([X, X]), y[:-1])


def test_usable_folds_is_bounded_by_the_smallest_class():
    assert usable_folds([0] * 10 + [1] * 2, 5) == 2
    assert usable_folds([0] * 10 + [1] * 10, 3) == 3
    assert usable_folds([0] * 10 + [1], 3) == 1


def test_staged_search_walks_stages_from_the_best_so_far():
    calls = []

    def score(params):
        calls.append(dict(params))
        return -abs(params["a"] - 2) + (0.5 if params["view"] == "flip" else 0.0)

    result = staged_search(
        [[{"a": 1}, {"a": 2}, {"a": 3}], [{"view": "plain"}, {"view": "flip"}]],
        score,
        start={"view": "plain"},
    )
    assert result.best == {"view": "flip", "a": 2} and result.best_score == 0.5 and result.complete
    # the second stage starts from a=2; {"a": 2, "view": "plain"} was already tried and is not tried again
    assert calls[3:] == [{"view": "flip", "a": 2}] and len(result.trials) == 4


def test_staged_search_ties_keep_the_first_and_a_passed_deadline_stops_after_one_trial():
    tie = staged_search([[{"a": 1}, {"a": 2}]], lambda p: 1.0)
    assert tie.best == {"a": 1}
    late = staged_search([[{"a": 1}, {"a": 2}]], lambda p: p["a"], deadline=0.0)
    assert late.best == {"a": 1} and len(late.trials) == 1 and not late.complete


def test_a_feature_that_barely_varied_in_training_cannot_dominate_a_new_input():
    X, y = make_blobs(n=200, d=6, c=3, sep=3, seed=17)
    X = np.hstack(
        [X / X.std(axis=0), np.full((len(X), 1), 0.5) + 1e-4 * np.random.default_rng(0).normal(size=(200, 1))]
    )
    head = LogisticRegressionHead().fit(X, y)
    assert head.scale_[-1] >= 0.1 * np.median(head.scale_)
    shifted = X[:5].copy()
    shifted[:, -1] += 1.0  # a shift of about one typical standard deviation, not of 10,000 of its own
    np.testing.assert_array_equal(head.predict(shifted), head.predict(X[:5]))
