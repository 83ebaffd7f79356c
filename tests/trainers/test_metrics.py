"""Metrics against hand-computed cases (and scikit-learn when it is installed)."""

import json

import numpy as np
import pytest

from modeldesk.trainers.metrics import (
    accuracy_interval,
    classification_report,
    most_confident_mistakes,
    multilabel_report,
)


def one_hot_scores(pred, c, confidence=None):
    """Scores whose argmax is ``pred``; ``confidence`` sets the winning probability per row."""
    n = len(pred)
    conf = np.full(n, 0.9) if confidence is None else np.asarray(confidence, float)
    proba = np.tile(((1 - conf) / (c - 1))[:, None], (1, c))
    proba[np.arange(n), pred] = conf
    return proba


# y_true = [0,0,0,1,1,2], predicted = [0,0,1,1,2,2]
Y_TRUE = [0, 0, 0, 1, 1, 2]
PRED = [0, 0, 1, 1, 2, 2]
LABELS = ["cat", "dog", "bird"]


def test_classification_report_hand_computed():
    r = classification_report(Y_TRUE, one_hot_scores(PRED, 3), LABELS)
    assert r["confusion"] == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    assert r["accuracy"] == pytest.approx(4 / 6)
    assert r["per_class"]["cat"] == pytest.approx(
        {"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3}
    )
    assert r["per_class"]["dog"] == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2})
    assert r["per_class"]["bird"] == pytest.approx(
        {"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "support": 1}
    )
    assert r["macro_f1"] == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)
    assert r["weighted_f1"] == pytest.approx((0.8 * 3 + 0.5 * 2 + 2 / 3) / 6)
    assert r["labels"] == LABELS and r["n"] == 6


def test_label_values_and_indices_give_the_same_report():
    by_index = classification_report(Y_TRUE, one_hot_scores(PRED, 3), LABELS)
    by_value = classification_report(np.array(LABELS)[Y_TRUE], one_hot_scores(PRED, 3), LABELS)
    assert by_index == by_value


def test_report_is_plain_json_even_from_numpy_inputs():
    labels = np.array([10, 20, 30])  # numpy ints as label names
    r = classification_report(
        np.array(Y_TRUE, dtype=np.int32), one_hot_scores(PRED, 3).astype(np.float32), labels
    )
    again = json.loads(json.dumps(r))
    assert again == r
    assert set(r["per_class"]) == {"10", "20", "30"} and r["labels"] == [10, 20, 30]
    assert all(type(v) is int for row in r["confusion"] for v in row)


def test_zero_division_and_absent_classes():
    # "fish" never occurs and is never predicted: it does not pull macro F1 down
    r = classification_report([0, 0, 1], one_hot_scores([0, 0, 0], 3), ["a", "b", "fish"])
    assert r["per_class"]["b"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert r["per_class"]["fish"]["support"] == 0
    assert r["macro_f1"] == pytest.approx((0.8 + 0.0) / 2)


def test_invalid_inputs_are_rejected_with_clear_messages():
    with pytest.raises(ValueError, match="shape"):
        classification_report([0, 1], np.ones((2, 3)) / 3, ["a", "b"])
    with pytest.raises(ValueError, match="outside"):
        classification_report([0, 5], np.ones((2, 2)) / 2, ["a", "b"])
    with pytest.raises(ValueError, match="not in labels"):
        classification_report(["a", "zebra"], np.ones((2, 2)) / 2, ["a", "b"])
    with pytest.raises(ValueError, match="unique"):
        classification_report([0, 1], np.ones((2, 2)) / 2, ["a", "a"])
    with pytest.raises(ValueError, match="no samples"):
        classification_report([], np.ones((0, 2)), ["a", "b"])


def test_most_confident_mistakes_orders_by_confidence_and_limits_k():
    conf = [0.99, 0.6, 0.95, 0.7, 0.8, 0.55]
    proba = one_hot_scores(PRED, 3, conf)
    keys = [f"img{i}.jpg" for i in range(6)]
    out = most_confident_mistakes(Y_TRUE, proba, keys, LABELS, k=12)
    # wrong rows: 2 (cat->dog, 0.95) and 4 (dog->bird, 0.8)
    assert out == [
        {"key": "img2.jpg", "true": "cat", "predicted": "dog", "score": pytest.approx(0.95)},
        {"key": "img4.jpg", "true": "dog", "predicted": "bird", "score": pytest.approx(0.8)},
    ]
    assert [m["key"] for m in most_confident_mistakes(Y_TRUE, proba, keys, LABELS, k=1)] == ["img2.jpg"]
    assert most_confident_mistakes(Y_TRUE, one_hot_scores(Y_TRUE, 3), keys, LABELS) == []
    json.dumps(out)
    with pytest.raises(ValueError, match="keys"):
        most_confident_mistakes(Y_TRUE, proba, keys[:-1], LABELS)


def test_multilabel_report_hand_computed():
    Y = np.array([[1, 0], [1, 1], [0, 1]])
    proba = np.array([[0.9, 0.2], [0.3, 0.7], [0.5, 0.6]])  # predicted: [1,0] [0,1] [1,1]
    r = multilabel_report(Y, proba, ["red", "round"])
    assert r["per_label"]["red"] == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2})
    assert r["per_label"]["round"] == pytest.approx(
        {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2}
    )
    assert r["micro_f1"] == pytest.approx(0.75)
    assert r["macro_f1"] == pytest.approx(0.75)
    assert r["exact_match"] == pytest.approx(1 / 3)
    assert r["hamming_accuracy"] == pytest.approx(4 / 6)
    assert r["n"] == 3 and r["threshold"] == 0.5
    json.dumps(r)
    # per-label thresholds: a higher bar for "red" removes its false positive at 0.5
    r2 = multilabel_report(Y, proba, ["red", "round"], threshold=[0.6, 0.5])
    assert r2["per_label"]["red"]["precision"] == 1.0 and r2["threshold"] == [0.6, 0.5]
    with pytest.raises(ValueError, match="0 and 1"):
        multilabel_report(Y * 2, proba, ["red", "round"])


