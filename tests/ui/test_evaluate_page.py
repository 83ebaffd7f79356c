"""The Evaluate page on a really trained model: headline, matrix, per-class bars, mistakes, report."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QDesktopServices

from modeldesk.app.workspace import Workspace
from modeldesk.ui.pages.evaluate_page import EvaluatePage
from modeldesk.ui.wording import headline, most_confused, per_class_rows


@pytest.fixture(scope="module")
def trained(tmp_path_factory, make_images):
    """A workspace whose project 'colors' has two models trained by the real trainer."""
    root = tmp_path_factory.mktemp("evaluate")
    ws = Workspace(root / "ws")
    ws.create_project("colors", "image-classification")
    ws.import_data("colors", make_images(root / "data", {"red": 8, "green": 8, "blue": 8}, size=64))
    first = ws.train("colors", "image-classification/fast")["model"]
    second = ws.train("colors", "image-classification/fast")["model"]
    yield ws, first, second
    ws.jobs.close()
    ws.close()


def test_plain_words():
    assert headline(0.97) == "Right 97 times out of 100"
    assert headline(0.9, n=30) == "Right 27 times out of 30"
    assert headline(None) == "No accuracy measured yet"
    report = {
        "labels": ["a", "b", "c"],
        "confusion": [[5, 2, 0], [1, 6, 0], [0, 3, 4]],
        "per_class": {"a": {"precision": 0.8, "recall": 0.7}, "b": {"precision": 0.5, "recall": 0.9}},
    }
    assert most_confused(report) == ("c", "b", 3)
    assert per_class_rows(report) == [("a", (0.8, 0.7)), ("b", (0.5, 0.9))]
    assert most_confused({"labels": ["a", "b"], "confusion": [[3, 0], [0, 2]]}) is None


def test_shows_the_newest_model_with_a_picker(qtbot, open_page, trained):
    ws, first, second = trained
    page = open_page(EvaluatePage, ws)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.report is not None, timeout=10000)
    assert page.model_id == second
    assert page.picker.isVisible() and page.picker.count() == 2
    report = ws.model_report(second)
    n = sum(map(sum, report["confusion"]))
    assert page.hero.text() == headline(report["accuracy"], n)
    assert page.matrix.labels == report["labels"] == ["blue", "green", "red"]
    assert page.matrix.matrix == report["confusion"]
    assert [label for label, _ in page.bars.rows] == ["blue", "green", "red"]
    if "mistakes" in report:
        assert page.mistakes.count() == len(report["mistakes"])
    else:  # never claim "no mistakes" when the evaluation simply does not list them
        assert "does not list" in page.no_mistakes.text()
    page.picker.setCurrentIndex(page.picker.findData(first))
    page.picker.activated.emit(page.picker.findData(first))  # what a user's choice sends
    qtbot.waitUntil(lambda: page.model_id == first and page.report is not None, timeout=10000)


def test_no_model_points_to_training(qtbot, ws, open_page):
    ws.create_project("empty", "image-classification")
    page = open_page(EvaluatePage, ws)
    page.set_project("empty")
    qtbot.waitUntil(lambda: page.loaded, timeout=10000)
    assert page.stack.currentWidget() is page.empty
    with qtbot.waitSignal(page.navigate) as blocker:
        qtbot.mouseClick(page.empty.button, Qt.LeftButton)
    assert blocker.args == ["train"]


def test_mistakes_show_thumbnails_and_clicking_one_asks_to_relabel(qtbot, open_page, trained, monkeypatch):
    ws, _, second = trained
    project = ws.project("colors")
    sid_a, sid_b = ws.store.sample_ids(project, label="red")[:2]
    report = dict(ws.model_report(second))
    # as the trainer writes them: "key" is the media hash; the first also carries its sample id
    report["mistakes"] = [
        {"key": "x", "sample_id": sid_a, "true": "red", "predicted": "blue", "score": 0.7},
        {"key": ws.store.get_sample(sid_b).content_hash, "true": "red", "predicted": "green", "score": 0.6},
    ]
    monkeypatch.setattr(ws, "model_report", lambda model_id: report)
    page = open_page(EvaluatePage, ws)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.mistakes.count() == 2, timeout=10000)
    qtbot.waitUntil(lambda: all(not page.mistakes.item(i).icon().isNull() for i in range(2)), timeout=10000)
    assert page.mistakes.item(0).text() == "red → blue"
    page.matrix.cell_clicked.emit("red", "green")
    assert page.mistakes.count() == 1 and page.show_all.isVisible()
    item = page.mistakes.item(0)
    qtbot.waitUntil(lambda: not item.icon().isNull(), timeout=10000)
    with qtbot.waitSignal(page.relabel_requested) as blocker:
        rect = page.mistakes.visualItemRect(item)
        qtbot.mouseClick(page.mistakes.viewport(), Qt.LeftButton, pos=rect.center())
    assert blocker.args == [sid_b]


def test_report_button_opens_the_html_report(qtbot, open_page, trained, monkeypatch):
    ws, _, second = trained
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    page = open_page(EvaluatePage, ws)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.model_id is not None, timeout=10000)
    qtbot.mouseClick(page.report_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: bool(opened), timeout=10000)
    assert opened[0].toLocalFile() == str(ws.report_html(second))


def test_a_report_that_no_program_opens_is_said_with_its_path(qtbot, open_page, trained, monkeypatch):
    ws, _, second = trained
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: False)  # no browser on this computer
    page = open_page(EvaluatePage, ws)
    errors = []
    monkeypatch.setattr(
        page, "report_error", lambda title, message, details=None: errors.append((title, message))
    )
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.model_id is not None, timeout=10000)
    qtbot.mouseClick(page.report_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: bool(errors), timeout=10000)
    assert errors[0][0] == "Could not open the report" and str(ws.report_html(second)) in errors[0][1]


def test_detection_reports_read_in_plain_words():
    from modeldesk.ui.pages.detection_summary import detection_words, mistake_caption

    hero, detail, advice = detection_words(
        {
            "map50": 0.74,
            "map": 0.2,
            "recall": 0.7,
            "precision": 0.8,
            "n": 26,
            "boxes": 30,
            "threshold": 0.5,
            "misses": 9,
            "false_boxes": 5,
        }
    )
    assert hero.startswith("Finds 70 of 100 objects") and "mAP50 0.74" in detail
    assert "<b>9</b>" in advice and "<b>5</b>" in advice
    caption, tip = mistake_caption({"key": "k", "misses": [[0, 0, 5, 5, "a"]], "false_boxes": []})
    assert caption == "1 missed" and "not found" in tip
    assert mistake_caption({"true": "cat", "predicted": "dog"})[0] == "cat → dog"


def test_the_sidebar_gives_the_figure_the_headline_gives():
    """A detector's sidebar said 'Finds 85%' (its mAP50) where the headline said 'Finds 75 of 100'."""
    from modeldesk.ui.pages.detection_summary import detection_words
    from modeldesk.ui.wording import score_words

    detector = {"map50": 0.85, "map": 0.31, "recall": 0.75, "precision": 0.8, "n": 26, "boxes": 30}
    assert detection_words(detector)[0].startswith(score_words(detector))  # "Finds 75 of 100"
    assert score_words({"accuracy": 0.93, "macro_f1": 0.9}) == "Right 93%"
    assert score_words({"miou": 0.5089, "pixel_accuracy": 0.91}) == "Overlap 51%"  # was "Latest model"
    assert score_words({"micro_f1": 1.0, "map": 0.97}) == "Tags right 100%"
    # the headlines' own figures: "Every tag right on 50% of the photos", "Catches 6 of 10 defects"
    assert score_words({"micro_f1": 0.73, "exact_match": 0.5}) == "All tags right 50%"
    assert score_words({"accuracy": 0.69, "catch_rate": 0.6, "false_alarm_rate": 0.0}) == "Catches 60%"


