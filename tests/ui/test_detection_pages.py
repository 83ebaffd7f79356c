"""A detection project's pages: the Evaluate page's test photos drawn with the true and the predicted
boxes, errors first, a click opens the photo on the Label page; the Train page counts photos, not boxes."""

from __future__ import annotations

import numpy as np
from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from modeldesk.ui.pages.detection_photos import COLORS, THUMB, box_layers, caption
from modeldesk.ui.pages.evaluate_page import EvaluatePage
from modeldesk.ui.pages.train import TrainPage

MISSED = [20.0, 20.0, 120.0, 100.0, "cat"]
FOUND = [200.0, 40.0, 300.0, 140.0, "cat"]
FALSE = {"label": "cat", "score": 0.8, "box": [150.0, 150.0, 250.0, 190.0]}
RIGHT = {"label": "cat", "score": 0.9, "box": [210.0, 55.0, 290.0, 130.0]}
WEAK = {"label": "cat", "score": 0.2, "box": [10.0, 10.0, 40.0, 40.0]}  # below the threshold: not drawn


def _report(keys):
    """A detector's report as evaluate_boxes writes it: the clean photo first, as if unsorted."""
    clean = {
        "key": keys[0],
        "file": "a.png",
        "truth": [FOUND],
        "boxes": [RIGHT],
        "misses": [],
        "false_boxes": [],
    }
    wrong = {
        "key": keys[1],
        "file": "b.png",
        "truth": [MISSED, FOUND],
        "boxes": [RIGHT, FALSE, WEAK],
        "misses": [MISSED],
        "false_boxes": [FALSE],
    }
    return {
        "map50": 0.5,
        "map": 0.2,
        "recall": 0.5,
        "precision": 0.5,
        "n": 2,
        "boxes": 3,
        "threshold": 0.5,
        "misses": 1,
        "false_boxes": 1,
        "labels": ["cat"],
        "per_class": {"cat": {"precision": 0.5, "recall": 0.5}},
        "mistakes": [wrong],
        "images": [clean, wrong],
    }


def test_what_is_drawn_and_said_for_one_photo():
    wrong = _report(["k1", "k2"])["images"][1]
    assert box_layers(wrong, 0.5) == [
        ("missed", MISSED[:4]),
        ("found", FOUND[:4]),
        ("right", RIGHT["box"]),
        ("false", FALSE["box"]),
    ]
    assert [kind for kind, _ in box_layers(wrong, 0.1)][
        -1
    ] == "right"  # the weak box counts at a lower threshold
    assert caption(wrong)[0] == "1 missed · 1 false"
    assert caption(_report(["k1", "k2"])["images"][0])[0] == "✓ all right"


def _pixel(icon, x, y):
    image = icon.pixmap(THUMB, THUMB).toImage()
    return image.pixelColor(x, y)


def test_detector_photos_show_boxes_errors_first_and_open_on_click(
    qtbot, ws, open_page, tmp_path, monkeypatch
):
    ws.create_project("finder", "object-detection")
    folder = tmp_path / "photos"
    folder.mkdir()
    for i, shade in enumerate((200, 120)):
        Image.fromarray(np.full((200, 320, 3), shade, np.uint8)).save(folder / f"p{i}.png")
    ws.import_data("finder", folder)
    project = ws.project("finder")
    ids = ws.sample_ids("finder")
    keys = [ws.sample(i).content_hash for i in ids]
    report = _report(keys)
    monkeypatch.setattr(
        ws,
        "list_models",
        lambda name: [
            {"id": "m1", "template": "object-detection/fast", "created": 0, "metrics": {"map50": 0.5}}
        ],
    )
    monkeypatch.setattr(ws, "model_report", lambda model_id: report)
    page = open_page(EvaluatePage, ws)
    page.set_project(project.name)
    photos = page.detection_photos
    qtbot.waitUntil(lambda: photos.list.count() == 2, timeout=10000)
    assert photos.frame.isVisible() and not page.mistakes_card.frame.isVisible()
    assert "1 of 2" in photos.title.text()
    assert photos.frame.minimumSizeHint().width() < 520  # fits a 760 x 540 window without sideways scrolling
    first = photos.list.item(0)
    qtbot.waitUntil(lambda: all(not photos.list.item(i).icon().isNull() for i in range(2)), timeout=10000)
    assert (
        first.text() == "1 missed · 1 false" and first.data(Qt.UserRole) == ids[1]
    )  # found by its media hash
    scale = THUMB / 320  # the thumbnail's longest side is THUMB; it is centred on a THUMB x THUMB square
    top = (THUMB - round(200 * scale)) // 2
    # the missed box's left edge is red, the found box's top edge green, the false box's bottom edge orange
    for (x, y), kind in (
        ((MISSED[0], 60), "missed"),
        ((250, FOUND[1]), "found"),
        ((200, FALSE["box"][3]), "false"),
    ):
        colour = _pixel(first.icon(), round(x * scale), top + round(y * scale))
        expected = QColor(COLORS[kind])
        assert (
            max(
                abs(colour.red() - expected.red()),
                abs(colour.green() - expected.green()),
                abs(colour.blue() - expected.blue()),
            )
            < 90
        ), (kind, colour.name())
    with qtbot.waitSignal(page.relabel_requested, timeout=5000) as blocker:
        rect = photos.list.visualItemRect(first)
        qtbot.mouseClick(photos.list.viewport(), Qt.LeftButton, pos=rect.center())
    assert blocker.args == [ids[1]]

    # the confidence slider: once it settles, the threshold is saved and the report shown at it
    moved = []

    def set_score_threshold(model_id, threshold):
        moved.append((model_id, threshold))
        report["threshold"] = threshold
        return report

    monkeypatch.setattr(ws, "set_score_threshold", set_score_threshold)
    assert photos.slider.isVisible() and photos.slider.value() == 50
    photos.slider.setValue(40)
    photos.slider.setValue(15)  # moved on before settling: only the last value counts
    qtbot.waitUntil(lambda: photos.threshold == 0.15, timeout=10000)
    assert (
        moved == [("m1", 0.15)]
        and "15%" in photos.threshold_label.text()
        and "15%" in page.hero_detail.text()
    )


def test_train_page_counts_labeled_photos_not_boxes(qtbot, ws, open_page, tmp_path):
    ws.create_project("finder", "object-detection")
    folder = tmp_path / "photos"
    folder.mkdir()
    for i in range(3):
        Image.fromarray(np.full((60, 80, 3), 60 * i, np.uint8)).save(folder / f"p{i}.png")
    ws.import_data("finder", folder)
    first, second, _ = ws.sample_ids("finder")
    ws.annotate(first, "boxes", [("cat", 1, 1, 20, 20), ("cat", 30, 30, 50, 50), ("dog", 5, 5, 70, 50)])
    ws.annotate(second, "boxes", [("cat", 2, 2, 40, 40)])
    assert ws.stats("finder")["boxes"] == 4  # more boxes than photos: the trap
    page = open_page(TrainPage, ws)
    page.set_project("finder")
    qtbot.waitUntil(lambda: page.loaded, timeout=20000)
    assert "2 labeled of 3 in 2 classes" in page.data_summary.text()
