"""The Label step: keyboard labeling with undo, multi-label toggles, suggestions, and boxes drawn
with the mouse on a detection project."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from modeldesk.ui.pages.label import LabelPage


@pytest.fixture
def make_page(qtbot, ws, show_widget):
    return lambda project: _open(qtbot, show_widget, LabelPage(ws), project)


def _open(qtbot, show_widget, page, project) -> LabelPage:
    page.resize(1100, 760)
    show_widget(page)
    page.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is page)
    page.set_project(project)
    qtbot.waitUntil(lambda: page.sample is not None and page.is_idle(), timeout=10_000)
    page.setFocus()
    return page


def press(qtbot, page, key, modifier=Qt.NoModifier):
    target = QApplication.focusWidget() or page
    qtbot.keyClick(target, key, modifier)


def settled(qtbot, page):
    qtbot.waitUntil(page.is_idle, timeout=10_000)


def test_keyboard_labeling_with_arrows_and_undo(qtbot, ws, classification_project, make_page):
    store = ws.store
    page = make_page(classification_project)
    assert page.labels == ["blue", "green", "red"]
    page.order_box.setCurrentIndex(1)  # unlabeled first
    qtbot.waitUntil(lambda: page.is_idle() and page.index == 0, timeout=10_000)
    unlabeled = store.sample_ids("fruit", unlabeled=True)
    first, second = page.order[0], page.order[1]
    assert {first, second} <= set(unlabeled) and page.sample.id == first

    press(qtbot, page, Qt.Key_1)  # blue, then on to the next image
    qtbot.waitUntil(lambda: page.sample.id == second, timeout=10_000)
    press(qtbot, page, Qt.Key_2)  # green
    settled(qtbot, page)
    assert store.get_sample(first).labels == ["blue"]
    assert store.get_sample(second).labels == ["green"]

    press(qtbot, page, Qt.Key_Left)
    press(qtbot, page, Qt.Key_Left)
    qtbot.waitUntil(lambda: page.sample.id == first and page.is_idle(), timeout=10_000)
    assert page.class_buttons[0].isChecked()  # blue shown as chosen
    press(qtbot, page, Qt.Key_Right)
    qtbot.waitUntil(lambda: page.sample.id == second and page.is_idle(), timeout=10_000)

    press(qtbot, page, Qt.Key_Z, Qt.ControlModifier)  # undo "green"
    settled(qtbot, page)
    assert store.get_sample(second).labels == []
    assert store.get_sample(first).labels == ["blue"]
    press(qtbot, page, Qt.Key_Z, Qt.ControlModifier)  # undo "blue", and show that image
    qtbot.waitUntil(lambda: page.sample.id == first and page.is_idle(), timeout=10_000)
    assert store.get_sample(first).labels == []
    assert not page.undo_button.isEnabled()
    assert ws.stats("fruit")["labeled"] == 28


def test_relabel_a_labeled_image_and_counts_follow(qtbot, ws, classification_project, make_page):
    store = ws.store
    page = make_page(classification_project)
    red = store.sample_ids("fruit", label="red")[0]
    page.show_sample(red)
    qtbot.waitUntil(lambda: page.sample.id == red and page.is_idle(), timeout=10_000)
    assert page.class_buttons[2].isChecked()
    page.class_buttons[1].click()  # green
    settled(qtbot, page)
    assert store.get_sample(red).labels == ["green"]
    assert page.counts["green"] == 13 and page.counts["red"] == 11
    assert page.class_buttons[1].count == 13


def test_add_a_class_from_the_field(qtbot, ws, classification_project, make_page):
    page = make_page(classification_project)
    page.new_class.setFocus()
    qtbot.keyClicks(page.new_class, "yellow")
    qtbot.keyClick(page.new_class, Qt.Key_Return)
    settled(qtbot, page)
    assert "yellow" in page.labels and "yellow" in ws.store.labels("fruit")
    assert page.new_class.text() == ""


def test_multilabel_keys_toggle_tags(qtbot, ws, make_images, tmp_path, make_page):
    ws.create_project("scenes", "image-multilabel")
    ws.import_data("scenes", make_images(tmp_path / "scenes", {"beach": 3, "sunny": 3}))
    page = make_page("scenes")
    sid = page.sample.id
    before = set(page.sample.labels)
    press(qtbot, page, Qt.Key_1)  # toggles "beach", stays on the image
    press(qtbot, page, Qt.Key_2)  # toggles "sunny"
    settled(qtbot, page)
    assert page.sample.id == sid
    assert set(ws.store.get_sample(sid).labels) == before ^ {"beach", "sunny"}


def test_suggestion_is_accepted_with_enter(qtbot, ws, classification_project, make_page):
    store = ws.store
    unlabeled = store.sample_ids("fruit", unlabeled=True)
    store.add_model("fruit", "m1", ws.paths.models / "m1", "image-classification/fast", {"accuracy": 0.9})
    store.save_predictions("m1", [(sid, "red", 0.5 + 0.05 * i) for i, sid in enumerate(unlabeled)])
    page = make_page(classification_project)
    page.order_box.setCurrentIndex(2)  # label these next: least sure first
    qtbot.waitUntil(lambda: page.is_idle() and page.sample.id == unlabeled[0], timeout=10_000)
    assert page.order[: len(unlabeled)] == unlabeled
    assert page.banner.isVisible() and "red" in page.suggestion_label.text()
    press(qtbot, page, Qt.Key_Return)
    settled(qtbot, page)
    assert store.get_sample(unlabeled[0]).labels == ["red"]
    qtbot.waitUntil(lambda: page.sample.id == unlabeled[1], timeout=10_000)


def drag(qtbot, widget, start: QPoint, end: QPoint) -> None:
    QTest.mousePress(widget, Qt.LeftButton, Qt.NoModifier, start)
    for step in range(1, 6):
        QTest.mouseMove(widget, start + (end - start) * step / 5)
    QTest.mouseRelease(widget, Qt.LeftButton, Qt.NoModifier, end)


def test_draw_move_and_delete_a_box_on_a_detection_project(qtbot, ws, make_images, tmp_path, make_page):
    ws.create_project("finder", "object-detection")
    ws.import_data("finder", make_images(tmp_path / "flat", {"": 3}, size=200), format="flat")
    ws.store.add_label("finder", "apple")
    ws.store.add_label("finder", "pear")
    page = make_page("finder")
    sid = page.sample.id
    canvas = page.canvas
    assert canvas.drawing and canvas.current_label == "apple"
    press(qtbot, page, Qt.Key_2)  # draw pears
    assert canvas.current_label == "pear" and page.class_buttons[1].isChecked()

    view = canvas.viewport()
    a = canvas.mapFromScene(40, 50)
    b = canvas.mapFromScene(120, 150)
    drag(qtbot, view, a, b)
    settled(qtbot, page)
    (box,) = ws.store.get_sample(sid).boxes
    assert box.label == "pear"
    assert abs(box.x0 - 40) < 3 and abs(box.y0 - 50) < 3 and abs(box.x1 - 120) < 3 and abs(box.y1 - 150) < 3

    # move it by dragging its middle
    middle = canvas.mapFromScene(80, 100)
    drag(qtbot, view, middle, canvas.mapFromScene(100, 110))
    settled(qtbot, page)
    (moved,) = ws.store.get_sample(sid).boxes
    assert abs(moved.x0 - 60) < 4 and abs(moved.y0 - 60) < 4 and abs((moved.x1 - moved.x0) - 80) < 2

    # a tiny drag is a click, not a box
    drag(qtbot, view, canvas.mapFromScene(150, 20), canvas.mapFromScene(151, 21))
    settled(qtbot, page)
    assert len(ws.store.get_sample(sid).boxes) == 1

    canvas.box_items()[0].setSelected(True)
    press(qtbot, page, Qt.Key_Delete)
    settled(qtbot, page)
    assert ws.store.get_sample(sid).boxes == []
    press(qtbot, page, Qt.Key_Z, Qt.ControlModifier)  # undo the delete
    settled(qtbot, page)
    assert len(ws.store.get_sample(sid).boxes) == 1
    assert len(canvas.box_items()) == 1


def test_a_detectors_proposed_boxes_are_shown_dashed_and_accepted_with_enter(
    qtbot, ws, make_images, tmp_path, make_page
):
    import json

    ws.create_project("proposed", "object-detection")
    ws.import_data("proposed", make_images(tmp_path / "flat", {"": 2}, size=200), format="flat")
    ws.store.add_label("proposed", "apple")
    first, second = ws.store.sample_ids("proposed", unlabeled=True)[:2]
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    proposal = {"label": "apple", "score": 0.83, "box": [20.0, 30.0, 120.0, 150.0]}
    (model_dir / "proposals.json").write_text(json.dumps({str(first): [proposal], str(second): []}))
    ws.store.add_model(ws.project("proposed"), "m-test", str(model_dir), "object-detection/fast", {})
    ws.store.save_predictions("m-test", [(first, "apple", 0.2), (second, "", 1.0)])
    page = make_page("proposed")
    page.order_box.setCurrentIndex(2)  # least confident first
    qtbot.waitUntil(
        lambda: page.is_idle() and page.sample is not None and page.sample.id == first, timeout=10_000
    )
    assert not page.banner.isHidden() and "proposes 1 box" in page.suggestion_label.text()
    annotator = page.annotator
    assert len(annotator.proposals.items) == 1 and page.canvas.box_items() == []
    press(qtbot, page, Qt.Key_Return)
    settled(qtbot, page)
    (box,) = ws.store.get_sample(first).boxes
    assert (box.label, box.x0, box.y0, box.x1, box.y1) == ("apple", 20.0, 30.0, 120.0, 150.0)
    assert len(page.canvas.box_items()) == 1 and annotator.proposals.items == []
    assert page.banner.isHidden()


# -- the newcomer's traps (issue 16) ---------------------------------------------------------------


def test_keys_are_shown_and_stay_with_their_class_when_a_class_is_added(
    qtbot, ws, tmp_path, make_images, make_page
):
    ws.create_project("pets", "image-classification")
    ws.import_data("pets", make_images(tmp_path / "pets", {"cat": 2, "dog": 2, "": 3}))
    page = make_page("pets")
    assert [(b.key, b.name) for b in page.class_buttons] == [("1", "cat"), ("2", "dog")]
    assert page.class_buttons[0].text().startswith("1")  # the key is on the button
    page.new_class.setFocus()
    qtbot.keyClicks(page.new_class, "bird")  # sorts before "cat" but must not take its key
    qtbot.keyClick(page.new_class, Qt.Key_Return)
    settled(qtbot, page)
    assert {b.name: b.key for b in page.class_buttons} == {"bird": "3", "cat": "1", "dog": "2"}
    page.setFocus()
    sid = page.sample.id
    press(qtbot, page, Qt.Key_1)
    settled(qtbot, page)
    assert ws.store.get_sample(sid).labels == ["cat"]


def test_a_class_named_by_a_digit_gets_that_digit(qtbot, ws, tmp_path, make_images, make_page):
    ws.create_project("digits", "image-classification")
    ws.import_data("digits", make_images(tmp_path / "d", {**{str(n): 1 for n in range(10)}, "": 2}))
    page = make_page("digits")
    assert {b.name: b.key for b in page.class_buttons} == {str(n): str(n) for n in range(10)}
    page.order_box.setCurrentIndex(page.order_box.findData("unlabeled"))
    qtbot.waitUntil(lambda: page.is_idle() and not page.sample.labels, timeout=10_000)
    first = page.sample.id
    page.setFocus()
    press(qtbot, page, Qt.Key_5)
    qtbot.waitUntil(lambda: page.is_idle() and page.sample.id != first, timeout=10_000)
    second = page.sample.id
    press(qtbot, page, Qt.Key_9)
    settled(qtbot, page)
    assert ws.store.get_sample(first).labels == ["5"] and ws.store.get_sample(second).labels == ["9"]


def test_typing_in_the_class_field_never_labels(qtbot, ws, classification_project, make_page):
    page = make_page(classification_project)
    sid, before = page.sample.id, list(page.sample.labels)
    page.new_class.setFocus()
    qtbot.keyClicks(page.new_class, "fist 2")
    qtbot.keyClick(page.new_class, Qt.Key_Return)
    settled(qtbot, page)
    assert "fist 2" in page.labels
    assert page.new_class.hasFocus(), "the field keeps the focus for the next name"
    qtbot.keyClicks(page.new_class, "palm 1")  # digits go into the field, not onto the photo
    assert page.new_class.text() == "palm 1"
    settled(qtbot, page)
    assert page.sample.id == sid and ws.store.get_sample(sid).labels == before


def test_class_counts_match_the_store_after_undo(qtbot, ws, classification_project, make_page):
    page = make_page(classification_project)
    page.order_box.setCurrentIndex(page.order_box.findData("unlabeled"))
    qtbot.waitUntil(lambda: page.is_idle() and not page.sample.labels, timeout=10_000)
    for key in (Qt.Key_3, Qt.Key_3, Qt.Key_1):  # red, red, blue
        press(qtbot, page, key)
        settled(qtbot, page)
    press(qtbot, page, Qt.Key_Z, Qt.ControlModifier)
    press(qtbot, page, Qt.Key_Z, Qt.ControlModifier)
    settled(qtbot, page)
    stored = ws.stats("fruit")["labels"]
    assert page.counts == stored
    assert {b.name: b.count for b in page.class_buttons} == stored


def test_labeling_the_last_sample_points_to_training(qtbot, ws, tmp_path, make_images, make_page):
    ws.create_project("two", "image-classification")
    ws.import_data("two", make_images(tmp_path / "two", {"red": 3, "blue": 3, "": 1}))
    page = make_page("two")
    assert page.train_button.objectName() != "Primary"
    page.order_box.setCurrentIndex(page.order_box.findData("unlabeled"))
    qtbot.waitUntil(lambda: page.is_idle() and not page.sample.labels, timeout=10_000)
    page.setFocus()
    press(qtbot, page, Qt.Key_1)
    qtbot.waitUntil(lambda: page.is_idle() and page.train_button.objectName() == "Primary", timeout=10_000)
    assert page.train_button.toolTip().startswith("Everything is labeled")
    with qtbot.waitSignal(page.navigate) as nav:
        page.train_button.click()
    assert nav.args == ["train"]


def test_rename_and_delete_a_class_from_its_menu(qtbot, ws, classification_project, make_page):
    page = make_page(classification_project)
    keys = {b.name: b.key for b in page.class_buttons}
    page.class_editor.ask_rename("red")
    page.class_editor.dialog.setTextValue("crimson")
    page.class_editor.dialog.accept()
    qtbot.waitUntil(lambda: page.is_idle() and "crimson" in page.labels, timeout=10_000)
    assert ws.store.labels("fruit") == ["blue", "crimson", "green"]
    assert {b.name: b.key for b in page.class_buttons}["crimson"] == keys["red"]  # the key goes with it
    page.class_editor.ask_delete("blue")
    box = page.class_editor.dialog
    assert "4 examples" in box.text() and "stay" in box.text()
    next(b for b in box.buttons() if b.text() == "Delete class").click()
    qtbot.waitUntil(lambda: page.is_idle() and "blue" not in page.labels, timeout=10_000)
    assert "blue" not in ws.store.labels("fruit") and ws.stats("fruit")["samples"] == 34


def test_unlabeled_first_opens_on_work_still_to_do(qtbot, ws, classification_project, make_page):
    """Coming back to 'Unlabeled first' from a labeled photo used to stay on it ('5 of 1,029')."""
    page = make_page(classification_project)
    assert not page.sample.labels
    page.order_box.setCurrentIndex(0)  # in the order they were added
    settled(qtbot, page)
    labeled = next(i for i, sid in enumerate(page.order) if ws.store.get_sample(sid).labels)
    page.go_to(labeled)
    qtbot.waitUntil(lambda: page.sample is not None and bool(page.sample.labels), timeout=10_000)
    page.order_box.setCurrentIndex(1)  # unlabeled first
    qtbot.waitUntil(
        lambda: page.is_idle() and page.sample is not None and not page.sample.labels, timeout=10_000
    )
    assert page.index == 0


def test_a_photo_added_after_training_gets_a_suggestion(
    qtbot, ws, make_page, outside_model, outside_photos, tmp_path
):
    """Photos added after the model was trained had no suggestion and Enter did nothing: the page now
    asks the model when it shows one."""
    from PIL import Image

    ws.create_project("levels", "image-classification")
    ws.import_data("levels", outside_photos)
    ws.import_outside_model(*outside_model, project="levels")  # a model, and no predictions saved
    new = tmp_path / "new.png"
    Image.new("RGB", (40, 40), (222, 222, 222)).save(new)
    ws.import_data("levels", new)
    (fresh,) = ws.sample_ids("levels", unlabeled=True)
    page = make_page("levels")
    assert page.sample.id == fresh
    qtbot.waitUntil(
        lambda: page.banner.isVisible() and "bright" in page.suggestion_label.text(), timeout=10_000
    )
    press(qtbot, page, Qt.Key_Return)
    settled(qtbot, page)
    assert ws.store.get_sample(fresh).labels == ["bright"]
