"""The charts: what they hold and say (accessible descriptions), and their input checks."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt

from modeldesk.ui.charts import BarChart, ConfusionMatrixView, _nice_ticks
from modeldesk.ui.training_chart import TrainingChart


def test_training_chart_keeps_loss_and_accuracy_series(qtbot):
    chart = TrainingChart()
    qtbot.addWidget(chart)
    assert not chart.add_metrics({"epoch": 1, "note": "text", "flag": True})
    assert chart.add_metrics({"epoch": 1, "loss": 0.9, "val_accuracy": 0.5})
    assert chart.add_metrics({"epoch": 2, "loss": 0.4, "val_accuracy": 0.8})
    assert chart.add_metrics({"epoch": 2, "loss": 0.3})  # same x: replaces the point
    assert chart.series["loss"] == [(1.0, 0.9), (2.0, 0.3)]
    assert chart.series["val_accuracy"] == [(1.0, 0.5), (2.0, 0.8)]
    assert chart.x_name == "epoch"
    assert "Validation accuracy 0.8" in chart.accessibleDescription()
    chart.resize(500, 260)
    chart.grab()  # paints without error
    chart.clear()
    assert chart.series == {}


def test_confusion_matrix_cells_and_clicks(qtbot):
    view = ConfusionMatrixView()
    qtbot.addWidget(view)
    with pytest.raises(ValueError):
        view.set_data(["a", "b"], [[1, 2]])
    view.set_data(["cat", "dog"], [[8, 2], [1, 9]])
    view.resize(400, 360)
    assert view.accessibleDescription() == "cat: 8 of 10 right; dog: 9 of 10 right"
    left, top, side, _ = view._layout()
    assert view.cell_at(QPointF(left + side * 1.5, top + side * 0.5)) == (0, 1)
    assert view.cell_at(QPointF(1.0, 1.0)) is None
    with qtbot.waitSignal(view.cell_clicked) as clicked:
        qtbot.mouseClick(view, Qt.LeftButton, pos=QPointF(left + side * 0.5, top + side * 1.5).toPoint())
    assert clicked.args == ["dog", "cat"]
    view.grab()


def test_bars_check_their_rows(qtbot):
    bars = BarChart(("Precision", "Recall"))
    qtbot.addWidget(bars)
    with pytest.raises(ValueError):
        bars.set_rows([("a", (0.5,))])
    bars.set_rows([("a", (0.5, 1.0)), ("b", [0.25, 0.0])])
    assert bars.rows == [("a", (0.5, 1.0)), ("b", (0.25, 0.0))]
    assert bars.accessibleDescription() == "a: Precision 50%, Recall 100%; b: Precision 25%, Recall 0%"
    assert bars.sizeHint().height() > BarChart(("Precision", "Recall")).sizeHint().height() - 1
    bars.grab()


def test_nice_ticks():
    assert _nice_ticks(0, 1) == [0, 0.25, 0.5, 0.75, 1.0]
    assert _nice_ticks(0.7, 1.0) == [0.7, 0.8, 0.9, 1.0]
    assert _nice_ticks(0, 2.3)[0] == 0 and _nice_ticks(0, 2.3)[-1] <= 2.3


def test_the_run_view_shows_a_chart_only_once_a_curve_moves(qtbot, ws):
    from modeldesk.ui.pages.train.run_view import RunView

    view = RunView(ws)
    qtbot.addWidget(view)
    view.show()
    view.show_events([{"metrics": {"accuracy": 0.9}}])
    assert not view.chart_card.isVisible() and not view.chart.moves  # one dot: no chart
    trials = [0.71, 0.83, 0.78, 0.9]  # the search's settings, each scored: the curve goes up and down
    view.show_events(
        [
            {"metrics": {"cv_accuracy": max(trials[: i + 1]), "trial_accuracy": t}}
            for i, t in enumerate(trials)
        ]
    )
    assert view.chart_card.isVisible() and view.chart.moves
    assert [y for _, y in view.chart.series["trial_accuracy"]] == trials


def test_the_search_reports_each_trials_own_score():
    from modeldesk.trainers.heads import staged_search

    seen = []
    staged_search(
        [[{"a": 1}, {"a": 2}, {"a": 3}]],
        lambda p: {1: 0.5, 2: 0.9, 3: 0.7}[p["a"]],
        progress=lambda done, total, best, value: seen.append((best, value)),
    )
    assert seen == [(0.5, 0.5), (0.9, 0.9), (0.9, 0.7)]


@pytest.mark.parametrize("choice", ["light", "dark"])
def test_a_single_mix_up_reads_red_in_both_themes(qtbot, choice):
    from PySide6.QtGui import QColor
    from PySide6.QtWidgets import QApplication

    from modeldesk.ui import theme

    previous = "dark" if theme.current().dark else "light"
    theme.apply_theme(QApplication.instance(), choice)
    try:
        view = ConfusionMatrixView()
        qtbot.addWidget(view)
        view.set_data(["cat", "dog"], [[99, 1], [0, 50]])  # one mistake in a hundred
        view.resize(400, 360)
        image = view.grab().toImage()
        left, top, side, _ = view._layout()
        ratio = image.width() / view.width()
        inside = QPointF(left + side + 5, top + 5)  # inside the (cat, dog) cell, away from its number
        cell = QColor(image.pixel(int(inside.x() * ratio), int(inside.y() * ratio)))
        bad, base = QColor(theme.current().bad), QColor(theme.current().base)
        # at least ~40% of the way from the background to the theme's red
        assert abs(cell.red() - base.red()) >= 0.4 * abs(bad.red() - base.red()), (cell.name(), base.name())
        assert cell.red() > cell.green() + 30 and cell.red() > cell.blue() + 30, cell.name()
    finally:
        theme.apply_theme(QApplication.instance(), previous)


def test_a_narrow_chart_wraps_its_empty_text_instead_of_cutting_it(qtbot):
    chart = BarChart(("Score",), empty_text="The model's answer for your photo appears here.")
    qtbot.addWidget(chart)
    chart.resize(180, 160)
    image = chart.grab().toImage()
    background = image.pixel(image.width() // 2, 2)
    edges = [
        image.pixel(x, y)
        for y in range(image.height())
        for x in (*range(4), *range(image.width() - 4, image.width()))
    ]
    assert all(pixel == background for pixel in edges)  # no letters cut at either side
    assert any(image.pixel(x, y) != background for y in range(image.height()) for x in range(image.width()))