def test_a_tags_model_reads_in_plain_words(qtbot, ws, open_page):
    """Evaluate said 'No accuracy measured yet … It made no mistake' and offered an HTML report that did
    not exist for a tags model whose micro-F1 was 1.0."""
    from modeldesk.ui.pages.evaluate_page import EvaluatePage

    page = open_page(EvaluatePage, ws)
    report = {
        "micro_f1": 0.9,
        "macro_f1": 0.85,
        "exact_match": 0.75,
        "n": 40,
        "per_label": {
            "sky": {"f1": 0.97, "precision": 0.95, "recall": 1.0},
            "sea": {"f1": 0.7, "precision": 0.8, "recall": 0.6},
        },
        "labels": ["sky", "sea"],
        "has_html": False,
    }
    page._show_report(report)
    assert page.hero.text() == "Every tag right on 75% of the photos"
    assert "tag F1 0.90" in page.hero_detail.text() and "<b>sea</b>" in page.advice.text()
    assert not page.report_button.isVisible()
    assert "No accuracy" not in page.hero.text() and "no mistake" not in page.advice.text()
    # per tag bars, not "Nothing to show yet"; no "every test photo was recognised correctly" at 75%
    from modeldesk.ui.wording import per_class_rows

    assert per_class_rows(report) == [("sky", (0.95, 1.0)), ("sea", (0.8, 0.6))]
    assert page.mistakes_card.frame.isHidden()


def test_an_anomaly_report_leaves_no_empty_advice_line(qtbot, ws, open_page):
    """The anomaly card says what to do; the empty advice line under the headline left a gap."""
    page = open_page(EvaluatePage, ws)
    page._show_report(
        {
            "threshold": 5.0,
            "auroc": 0.9,
            "images": [
                {"file": "a.png", "kind": "crack", "defect": True, "score": 9.0},
                {"file": "b.png", "kind": "good", "defect": False, "score": 1.0},
            ],
        }
    )
    assert page.hero.text().startswith("Catches 1 of 1 defects")
    assert page.advice.isHidden()
    page._show_report({"labels": ["a", "b"], "confusion": [[3, 0], [0, 2]], "accuracy": 1.0})
    assert not page.advice.isHidden() and "no mistake" in page.advice.text()


def test_another_project_s_evaluation_starts_at_its_top(qtbot, open_page, trained):
    ws, _first, _second = trained
    page = open_page(EvaluatePage, ws)
    page.resize(700, 400)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.report is not None, timeout=10000)
    bar = page.scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=5000)
    bar.setValue(bar.maximum())
    page.set_project(None)
    assert bar.value() == 0
