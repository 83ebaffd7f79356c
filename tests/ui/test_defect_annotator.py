"""The anomaly Label page: class keys for good and the defect kinds, and the optional brush that marks
where the defect is, saved into the project's defect masks (pytest-qt, offscreen)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest

from modeldesk.ui.pages.label import LabelPage
from modeldesk.ui.pages.label.defect_annotator import DefectAnnotator


@pytest.fixture
def parts(ws, tmp_path):
    """An anomaly project: two good 80x60 photos and one of the kind crack, imported as a folder."""
    rng = np.random.default_rng(1)
    for rel in ("good/g0.png", "good/g1.png", "defect/crack/c0.png"):
        path = tmp_path / "parts" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (60, 80), dtype=np.uint8), "L").save(path)
    ws.create_project("parts", "anomaly-detection")
    ws.import_data("parts", tmp_path / "parts")
    return "parts"


def _stroke(canvas, points):
    view = [canvas.mapFromScene(QPointF(*p)) for p in points]
    QTest.mousePress(canvas.viewport(), Qt.LeftButton, Qt.NoModifier, view[0])
    for point in view[1:]:
        QTest.mouseMove(canvas.viewport(), point)
    QTest.mouseRelease(canvas.viewport(), Qt.LeftButton, Qt.NoModifier, view[-1])


def _open(qtbot, ws, show_widget, source):
    page = LabelPage(ws)
    page.resize(1100, 760)
    show_widget(page)
    page.set_project("parts")
    qtbot.waitUntil(lambda: page.sample is not None and page.is_idle(), timeout=10_000)
    wanted = next(i for i in ws.sample_ids("parts") if ws.sample(i).source == source)
    page.show_sample(wanted)
    qtbot.waitUntil(lambda: page.sample.id == wanted and page.is_idle(), timeout=10_000)
    return page, wanted


def test_the_brush_marks_the_defect_into_storage_and_a_good_photo_becomes_a_defect(
    qtbot, ws, parts, show_widget
):
    page, good = _open(qtbot, ws, show_widget, "good/g0.png")
    annotator = page.annotator
    assert isinstance(annotator, DefectAnnotator)
    assert annotator.tools.isVisible() and page.undo_button.isVisible()
    assert set(annotator.tools.buttons) == {"brush", "eraser"}
    # a key each for good, the defect kind and plain defect (every anomaly project starts with it)
    assert sorted(page.panel.keys) == ["crack", "defect", "good"]
    page.canvas.setFocus()
    _stroke(page.canvas, [(10, 30), (60, 30)])
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    saved = ws.defect_mask(good)
    assert saved is not None and saved.shape == (60, 80) and saved[30, 10:60].all() and not saved[0].any()
    assert ws.sample(good).labels == ["crack"]  # the project's only defect kind
    assert "defect marked" in page.position.text()

    QTest.keyClick(page.canvas, Qt.Key_E)  # the eraser takes part of it off
    assert annotator.editor.tool == "eraser"
    QTest.keyClick(page.canvas, Qt.Key_P)  # no polygon here: the key does nothing
    assert annotator.editor.tool == "eraser"
    _stroke(page.canvas, [(10, 30), (30, 30)])
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    assert not ws.defect_mask(good)[30, 10:25].any() and ws.defect_mask(good)[30, 45:60].all()

    page.undo()  # the page's Undo takes the eraser stroke back
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    assert np.array_equal(ws.defect_mask(good), saved)
    assert np.array_equal(annotator.editor.mask == 0, saved)

    page.choose_label("good")  # good after all: the marks go
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    assert ws.defect_mask(good) is None and ws.sample(good).labels == ["good"]


def test_marks_come_back_and_a_kind_key_keeps_them(qtbot, ws, parts, show_widget):
    crack = next(i for i in ws.sample_ids("parts") if ws.sample(i).source == "defect/crack/c0.png")
    marked = np.zeros((60, 80), bool)
    marked[5:15, 40:70] = True
    ws.set_defect_mask(crack, marked)
    page, _ = _open(qtbot, ws, show_widget, "defect/crack/c0.png")
    assert np.array_equal(page.annotator.editor.mask == 0, marked)  # the stored marks are shown
    page.choose_label("crack")
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    assert np.array_equal(ws.defect_mask(crack), marked) and ws.sample(crack).labels == ["crack"]


def test_a_project_of_good_photos_alone_has_a_defect_key_from_the_start(qtbot, ws, tmp_path, show_widget):
    rng = np.random.default_rng(2)
    for name in ("g0.png", "g1.png"):
        path = tmp_path / "goods" / "good" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (60, 80), dtype=np.uint8), "L").save(path)
    ws.create_project("parts", "anomaly-detection")
    ws.import_data("parts", tmp_path / "goods")
    page, photo = _open(qtbot, ws, show_widget, "good/g0.png")
    assert sorted(page.panel.keys) == ["defect", "good"]
    QTest.keyClick(page.canvas, getattr(Qt, f"Key_{page.panel.keys['defect']}"))  # its digit key
    qtbot.waitUntil(lambda: ws.sample(photo).labels == ["defect"], timeout=10_000)
