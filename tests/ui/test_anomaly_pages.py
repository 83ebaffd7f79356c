"""Anomaly models on the Evaluate and Deploy pages: the slider moves every figure; plain words."""

from __future__ import annotations

from modeldesk.app.anomaly_formatting import catch_sentence, counts_from_images, verdict
from modeldesk.ui.pages.anomaly_evaluation import AnomalyCard
from modeldesk.ui.pages.deploy.try_it import anomaly_answer

REPORT = {
    "threshold": 5.0,
    "auroc": 0.9,
    "pixel_auroc": 0.8,
    "images": [
        {"file": "a.png", "kind": "crack", "defect": True, "score": 9.0},
        {"file": "b.png", "kind": "crack", "defect": True, "score": 4.0},
        {"file": "c.png", "kind": "hole", "defect": True, "score": 6.0},
        {"file": "d.png", "kind": "good", "defect": False, "score": 5.5},
        {"file": "e.png", "kind": "good", "defect": False, "score": 1.0},
    ],
}


def test_counts_and_words_at_a_threshold():
    counts = counts_from_images(REPORT["images"], 5.0)
    assert (counts["caught"], counts["defects"], counts["false_alarms"], counts["good"]) == (2, 3, 1, 2)
    assert counts["per_kind"] == {"crack": {"caught": 1, "defects": 2}, "hole": {"caught": 1, "defects": 1}}
    assert catch_sentence(counts) == "catches 2 of 3 defects, raises a false alarm on 1 of 2 good parts"
    assert [verdict(m, 5.0) for m in REPORT["images"]] == [
        "caught",
        "missed",
        "caught",
        "false alarm",
        "good",
    ]


def test_the_slider_moves_every_figure(qtbot):
    words = []
    card = AnomalyCard(lambda files, done: done([(f, None) for f in files]), lambda *w: words.append(w))
    qtbot.addWidget(card.frame)
    card.set_report(REPORT)
    assert "catches 2 of 3 defects" in card.figures.text().lower()
    assert words[-1][0].startswith("Catches 2 of 3 defects")
    assert "image AUROC 0.900" in words[-1][1] and "pixel AUROC 0.800" in words[-1][1]
    card.slider.setValue(card.slider.maximum())
    assert "catches 0 of 3 defects, raises a false alarm on 0 of 2" in card.figures.text().lower()
    card.slider.setValue(card.slider.minimum())
    assert "catches 3 of 3 defects, raises a false alarm on 2 of 2" in card.figures.text().lower()
    assert card.photos.item(1).text().startswith("caught")  # b.png at the lowest threshold


def test_try_it_says_good_or_defective():
    flagged = anomaly_answer({"anomalous": True, "score": 7.0, "threshold": 5.0})
    assert flagged.startswith("Looks defective") and "7.0" in flagged
    assert anomaly_answer({"anomalous": False, "score": 2.0, "threshold": 5.0}).startswith("Looks good")


def test_a_flagged_defect_kind_is_saved_as_a_right_answer():
    from modeldesk.app.anomaly_formatting import answer_label

    flagged = {"label": "defect", "anomalous": True}
    assert answer_label(flagged, ["crack"]) == "crack"
    assert answer_label(flagged, ["good"]) == "defect"  # a false alarm stays one
    assert answer_label({"label": "good", "anomalous": False}, ["crack"]) == "good"  # a miss stays one
    assert answer_label({"label": "cat"}, ["dog"]) == "cat"  # other models: unchanged


def test_the_promise_of_the_threshold_is_said_at_the_threshold_as_trained(qtbot):
    from modeldesk.trainers.anomaly.scoring import false_alarm_plan

    card = AnomalyCard(lambda files, done: done([(f, None) for f in files]), lambda *w: None)
    qtbot.addWidget(card.frame)
    card.set_report({**REPORT, "false_alarm_promise": false_alarm_plan(59, 0.01)})
    assert "the lowest false-alarm rate it can promise is 3.8%" in card.promise.text()
    assert not card.promise.isHidden() and card.threshold == REPORT["threshold"]
    start = card.slider.value()
    card.slider.setValue(card.slider.maximum())
    assert card.promise.isHidden()  # another threshold: the promise is not its
    card.slider.setValue(start)
    assert not card.promise.isHidden()


def test_the_test_photos_are_square_tiles_whatever_their_shape(qtbot, tmp_path):
    """A wide and a tall heatmap on one grid: each icon is the same square, so the captions line up."""
    from PySide6.QtCore import QSize
    from PySide6.QtGui import QImage

    from modeldesk.ui.pages.anomaly_evaluation import THUMB

    shapes = {"wide.png": (160, 40), "tall.png": (40, 160)}
    for name, (w, h) in shapes.items():
        image = QImage(w, h, QImage.Format_RGB32)
        image.fill(0xFF0000)
        image.save(str(tmp_path / name))
    pictures = [tmp_path / name for name in shapes] * 3  # five photos in the report
    card = AnomalyCard(lambda files, done: done(list(zip(files, pictures))), lambda *w: None)
    qtbot.addWidget(card.frame)
    card.set_report(REPORT)
    sizes = {card.photos.item(i).icon().availableSizes()[0] for i in range(card.photos.count())}
    assert sizes == {QSize(THUMB, THUMB)}


def test_an_anomaly_project_s_small_defect_kinds_are_no_warning():
    """It learns from good photos only: two photos of a defect kind are normal, few good ones are not."""
    from modeldesk.ui.wording import learned_classes, small_class_warning

    anomaly = {"annotation": "defect"}
    counts = {"good": 24, "crack": 2, "defect": 0}
    assert small_class_warning(learned_classes(anomaly, counts)) == ""
    assert "good" in small_class_warning(learned_classes(anomaly, {"good": 3, "crack": 2}))
    assert "crack" in small_class_warning(learned_classes({"annotation": "label"}, counts))


def test_an_anomaly_project_s_bars_leave_out_its_empty_defect_key():
    """The catch-all "defect" key with no photo is no bar beside the kinds that have some (it read as
    "defect 0", missing photos); a classifier's empty class still shows."""
    from modeldesk.ui.wording import counted_classes

    counts = {"good": 24, "crack": 2, "defect": 0}
    assert counted_classes({"annotation": "defect"}, counts) == {"good": 24, "crack": 2}
    assert counted_classes({"annotation": "defect"}, {"good": 0}) == {"good": 0}
    assert counted_classes({"annotation": "label"}, counts) == counts
