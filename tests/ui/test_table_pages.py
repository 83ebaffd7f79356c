"""Table projects on the pages: the Data page's table (rows, sort, filter, a target cell edited is a
label change, a column type corrected), the Label page's table with the model's suggestion beside the
target, and the Evaluate page's figures of a regression model."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from modeldesk.app.workspace import Workspace
from modeldesk.ui.pages.data_page import DataPage
from modeldesk.ui.pages.evaluate_page import EvaluatePage
from modeldesk.ui.pages.label.page import LabelPage


def write_table(path, n=60, seed=0):
    """``id,size,colour,weight,kind``: weight is a number from size and colour, kind is big or small."""
    rng = np.random.default_rng(seed)
    lines = ["id,size,colour,weight,kind"]
    for i in range(n):
        size, colour = rng.uniform(0, 10), ["red", "green", "blue"][i % 3]
        weight = 10 * size + {"red": 0, "green": 20, "blue": 40}[colour] + rng.normal(0, 1)
        lines.append(f"{i + 1},{size:.3f},{colour},{weight:.2f},{'big' if size > 5 else 'small'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """'kinds' predicts the kind (classes), 'weights' the weight (a number); each has a fast model."""
    root = tmp_path_factory.mktemp("tables")
    ws = Workspace(root / "ws")
    table = write_table(root / "t.csv")
    ws.create_project("kinds", "tabular-classification", target_column="kind")
    ws.import_data("kinds", table)
    ws.create_project("weights", "tabular-regression", target_column="weight")
    ws.import_data("weights", table)
    models = {
        "kinds": ws.train("kinds", "tabular-classification/fast")["model"],
        "weights": ws.train("weights", "tabular-regression/fast")["model"],
    }
    yield ws, models
    ws.jobs.close()
    ws.close()


@pytest.fixture
def fresh(tmp_path):
    """An untrained workspace with the table in 'kinds' (labels may be changed freely)."""
    ws = Workspace(tmp_path / "ws")
    ws.create_project("kinds", "tabular-classification", target_column="kind")
    ws.import_data("kinds", write_table(tmp_path / "t.csv"))
    yield ws
    ws.close()


def _table_of(qtbot, page, rows: int):
    table = lambda: getattr(page, "table", None)  # noqa: E731 (made on the first show)
    qtbot.waitUntil(lambda: table() is not None and table().model.rowCount() == rows, timeout=20_000)
    return page.table


def _column(model, name: str) -> int:
    return next(i for i, c in enumerate(model.columns) if c["name"] == name)


def test_data_page_shows_the_rows_sorts_and_filters(qtbot, open_page, fresh):
    page = open_page(DataPage, fresh)
    page.set_project("kinds")
    table = _table_of(qtbot, page, 60)
    assert page.gallery_stack.currentWidget() is table
    model = table.model
    size = _column(model, "size")
    assert "number" in model.headerData(size, Qt.Horizontal)
    assert "to predict" in model.headerData(model.target_column, Qt.Horizontal)
    stored = {r["id"]: r for r in fresh.table_rows("kinds", limit=None)}
    first = model.row_at(0)
    assert model.index(0, size).data() == str(stored[first["id"]]["cells"]["size"])

    table.view.horizontalHeader().sectionClicked.emit(size)  # a click on the title sorts
    table.view.sortByColumn(size, Qt.AscendingOrder)
    sizes = [float(model.index(i, size).data()) for i in range(model.rowCount())]
    assert sizes == sorted(sizes) and sizes != [float(r["cells"]["size"]) for r in stored.values()]
    table.view.sortByColumn(size, Qt.DescendingOrder)
    assert float(model.index(0, size).data()) == max(sizes)

    table.filter_box.setText("green")
    qtbot.waitUntil(lambda: model.rowCount() == 20, timeout=5000)
    assert all(model.row_at(i)["cells"]["colour"] == "green" for i in range(20))


def test_editing_a_target_cell_changes_the_stored_label(qtbot, open_page, fresh):
    page = open_page(DataPage, fresh)
    page.set_project("kinds")
    model = _table_of(qtbot, page, 60).model
    row = model.row_at(3)
    new = "small" if row["target"] == "big" else "big"
    assert model.setData(model.index(3, model.target_column), new)
    qtbot.waitUntil(
        lambda: {r["id"]: r["target"] for r in fresh.table_rows("kinds", limit=None)}[row["id"]] == new,
        timeout=10_000,
    )
    assert not model.setData(model.index(3, _column(model, "size")), "3")  # only the target is editable


def test_a_corrected_column_type_is_stored_and_shown(qtbot, open_page, fresh):
    page = open_page(DataPage, fresh)
    page.set_project("kinds")
    table = _table_of(qtbot, page, 60)
    table.set_type("size", "category")
    qtbot.waitUntil(lambda: "category" in table.model.headerData(_column(table.model, "size"), Qt.Horizontal))
    assert {c["name"]: c["type"] for c in fresh.table_columns("kinds")}["size"] == "category"


def test_regression_table_predicts_numbers_and_refuses_text(qtbot, open_page, trained):
    ws, _models = trained
    page = open_page(DataPage, ws)
    page.set_project("weights")
    model = _table_of(qtbot, page, 60).model
    assert model.numeric_target
    qtbot.waitUntil(lambda: page.side.isHidden())  # no class counts for values
    shown = [page.show_filter.itemData(i) for i in range(page.show_filter.count())]
    assert shown == ["all", "unlabeled"]  # values are not classes to pick
    assert not model.setData(model.index(0, model.target_column), "heavy")


def test_label_page_shows_the_suggestion_beside_the_target_and_takes_it(qtbot, open_page, trained, tmp_path):
    ws, models = trained
    ws.import_data("kinds", _unlabeled(tmp_path / "new.csv"))  # rows without a kind: the model suggests
    for sample_id in ws.sample_ids("kinds", unlabeled=True):  # the model's guesses, saved
        assert ws.suggest("kinds", models["kinds"], sample_id) is not None
    page = open_page(LabelPage, ws)
    page.set_project("kinds")
    table = _table_of(qtbot, page, 64)
    model = table.model
    suggestion = len(model.columns)
    assert model.headerData(suggestion, Qt.Horizontal) == "Model suggests"
    qtbot.waitUntil(lambda: bool(model.suggestions), timeout=10_000)
    position = next(i for i in range(model.rowCount()) if model.row_at(i)["target"] is None)
    row = model.row_at(position)
    label, _score = model.suggestions[row["id"]]
    assert model.index(position, suggestion).data().startswith(label)
    table.view.doubleClicked.emit(model.index(position, suggestion))  # double-click takes it
    qtbot.waitUntil(
        lambda: {r["id"]: r["target"] for r in ws.table_rows("kinds", limit=None)}[row["id"]] == label,
        timeout=10_000,
    )
    assert page.stack.currentWidget() is table and not page.order_box.isVisible()


def _unlabeled(path):
    rows = ["id,size,colour,kind", "101,9.5,red,", "102,0.5,blue,", "103,8.8,green,", "104,1.2,red,"]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_regression_evaluate_shows_the_reports_figures(qtbot, open_page, trained):
    ws, models = trained
    report = ws.model_report(models["weights"])
    page = open_page(EvaluatePage, ws)
    page.set_project("weights")
    qtbot.waitUntil(lambda: page.report is not None, timeout=20_000)
    hero, detail = page.hero.text(), page.hero_detail.text()
    mae = report["mae"]
    assert hero == f"Off by {mae:.3g} on average"
    assert f"{report['rmse']:.3g}" in detail and f"R² = {report['r2']:.2f}" in detail
    assert page.table.values_frame.isVisible() and not page.middle.isVisible()
    assert page.table.plot.points == [tuple(p) for p in report["points"]]
    worst = report["worst"][0]
    assert page.table.worst.item(0, 0).text() == f"{worst['true']:.3g}"
    assert "colour" in page.table.worst.item(0, 2).text()
    assert page.table.importance_frame.isVisible()
    top = report["importance"][0]["column"]
    assert page.table.importance.rows[0][0] == top and top in page.table.importance_words.text()


def test_classification_evaluate_keeps_the_matrix_and_adds_importance(qtbot, open_page, trained):
    ws, models = trained
    page = open_page(EvaluatePage, ws)
    page.set_project("kinds")
    qtbot.waitUntil(lambda: page.report is not None, timeout=20_000)
    assert page.middle.isVisible() and not page.table.values_frame.isVisible()
    assert page.table.importance_frame.isVisible()
    assert not page.mistakes_card.frame.isVisible()  # no list of rows: never "none wrong"
    top = page.table.importance.rows[0][1][0]
    assert top == pytest.approx(max(0.0, min(1.0, ws.model_report(models["kinds"])["importance"][0]["drop"])))


@pytest.mark.parametrize("project", ["kinds", "weights"])
def test_try_it_form_answers_as_the_model_does(qtbot, open_page, trained, project):
    from modeldesk.ui.pages.deploy import DeployPage

    ws, models = trained
    page = open_page(DeployPage, ws)
    page.set_project(project)
    form = page.try_it.row_form
    qtbot.waitUntil(lambda: bool(form.fields), timeout=20_000)
    assert form.isVisible() and not page.try_it.drop.isVisible()
    kinds = {name: kind for name, (kind, _field) in form.fields.items()}
    assert kinds["size"] == "number" and kinds["colour"] == "category"
    colours = form.fields["colour"][1]
    assert {colours.itemText(i) for i in range(colours.count())} >= {"red", "green", "blue"}
    form.fill({"size": 7.5, "colour": "blue"})
    assert form.row() == {"size": 7.5, "colour": "blue"}
    form.button.click()
    qtbot.waitUntil(lambda: page.last_prediction is not None, timeout=20_000)
    want = ws.predict_rows(models[project], [{"size": 7.5, "colour": "blue"}])[0]
    assert page.last_prediction == want
    if project == "weights":
        assert page.try_it.answer.text().startswith(f"{want['value']:.6g} ")
        assert page.try_it.scores.isHidden()
    else:
        assert page.try_it.answer.text().startswith(want["label"])


def test_a_classifiers_numeric_labels_are_classes(tmp_path):
    """0/1 (or any numbers) predicted by a classifier are classes to pick, not numbers to type."""
    ws = Workspace(tmp_path / "ws")
    table = write_table(tmp_path / "t.csv")
    try:
        for project, task in (("classes", "tabular-classification"), ("values", "tabular-regression")):
            ws.create_project(project, task, target_column="weight")
            ws.import_data(project, table)
        target = {
            p: [c for c in ws.table_columns(p) if c["target"]][0]["type"] for p in ("classes", "values")
        }
        assert target == {"classes": "category", "values": "number"}
    finally:
        ws.close()
