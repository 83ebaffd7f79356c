"""A text project through the command line: import a CSV, train, evaluate, predict texts and files."""

from __future__ import annotations

import csv

import pytest

from modeldesk.app.sample_data import make_text_table


@pytest.fixture
def reviews(tmp_path):
    return make_text_table(tmp_path / "reviews.csv", per_class=24, seed=1)


def test_text_project_trains_and_predicts_texts_and_text_files(cli, tmp_path, reviews):
    assert cli("project", "create", "reviews", "--task", "text-classification")[0] == 0
    code, imported = cli("import", "reviews", reviews)
    assert code == 0 and imported["added"] == 72 and not imported["failed"]
    code, trained = cli("train", "reviews", "--template", "text-classification/fast")
    assert code == 0, trained
    assert trained["metrics"]["accuracy"] >= 0.8
    model = trained["model"]

    code, out = cli("predict", model, "--text", "the soup was cold and late", "--text", "快递很快，包装很好")
    assert code == 0 and [p["file"] for p in out["predictions"]] == ["text 1", "text 2"]
    assert {"label", "score", "scores", "text"} <= set(out["predictions"][0])

    lines = tmp_path / "lines.txt"
    lines.write_text("great fresh tasty food\n\n\nterrible slow delivery, cold food\n", encoding="utf-8")
    code, out = cli("predict", model, lines)
    assert code == 0 and [p["file"] for p in out["predictions"]] == ["lines.txt:1", "lines.txt:4"]

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xe9 latin-1\n")
    code, text = cli("predict", model, bad)
    assert code == 1 and "bad.txt" in text and "UTF-8" in text

    code, text = cli("predict", model, "--text", "   ")
    assert code == 1 and "empty" in text

    code, text = cli("predict", model)
    assert code == 1 and "--text" in text

    holdout = make_text_table(tmp_path / "holdout.csv", per_class=6, seed=2)
    code, evaluated = cli("evaluate", model, holdout)
    assert code == 0 and evaluated["accuracy"] >= 0.6 and len(evaluated["confusion"]) == 3


def test_made_text_table_has_a_label_column(tmp_path):
    path = make_text_table(tmp_path / "t.csv", per_class=2, seed=0)
    with path.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6 and {r["label"] for r in rows} == {"praise", "complaint", "question"}


def test_text_model_exports_as_onnx_and_a_bundle_and_says_why_compression_does_not_apply(cli, tmp_path):
    table = make_text_table(tmp_path / "t.csv", per_class=12, seed=3)
    cli("project", "create", "t", "--task", "text-classification")
    cli("import", "t", table)
    code, trained = cli("train", "t", "--template", "text-classification/fast")
    assert code == 0, trained
    code, exported = cli("export", trained["model"], tmp_path / "out")
    assert code == 0 and exported["size_bytes"] > 0
    code, bundled = cli("export", trained["model"], tmp_path / "bundle", "--bundle")
    assert code == 0 and (tmp_path / "bundle" / "modeldesk_server" / "text_input.py").is_file()
    code, text = cli("export", trained["model"], tmp_path / "small", "--compress")
    assert code == 1 and "nothing to gain" in text
