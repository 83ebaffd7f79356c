"""The mask annotator driven with the mouse and keys: brush, eraser, polygon, fill, the assist, zoom,
undo and redo on the canvas; and on the Label page, class keys, saving and loading a photo's mask.

The page runs on a real workspace with a segmentation project (masks saved by ``set_sample_mask``).
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from modeldesk.ui.canvas import BoxCanvas
from modeldesk.ui.pages.label import LabelPage
from modeldesk.ui.pages.label.mask_annotator import MaskAnnotator
from modeldesk.ui.pages.label.mask_editor import MaskEditor
from modeldesk.ui.pages.label.mask_ops import UNLABELED, polygon_pixels


def _near_stroke(shape, points, radius):
    """Pixels whose centre is within ``radius`` of the polyline ``points`` (independent of the code)."""
    rows, cols = np.mgrid[: shape[0], : shape[1]]
    x, y = cols + 0.5, rows + 0.5
    near = np.zeros(shape, bool)
    for (ax, ay), (bx, by) in zip(points, points[1:] or points):
        length2 = (bx - ax) ** 2 + (by - ay) ** 2
        t = np.clip(((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / length2, 0, 1) if length2 else 0
        near |= np.hypot(x - (ax + t * (bx - ax)), y - (ay + t * (by - ay))) <= radius
    return near


def _image(array: np.ndarray) -> QImage:
    height, width = array.shape[:2]
    return QImage(np.ascontiguousarray(array).data, width, height, 3 * width, QImage.Format_RGB888).copy()


@pytest.fixture
def editor(qtbot):
    """An editor on a shown canvas with a 90x60 grey photo, painting class 2 of 3."""
    canvas = BoxCanvas()
    qtbot.addWidget(canvas)
    canvas.resize(400, 300)
    canvas.show()
    qtbot.waitExposed(canvas)
    canvas.set_image(_image(np.full((60, 90, 3), 120, np.uint8)))
    editor = MaskEditor(canvas, canvas)
    editor.activate()
    editor.set_mask(np.full((60, 90), UNLABELED, np.uint8), 3)
    editor.set_class(2, 3)
    canvas.setFocus()
    return editor


def _stroke(editor, points, button=Qt.LeftButton):
    """Press, move through and release at ``points`` (photo pixels); the scene points the editor got."""
    canvas = editor.canvas
    view = [canvas.mapFromScene(QPointF(*p)) for p in points]
    QTest.mousePress(canvas.viewport(), button, Qt.NoModifier, view[0])
    for point in view[1:]:
        QTest.mouseMove(canvas.viewport(), point)
    QTest.mouseRelease(canvas.viewport(), button, Qt.NoModifier, view[-1])
    return [(p.x(), p.y()) for p in (canvas.mapToScene(v) for v in view)]


def _click(editor, point):
    return _stroke(editor, [point])[0]


def test_the_brush_paints_exactly_the_pixels_under_it(qtbot, editor):
    editor.set_size(6)
    edits = []
    editor.edited.connect(edits.append)
    got = _stroke(editor, [(10, 10), (30, 20), (60, 22), (70, 45)])
    expected = np.full((60, 90), UNLABELED, np.uint8)
    expected[_near_stroke(expected.shape, got, 3.0)] = 2
    assert np.array_equal(editor.mask, expected)
    assert len(edits) == 1 and np.array_equal(edits[0], expected)  # one edit per stroke, a copy
    assert edits[0] is not editor.mask


def test_the_eraser_sets_not_labeled_and_undo_redo_restore_exactly(qtbot, editor):
    editor.set_size(10)
    _stroke(editor, [(5, 30), (85, 30)])
    painted = editor.mask.copy()
    QTest.keyClick(editor.canvas, Qt.Key_E)
    assert editor.tool == "eraser"
    editor.set_size(4)
    got = _stroke(editor, [(40, 10), (40, 50)])
    erased = _near_stroke(painted.shape, got, 2.0)
    assert (editor.mask[erased] == UNLABELED).all()
    assert np.array_equal(editor.mask[~erased], painted[~erased])
    after_erase = editor.mask.copy()
    assert editor.undo() and np.array_equal(editor.mask, painted)
    assert editor.undo() and (editor.mask == UNLABELED).all()
    assert not editor.undo()
    assert editor.redo() and np.array_equal(editor.mask, painted)
    assert editor.redo() and np.array_equal(editor.mask, after_erase)


def test_a_polygon_closes_on_its_first_point_and_fills_its_inside(qtbot, editor):
    QTest.keyClick(editor.canvas, Qt.Key_P)
    corners = [_click(editor, p) for p in ((20, 10), (70, 15), (60, 50), (25, 40))]
    assert (editor.mask == UNLABELED).all()  # nothing until it closes
    _click(editor, (20.5, 10.5))  # near the first point
    expected = np.where(polygon_pixels(corners, (60, 90)), 2, UNLABELED)
    assert np.array_equal(editor.mask, expected)


def test_enter_closes_a_polygon_and_escape_drops_one(qtbot, editor):
    editor.set_tool("polygon")
    for point in ((10, 10), (40, 10), (25, 40)):
        _click(editor, point)
    QTest.keyClick(editor.canvas, Qt.Key_Escape)
    assert (editor.mask == UNLABELED).all() and not editor._polygon
    corners = [_click(editor, p) for p in ((10, 10), (40, 10), (25, 40))]
    QTest.keyClick(editor.canvas, Qt.Key_Return)
    assert np.array_equal(editor.mask == 2, polygon_pixels(corners, (60, 90)))


def test_fill_fills_the_outline_it_is_clicked_in(qtbot, editor):
    editor.set_size(3)
    editor.set_class(1, 3)
    _stroke(editor, [(20, 10), (60, 10), (60, 50), (20, 50), (20, 10)])  # a closed outline of class 1
    outline = editor.mask == 1
    editor.set_class(0, 3)
    QTest.keyClick(editor.canvas, Qt.Key_F)
    _click(editor, (40, 30))
    inside = np.zeros_like(outline)
    inside[12:48, 22:58] = True
    assert (editor.mask[inside & ~outline] == 0).all()
    assert (editor.mask[outline] == 1).all()
    assert (editor.mask[~inside & ~outline] == UNLABELED).all()  # the outside stays not labeled


def test_the_wheel_zooms_around_the_pointer(qtbot, editor):
    canvas = editor.canvas
    for _ in range(3):
        editor.zoom(1.25)  # the photo is now larger than the view, which can scroll
    at = canvas.mapFromScene(QPointF(50, 35))
    before = canvas.transform().m11()
    event = QWheelEvent(
        QPointF(at), QPointF(canvas.viewport().mapToGlobal(at)), QPoint(), QPoint(0, 120),
        Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False,
    )  # fmt: skip
    QApplication.sendEvent(canvas.viewport(), event)
    assert canvas.transform().m11() == pytest.approx(before * 1.25)
    after = canvas.mapFromScene(QPointF(50, 35))
    assert abs(after.x() - at.x()) <= 1 and abs(after.y() - at.y()) <= 1


@pytest.fixture
def disc_editor(qtbot):
    """An editor in assist mode on a red disc on a textured grey 160x120 photo; returns it and the disc."""
    rng = np.random.default_rng(3)
    photo = np.clip(rng.normal(110, 18, (120, 160, 3)), 0, 255)
    rows, cols = np.mgrid[:120, :160]
    disc = np.hypot(cols + 0.5 - 90, rows + 0.5 - 60) < 25
    photo[disc] = np.clip(rng.normal((200, 50, 45), 15, (disc.sum(), 3)), 0, 255)
    canvas = BoxCanvas()
    qtbot.addWidget(canvas)
    canvas.resize(500, 400)
    canvas.show()
    canvas.set_image(_image(photo.astype(np.uint8)))
    editor = MaskEditor(canvas, canvas)
    editor.activate()
    editor.set_mask(np.full((120, 160), UNLABELED, np.uint8), 2)
    editor.set_class(1, 2)
    QTest.keyClick(canvas, Qt.Key_A)
    assert editor.tool == "assist"
    return editor, disc


def test_the_assist_turns_a_rough_box_into_the_object(qtbot, disc_editor):
    editor, disc = disc_editor
    with qtbot.waitSignal(editor.edited, timeout=20_000):
        _stroke(editor, [(58, 28), (90, 60), (122, 93)])
    found = editor.mask == 1
    assert (found & disc).sum() / (found | disc).sum() > 0.85
    assert not editor.busy and editor.message == ""


def test_a_click_adds_the_region_under_it_and_size_sets_how_large(qtbot, disc_editor):
    editor, disc = disc_editor
    editor.set_size(5)
    with qtbot.waitSignal(editor.edited, timeout=20_000):
        _click(editor, (90, 60))
    small = editor.mask == 1
    assert small.sum() > 20 and (small & disc).sum() / small.sum() > 0.9  # on the object only
    editor.undo()
    editor.set_size(16)
    with qtbot.waitSignal(editor.edited, timeout=20_000):
        _click(editor, (90, 60))
    large = editor.mask == 1
    assert large.sum() > 2 * small.sum() and (large & disc).sum() / large.sum() > 0.9


# -- on the Label page --------------------------------------------------------------------------------


@pytest.fixture
def mask_project(ws, tmp_path):
    """A segmentation project with three 80x60 photos and the classes car, road and sky."""
    folder = tmp_path / "street"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for index in range(3):
        Image.fromarray(rng.integers(0, 255, (60, 80, 3), dtype=np.uint8)).save(folder / f"s{index}.png")
    ws.create_project("street", "segmentation")
    ws.import_data("street", folder, format="flat")
    for name in ("car", "road", "sky"):
        ws.add_class("street", name)
    return "street"


def test_on_the_label_page_keys_pick_the_class_strokes_are_saved_and_come_back(
    qtbot, ws, mask_project, show_widget
):
    page = LabelPage(ws)
    page.resize(1100, 760)
    show_widget(page)
    page.set_project("street")
    qtbot.waitUntil(lambda: page.sample is not None and page.is_idle(), timeout=10_000)
    annotator = page.annotator
    assert isinstance(annotator, MaskAnnotator)
    assert annotator.tools.isVisible() and not page.undo_button.isVisible()
    first = page.sample.id

    page.press_key("2")  # road
    assert annotator.current == "road" and annotator.editor.value == 1
    assert [b.isChecked() for b in page.class_buttons] == [False, True, False]
    page.canvas.setFocus()
    got = _stroke(annotator.editor, [(10, 30), (70, 30)])
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    road = _near_stroke((60, 80), got, annotator.editor.size / 2)
    saved = ws.sample_mask(first)
    assert np.array_equal(saved == 1, road) and (saved[~road] == UNLABELED).all()
    assert page.counts["road"] == 1 and "painted" in page.position.text()

    page.undo()  # the page's Ctrl+Z goes to the mask's own history
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    assert ws.sample_mask(first) is None and page.counts["road"] == 0
    annotator.redo()
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    assert np.array_equal(ws.sample_mask(first) == 1, road)

    page.add_class("bus")  # sorts first: road becomes class 2, its pixels stay road
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    assert np.array_equal(annotator.editor.mask == 2, road) and annotator.editor.value == 2

    page.next()
    qtbot.waitUntil(lambda: page.sample.id != first and page.is_idle(), timeout=10_000)
    assert (annotator.editor.mask == UNLABELED).all() and annotator.editor.mask.shape == (60, 80)
    page.previous()
    qtbot.waitUntil(lambda: page.sample.id == first and page.is_idle(), timeout=10_000)
    assert np.array_equal(annotator.editor.mask, ws.sample_mask(first))  # the saved mask is shown again
    assert np.array_equal(annotator.editor.mask == 2, road)

    page.clear_annotations()
    qtbot.waitUntil(page.is_idle, timeout=10_000)
    assert ws.sample_mask(first) is None
    assert annotator.undo() and np.array_equal(annotator.editor.mask == 2, road)  # Clear can be undone


def test_each_class_button_shows_the_colour_its_class_is_painted_in(
    qtbot, ws, mask_project, classification_project, show_widget
):
    from PySide6.QtGui import QColor

    from modeldesk.ui.pages.label.class_panel import SWATCH
    from modeldesk.ui.pages.label.mask_overlay import class_color

    page = LabelPage(ws)
    page.resize(1100, 760)
    show_widget(page)
    page.set_project("street")
    qtbot.waitUntil(lambda: page.sample is not None and page.is_idle(), timeout=10_000)
    seen = []
    for index, button in enumerate(page.class_buttons):
        icon = button.icon()
        assert not icon.isNull(), button.name
        centre = QColor(icon.pixmap(SWATCH, SWATCH).toImage().pixel(SWATCH // 2, SWATCH // 2))
        assert centre.name() == class_color(index).name(), button.name  # the overlay's colour
        seen.append(centre.name())
    assert len(set(seen)) == len(seen) == 3

    page.set_project(classification_project)  # classes without colours: no swatches
    qtbot.waitUntil(
        lambda: page.sample is not None and page.is_idle() and page.labels != ["car", "road", "sky"]
    )
    assert page.class_buttons and all(button.icon().isNull() for button in page.class_buttons)


def test_a_narrow_label_page_says_the_photos_state_whole_on_two_lines(qtbot, ws, tmp_path, show_widget):
    from PySide6.QtGui import QFontMetrics

    folder = tmp_path / "drive"
    folder.mkdir()
    Image.fromarray(np.full((60, 80, 3), 90, np.uint8)).save(folder / "0006R0_f01380.png")  # camvid's names
    ws.create_project("drive", "segmentation")
    ws.import_data("drive", folder, format="flat")
    ws.add_class("drive", "road")
    page = LabelPage(ws)
    page.resize(570, 540)  # the page of a 760 x 540 window
    show_widget(page)
    page.set_project("drive")
    qtbot.waitUntil(lambda: page.sample is not None and page.is_idle(), timeout=10_000)
    page.canvas.setFocus()
    _stroke(page.annotator.editor, [(10, 30), (70, 30)])
    qtbot.waitUntil(lambda: page.is_idle() and "painted" in page.position.text(), timeout=10_000)
    QApplication.processEvents()
    label, metrics = page.position, QFontMetrics(page.position.font())
    lines = label.lines()
    assert len(lines) == 2 and "painted, 1 class" in lines[1]
    assert all(metrics.horizontalAdvance(line) <= label.width() for line in lines)  # nothing cut
    assert label.height() >= 2 * metrics.lineSpacing()
    page.resize(1300, 760)
    QApplication.processEvents()
    assert label.lines() == [label.text()]
