"""Text classification: the graph tokenizes as training does, the exported model predicts as the app."""

from __future__ import annotations

import hashlib

import numpy as np
import onnxruntime as ort
import pytest

from modeldesk.deploy import Predictor, load_artifact
from modeldesk.deploy.inputs import InputError, input_for
from modeldesk.errors import UserError
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.tasks import get_trainer
from modeldesk.trainers.templates import get_template
from modeldesk.trainers.text.features import (
    ALPHABETIC_BRANCHES,
    CJK_BRANCHES,
    CSR,
    TfidfVocabulary,
    choose_branches,
)
from modeldesk.trainers.text.graph import build_text_graph, graph_probabilities
from modeldesk.trainers.text.head import SparseLogisticRegression

EN = {
    "spam": [
        "WIN a FREE prize now, call 0800 123 456",
        "Free entry: text WIN to 80086 to claim £1000",
        "URGENT! You have won a cash prize, claim now",
        "Congratulations, free ringtone, reply YES",
        "Claim your FREE holiday voucher now, txt STOP to end",
        "You won! Call now to collect your prize",
        "Cash prize waiting: call 09061 now",
        "FREE msg: your mobile won a bonus, claim today",
    ],
    "ham": [
        "Are we still meeting for lunch tomorrow?",
        "I'll be home late tonight, don't wait up",
        "Can you pick up some milk on the way?",
        "Thanks for dinner yesterday, it was lovely",
        "Sorry, running late, see you at the station",
        "Did you finish the report for Monday?",
        "Happy birthday! Hope you have a great day",
        "Let's watch the film at my place on Friday",
    ],
}
ZH = {
    "好评": [
        "味道很好，送餐很快",
        "非常好吃，下次还点",
        "服务态度好，菜很新鲜",
        "分量足，味道棒",
        "送得很快，还很热",
        "好吃不贵，推荐",
        "包装精美，味道不错",
        "very 好吃，五星",
    ],
    "差评": [
        "太慢了，等了两个小时",
        "菜都凉了，很难吃",
        "送错了，态度很差",
        "味道太咸，不会再点",
        "分量太少，不值这个价",
        "难吃，退款",
        "送餐员态度恶劣",
        "等了很久，饭都凉了",
    ],
}
ODD = [
    "ÉCOLE Ünïcode naïve",
    "tabs\tand\nnew lines",
    "emoji 😀 here",
    "ideographic\u3000space",
    "control\x01char",
    "",
    "   ",
    "ΑΒΓ Привет",
    "mixed 中文 and English",
]


def samples_of(data: dict) -> list[LabeledSample]:
    out = []
    for label, texts in data.items():
        for i, text in enumerate(texts):
            split = "test" if i % 4 == 3 else "val" if i % 4 == 2 else "train"
            out.append(LabeledSample(hashlib.sha256(text.encode()).hexdigest(), text, label, split))
    return out


@pytest.mark.parametrize("branches", [ALPHABETIC_BRANCHES, CJK_BRANCHES], ids=["alphabetic", "cjk"])
def test_the_graph_counts_the_same_ngrams_as_training(branches):
    texts = [t for group in (*EN.values(), *ZH.values()) for t in group] + ODD
    vocabulary = TfidfVocabulary(branches, min_df=1).fit(texts)
    X = vocabulary.transform(texts)
    head = SparseLogisticRegression(C=1.0)
    head.coef_ = np.random.default_rng(0).normal(size=(X.shape[1], 3))
    head.intercept_, head.dense_coef_, head.n_classes_ = np.zeros(3), None, 3
    expected = head.predict_proba(X)
    got = graph_probabilities(build_text_graph(vocabulary, head), texts)
    assert np.max(np.abs(got - expected)) < 1e-5


def test_script_picks_the_tokenization():
    assert choose_branches(ZH["好评"])[0] == "cjk"
    assert choose_branches(EN["ham"])[0] == "alphabetic"


