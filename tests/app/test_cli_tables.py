"""Tables through the command line (``--target``, evaluate's keys) and the Workspace's table calls."""

from __future__ import annotations

import numpy as np
import pytest


def _table(path, n=80, seed=0, regression=False):
    rng = np.random.default_rng(seed)
    lines = ["id,size,colour,weight,kind"]
    for i in range(n):
        size, colour = rng.uniform(0, 10), ["red", "green", "blue"][i % 3]
        weight = 10 * size + {"red": 0, "green": 20, "blue": 40}[colour] + rng.normal(0, 1)
        kind = "big" if size > 5 else "small"
        lines.append(f"{i + 1},{size:.3f},{colour},{'' if i == 7 else f'{weight:.2f}'},{kind}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_classification_and_regression_through_the_command_line(cli, tmp_path):
    table, outside = _table(tmp_path / "t.csv"), _table(tmp_path / "outside.csv", n=40, seed=5)
    assert cli("project", "create", "kinds", "--task", "tabular-classification", "--target", "kind")[0] == 0
    code, imported = cli("import", "kinds", table)
    assert code == 0 and imported["added"] == 80
    code, trained = cli("train", "kinds", "--template", "tabular-classification/fast")
    assert code == 0, trained
    code, evaluated = cli("evaluate", trained["model"], outside)
    assert (
        code == 0
        and evaluated["accuracy"] >= 0.85
        and {"macro_f1", "per_class", "confusion"} <= set(evaluated)
    )

    assert cli("project", "create", "weights", "--task", "tabular-regression")[0] == 0
    code, imported = cli("import", "weights", table)  # no target yet: the rows import unlabeled
    assert code == 0 and cli("stats", "weights")[1]["labeled"] == 0
    code, trained = cli("train", "weights", "--template", "tabular-regression/fast", "--target", "weight")
    assert code == 0, trained
    assert {"mae", "rmse", "r2"} <= set(trained["metrics"]) and trained["metrics"]["r2"] > 0.9
    code, evaluated = cli("evaluate", trained["model"], outside)
    assert code == 0 and evaluated["r2"] > 0.9 and evaluated["mae"] < 5 and evaluated["n"] == 39

    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"size": 3, "colour": "blue"}\n', encoding="utf-8")
    code, out = cli("predict", trained["model"], rows)
    assert code == 0 and out["predictions"][0]["value"] == pytest.approx(70, abs=8)
    code, out = cli("predict", trained["model"], outside)  # a table: one answer a row
    assert code == 0 and len(out["predictions"]) == 40 and out["predictions"][0]["file"] == "outside.csv:2"

    code, text = cli("train", "weights", "--template", "tabular-regression/fast", "--target", "height")
    assert code == 1 and "no column 'height'" in text and len(text.strip().splitlines()) == 1


def test_the_target_can_change_and_the_old_one_goes_back_into_the_rows(tmp_path):
    from modeldesk.app.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("t", "tabular-classification", target_column="kind")
        ws.import_data("t", _table(tmp_path / "t.csv", n=30))
        columns = ws.table_columns("t")
        assert [(c["name"], c["type"], c["target"]) for c in columns] == [
            ("id", "identifier", False),
            ("size", "number", False),
            ("colour", "category", False),
            ("weight", "number", False),
            ("kind", "category", True),
        ]
        first = ws.table_rows("t", limit=1)[0]
        ws.annotate(first["id"], "label", "huge")  # editing the target cell is a label change
        assert ws.set_table_target("t", "colour") == {"target": "colour", "labeled": 30, "unlabeled": 0}
        row = ws.table_rows("t", limit=1)[0]
        assert row["target"] == first["cells"]["colour"] and row["cells"]["kind"] == "huge"
        assert "colour" not in row["cells"]
        ws.set_column_type("t", "size", "category")
        assert next(c for c in ws.table_columns("t") if c["name"] == "size")["type"] == "category"
        from modeldesk.app.tables import train_options

        assert train_options(ws.store, ws.project("t")) == {
            "target_column": "colour",
            "column_types": {"size": "category"},
        }
    finally:
        ws.close()