def test_against_scikit_learn_on_random_data():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 300)
    proba = rng.dirichlet(np.ones(5), 300)
    proba[np.arange(300), y] += rng.random(300) * 0.5  # better than chance
    pred = proba.argmax(1)
    r = classification_report(y, proba, list("abcde"))
    assert r["accuracy"] == pytest.approx(sk.accuracy_score(y, pred))
    assert r["macro_f1"] == pytest.approx(sk.f1_score(y, pred, average="macro"))
    assert r["weighted_f1"] == pytest.approx(sk.f1_score(y, pred, average="weighted"))
    assert r["confusion"] == sk.confusion_matrix(y, pred, labels=range(5)).tolist()
    p, rc, f, s = sk.precision_recall_fscore_support(y, pred, labels=range(5), zero_division=0)
    for i, lab in enumerate("abcde"):
        assert r["per_class"][lab] == pytest.approx(
            {"precision": p[i], "recall": rc[i], "f1": f[i], "support": s[i]}
        )
    Y = (rng.random((200, 4)) < 0.3).astype(int)
    P = np.clip(Y * 0.6 + rng.random((200, 4)) * 0.5, 0, 1)
    m = multilabel_report(Y, P, list("wxyz"))
    assert m["micro_f1"] == pytest.approx(sk.f1_score(Y, P >= 0.5, average="micro"))
    assert m["macro_f1"] == pytest.approx(sk.f1_score(Y, P >= 0.5, average="macro", zero_division=0))
    assert m["exact_match"] == pytest.approx(sk.accuracy_score(Y, P >= 0.5))


def test_accuracy_interval_is_wilsons_and_covers_the_truth_nine_times_in_ten():
    r = accuracy_interval(95, 100)
    # Wilson's score interval for 95/100 at 90% (z = 1.6449), computed by hand
    assert (r["low"], r["high"]) == (pytest.approx(0.90084, abs=1e-4), pytest.approx(0.97545, abs=1e-4))
    assert r["text"] == "90 to 98 out of 100" and r["too_wide"] and r["level"] == 0.9
    assert accuracy_interval(20, 20)["high"] == 1.0 and accuracy_interval(0, 20)["low"] == 0.0
    assert not accuracy_interval(970, 1000)["too_wide"]
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(2000):
        r = accuracy_interval(int(rng.binomial(200, 0.93)), 200)
        hits += r["low"] <= 0.93 <= r["high"]
    assert 0.87 <= hits / 2000 <= 0.93
    with pytest.raises(ValueError):
        accuracy_interval(5, 0)