def test_csr_products_match_dense():
    rng = np.random.default_rng(1)
    dense = rng.random((7, 5)) * (rng.random((7, 5)) < 0.4)
    dense[3] = 0  # an empty row
    rows, cols = np.nonzero(dense)
    X = CSR(dense[rows, cols], cols, np.concatenate([[0], np.cumsum(np.count_nonzero(dense, axis=1))]), 5)
    W, G = rng.random((5, 3)), rng.random((7, 3))
    assert np.allclose(X.dot(W), dense @ W) and np.allclose(X.tdot(G), dense.T @ G)
    assert np.allclose(X.take([4, 3, 0]).toarray(), dense[[4, 3, 0]])


def test_sparse_logistic_regression_matches_scikit_learn():
    LogisticRegression = pytest.importorskip("sklearn.linear_model").LogisticRegression
    rng = np.random.default_rng(2)
    dense = rng.random((60, 8)) * (rng.random((60, 8)) < 0.5)
    y = (dense[:, 0] + dense[:, 1] > dense[:, 2] + 0.3).astype(int) + (dense[:, 3] > 0.5)
    rows, cols = np.nonzero(dense)
    X = CSR(dense[rows, cols], cols, np.concatenate([[0], np.cumsum(np.count_nonzero(dense, axis=1))]), 8)
    ours = SparseLogisticRegression(C=3.0, tol=1e-8, max_iter=500).fit(X, y).predict_proba(X)
    reference = LogisticRegression(C=3.0, tol=1e-10, max_iter=5000).fit(dense, y).predict_proba(dense)
    assert np.max(np.abs(ours - reference)) < 1e-3


@pytest.mark.parametrize("data", [EN, ZH], ids=["english", "chinese"])
def test_trained_model_predicts_the_same_in_the_app_the_predictor_and_bare_onnxruntime(data, tmp_path):
    samples = samples_of(data)
    result = get_trainer("text-classification").train(
        samples, "text-classification/fast", tmp_path / "m", tmp_path / "cache"
    )
    artifact = load_artifact(result.artifact_dir)
    assert artifact.input_kind == "text" and artifact.labels == sorted(data)
    assert result.metrics["export_max_abs_diff"] < 1e-4
    texts = [s.source for s in samples]
    app = Predictor(artifact).predict(texts)
    bare = ort.InferenceSession(str(artifact.model_path), providers=["CPUExecutionProvider"])
    raw = bare.run(None, {"text": np.array(texts, dtype=object)})[0]
    assert [p["label"] for p in app] == [artifact.labels[i] for i in raw.argmax(axis=1)]
    assert np.allclose([[p["scores"][label] for label in artifact.labels] for p in app], raw, atol=1e-6)
    train_accuracy = np.mean([p["label"] == s.label for p, s in zip(app, samples) if s.split == "train"])
    assert train_accuracy == 1.0
    mistakes = result.metrics["mistakes"]
    assert all("text" in m and "scores" in m for m in mistakes)


def test_text_input_refuses_what_is_not_text():
    text_input = input_for({"preprocessing": {"kind": "text", "max_chars": 50}, "labels": ["a", "b"]})
    with pytest.raises(InputError, match="empty"):
        text_input.load("  \n ")
    with pytest.raises(InputError, match="UTF-8"):
        text_input.load(b"\xff\xfe bad")
    with pytest.raises(InputError, match="surrogate"):
        text_input.load("bad \ud800 text")
    assert text_input.load("x" * 1_000_000) == "x" * 50
    assert text_input.load("  two\u00a0 spaces \n") == "two spaces"


def test_training_refuses_one_class_and_says_so():
    samples = samples_of({"only": EN["ham"]})
    with pytest.raises(UserError, match="one class"):
        get_trainer("text-classification").check(samples)


def test_templates_are_registered_with_budgets():
    for name in ("text-classification/fast", "text-classification/accurate"):
        template = get_template(name)
        assert template.task == "text-classification" and template.time_budget_s > 0
        assert template.to_dict()["name"] == name
