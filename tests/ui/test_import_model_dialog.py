"""Deploy's "Import a model…": a classifier made elsewhere, previewed on three photos, imported and picked."""

from __future__ import annotations

import pytest

from modeldesk.app.workspace import Workspace
from modeldesk.ui.pages.deploy import DeployPage


@pytest.fixture
def page(qtbot, tmp_path, outside_photos):
    ws = Workspace(tmp_path / "ws")
    ws.create_project("levels", "image-classification")
    ws.import_data("levels", outside_photos)
    widget = DeployPage(ws)
    widget.show()
    widget.set_project("levels")
    qtbot.waitUntil(lambda: widget.loaded, timeout=10000)
    yield widget
    qtbot.waitUntil(lambda: not widget.tasks.busy, timeout=60000)
    widget.shutdown()
    widget.close()
    widget.deleteLater()
    ws.close()


def test_a_model_made_elsewhere_is_previewed_imported_and_picked(qtbot, page, outside_model):
    onnx_path, labels = outside_model
    assert page.import_button.isVisible() and not page.models  # offered before any model was trained
    page.import_button.click()
    dialog = page.import_dialog
    assert not dialog.import_button.isEnabled()  # nothing chosen yet
    dialog.model_edit.setText(str(onnx_path))
    dialog.inspect()
    qtbot.waitUntil(lambda: "32 px" in dialog.about.text(), timeout=10000)
    assert "3 classes" in dialog.about.text()
    dialog.labels_edit.setText(str(labels))
    dialog.preview_button.click()  # "measure it" is the default: the preview uses the best scaling
    qtbot.waitUntil(lambda: "the model says" in dialog.preview_text.text(), timeout=20000)
    text = dialog.preview_text.text()
    assert "imagenet" in text.lower() and text.count("the model says") == 3
    dialog.import_button.click()
    qtbot.waitUntil(lambda: bool(page.models) and page.model_id == page.models[0]["id"], timeout=30000)
    assert page.models[0]["template"] == "imported" and page.models[0]["metrics"]["accuracy"] == 1.0
    assert page.picker.currentText().startswith("Made elsewhere")


def test_a_file_it_cannot_import_is_said_in_the_dialog(qtbot, page, tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not onnx")
    page.import_button.click()
    dialog = page.import_dialog
    dialog.model_edit.setText(str(broken))
    dialog.inspect()
    qtbot.waitUntil(lambda: "not a valid ONNX model" in dialog.about.text(), timeout=10000)
    assert "broken.onnx" in dialog.about.text()
