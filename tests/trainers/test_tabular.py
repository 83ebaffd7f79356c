"""The table trainers on rows the test makes: they learn, leave identifiers out, read text columns, and
the exported graph (fed as the service feeds it) answers as the training path did."""

from __future__ import annotations

import json

import numpy as np
import pytest

from modeldesk.deploy import Predictor, load_artifact
from modeldesk.errors import UserError
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.tabular.encoding import encode, fit_columns
from modeldesk.trainers.tabular.trainer import TabularClassificationTrainer, TabularRegressionTrainer

SPLITS = ["train"] * 7 + ["val", "test", "test"]


def _samples(rows, targets):
    return [
        LabeledSample(f"k{i}", json.dumps(row), None if t is None else str(t), SPLITS[i % len(SPLITS)])
        for i, (row, t) in enumerate(zip(rows, targets))
    ]


def _rows(n=120, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        rows.append(
            {
                "id": str(5000 + i),
                "size": None if i % 9 == 0 else round(float(rng.uniform(0, 10)), 3),
                "colour": ["red", "green", "blue"][i % 3],
                "note": ["a fine day", "rain all day long", "quiet evening"][int(rng.integers(0, 3))],
            }
        )
    return rows


def test_classification_learns_leaves_the_identifier_out_and_exports_the_same_answers(tmp_path):
    rows = _rows()
    targets = ["big" if (r["size"] or 5) + 4 * (r["colour"] == "blue") > 6 else "small" for r in rows]
    result = TabularClassificationTrainer().train(
        _samples(rows, targets), "tabular-classification/fast", tmp_path / "m", tmp_path / "c"
    )
    assert result.metrics["accuracy"] >= 0.85 and result.metrics["split"] == "test"
    assert (
        result.metrics["interval"]["low"] <= result.metrics["accuracy"] <= result.metrics["interval"]["high"]
    )
    assert any("'id' looks like an identifier" in w for w in result.warnings)
    card = load_artifact(result.artifact_dir).card
    assert [c["name"] for c in card["preprocessing"]["columns"]] == ["size", "colour", "note"]
    assert result.metrics["importance"][0]["column"] in ("size", "colour")
    assert result.metrics["export_max_abs_diff"] < 1e-4

    # the exported graph, fed as the service feeds it: missing cells, an unseen category, extra columns
    asked = [
        {"size": 9.0, "colour": "blue", "note": "a fine day"},
        {"size": "1.5", "colour": "red"},
        {"colour": "purple", "unknown column": 3},
    ]
    answers = Predictor(result.artifact_dir).predict(asked)
    assert [a["label"] for a in answers[:2]] == ["big", "small"]
    assert all(sum(a["scores"].values()) == pytest.approx(1.0, abs=1e-5) for a in answers)


def test_regression_predicts_numbers_with_intervals_and_the_graph_agrees(tmp_path):
    rows = _rows(150, seed=1)
    targets = [
        None if i == 3 else round(3 * (r["size"] or 5) + {"red": 0, "green": 4, "blue": 9}[r["colour"]], 3)
        for i, r in enumerate(rows)
    ]
    samples = [s for s in _samples(rows, targets) if s.target is not None]
    result = TabularRegressionTrainer().train(
        samples,
        "tabular-regression/fast",
        tmp_path / "m",
        tmp_path / "c",
        column_types={"note": "identifier"},
    )
    metrics = result.metrics
    assert metrics["r2"] > 0.9 and metrics["mae"] < 2.0
    assert metrics["interval"]["r2"]["low"] <= metrics["r2"] <= metrics["interval"]["r2"]["high"]
    card = load_artifact(result.artifact_dir).card
    assert card["target"] == "value" and "note" not in [c["name"] for c in card["preprocessing"]["columns"]]
    (answer,) = Predictor(result.artifact_dir).predict([{"size": 2, "colour": "green"}])
    assert answer["value"] == pytest.approx(3 * 2 + 4, abs=1.5) and answer["score"] is None


def test_a_text_column_is_read_as_words(tmp_path):
    rng = np.random.default_rng(2)
    words = {"pos": ["lovely", "great", "superb"], "neg": ["awful", "broken", "late"]}
    rows, targets = [], []
    for i in range(90):
        label = ["pos", "neg"][i % 2]
        filler = rng.choice(["the parcel", "my order", "this box", "delivery"])
        rows.append({"review": f"{filler} number {i} was {rng.choice(words[label])}", "shop": f"s{i % 4}"})
        targets.append(label)
    result = TabularClassificationTrainer().train(
        _samples(rows, targets), "tabular-classification/fast", tmp_path / "m", tmp_path / "c"
    )
    assert result.metrics["columns"]["review"] == "text" and result.metrics["accuracy"] == 1.0
    (answer,) = Predictor(result.artifact_dir).predict([{"review": "SUPERB, truly"}])
    assert answer["label"] == "pos"


def test_encoding_fills_missing_numbers_and_zeros_unseen_categories():
    codes = fit_columns(
        [{"a": 1, "c": "x"}, {"a": 3, "c": "y"}, {"a": None, "c": "x"}, {"a": 2, "c": "y"}],
        {"a": "number", "c": "category"},
    )
    X = encode(codes, [{"a": None, "c": "never"}, {"a": 2, "c": "x"}])
    # a: (fill 2 - mean 2) / std = 0, missing flag 1; c: one-hot over [x, y]
    assert X.tolist() == [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]


def test_a_regression_on_words_is_refused_in_one_sentence(tmp_path):
    rows = _rows(20)
    with pytest.raises(UserError, match="holds 'tall', which is not a number"):
        TabularRegressionTrainer().check(_samples(rows, ["tall"] * 20))


@pytest.mark.parametrize("regression", [False, True], ids=["classes", "values"])
def test_trees_and_a_blend_of_trees_and_linear_export_exactly(tmp_path, regression):
    from modeldesk.trainers.tabular.templates import TableTemplate

    rows = _rows(90, seed=3)
    trees = {
        "model": "trees",
        "learning_rate": 0.1,
        "num_leaves": 7,
        "min_child_samples": 5,
        "n_estimators": 40,
    }
    linear = {"model": "linear", "alpha": 1.0} if regression else {"model": "linear", "C": 1.0}
    task = "tabular-regression" if regression else "tabular-classification"
    if regression:
        targets = [round(2 * (r["size"] or 4) + (r["colour"] == "red") * 5, 2) for r in rows]
    else:
        targets = [
            r["colour"] if (r["size"] or 0) > 3 else "tiny" for r in rows
        ]  # three classes and one more
    trainer = TabularRegressionTrainer() if regression else TabularClassificationTrainer()
    for candidate in (trees, {"model": "blend", "parts": [trees, linear]}):
        template = TableTemplate(f"{task}/test", task, "a test", 60.0, candidates=(candidate,))
        out = tmp_path / candidate["model"]
        result = trainer.train(_samples(rows, targets), template, out, tmp_path / "c")
        assert result.metrics["export_max_abs_diff"] < 1e-3
        assert load_artifact(result.artifact_dir).card["head"]["kind"] == candidate["model"]
