"""'Improve as I label' on the Label page: the switch, the background run after five labels, the new
model's suggestions, and the pickers keeping the user's own model as their default."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from modeldesk.app.keep_up import is_auto_job
from modeldesk.ui.pages.label import LabelPage
from modeldesk.ui.widgets.model_picker import ModelPicker


def _open(qtbot, show_widget, ws, project) -> LabelPage:
    page = LabelPage(ws)
    page.resize(1100, 760)
    show_widget(page)
    page.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is page)
    page.set_project(project)
    qtbot.waitUntil(lambda: page.sample is not None and page.is_idle(), timeout=10_000)
    page.setFocus()
    return page


def test_five_labels_retrain_the_fast_recipe_in_the_background(
    qtbot, ws, classification_project, show_widget
):
    try:
        page = _open(qtbot, show_widget, ws, classification_project)
        assert not page.keep_up.box.isChecked()
        page.keep_up.box.click()
        qtbot.waitUntil(page.is_idle, timeout=10_000)
        assert ws.settings.keep_up_projects == ["fruit"]
        page.order_box.setCurrentIndex(1)  # unlabeled first
        qtbot.waitUntil(lambda: page.is_idle() and page.index == 0, timeout=10_000)
        for _ in range(5):
            shown = page.sample.id
            qtbot.keyClick(QApplication.focusWidget() or page, Qt.Key_1)
            qtbot.waitUntil(lambda shown=shown: page.is_idle() and page.sample.id != shown, timeout=10_000)
        qtbot.waitUntil(lambda: page.keep_up.watcher.active, timeout=10_000)
        jobs = ws.training_runs("fruit")
        assert len(jobs) == 1 and is_auto_job(jobs[0])
        assert jobs[0]["params"]["template"] == "image-classification/fast"
        assert page.keep_up.note.text() == "Updating the model in the background…"

        qtbot.waitUntil(lambda: "Updated while you label" in page.keep_up.note.text(), timeout=240_000)
        model = ws.list_models("fruit")[-1]
        assert model["metrics"]["origin"] == "keep_up"
        qtbot.waitUntil(lambda: page.model_id == model["id"] and page.is_idle(), timeout=20_000)
        assert page.suggestions, "the new model's suggestions reach the page"

        page.close()
        again = _open(qtbot, show_widget, ws, classification_project)
        assert again.keep_up.box.isChecked(), "remembered per project"
    finally:
        ws.jobs.close(cancel_running=True, timeout=20)


def test_the_picker_default_is_the_users_model_not_a_background_one(qtbot):
    picker = ModelPicker()
    qtbot.addWidget(picker)
    auto = {"id": "b", "template": "image-classification/fast", "metrics": {"origin": "keep_up"}}
    own = {"id": "a", "template": "image-classification/accurate", "metrics": {"accuracy": 0.9}}
    assert picker.set_models([auto, own], None) == "a"
    assert "updated while you label" in picker.itemText(0)
    assert picker.set_models([auto], None) == "b"
    assert picker.set_models([auto, own], "b") == "b", "a model the user picked stays"
