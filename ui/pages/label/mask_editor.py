"""Editing a class mask on the labeling canvas: brush, eraser, polygon, fill and the assist, with
zoom, pan, undo and redo.

The editor listens to the canvas's mouse and keys while it is active (an event filter, so the box
canvas itself is unchanged) and edits its own copy of the mask in place; after each finished edit
(a stroke, a polygon, a fill, an assist region, an undo) it sends a copy through :attr:`edited`.

Mouse: the left button uses the tool; the right or middle button drags the photo; the wheel zooms
around the pointer. Keys: B brush, E eraser, P polygon, F fill, A assist, [ and ] brush size,
Enter or a double click closes a polygon, Backspace drops its last point, Esc drops it.
"""

from __future__ import annotations

import logging
import math

import numpy as np
from PySide6.QtCore import QEvent, QObject, QPointF, Qt, Signal
from PySide6.QtGui import QImage

from ...job_watcher import TaskGroup
from ...page import LatestTask
from .mask_assist import region_at, region_in_box, superpixels
from .mask_ops import UNLABELED, MaskHistory, fill_at, fill_polygon, paint_segment, set_where, union
from .mask_overlay import BrushOutline, Draft, MaskOverlay, class_color

log = logging.getLogger(__name__)

#: tool name -> what it is called and its key.
TOOLS = {
    "brush": ("Brush", "B"),
    "eraser": ("Eraser", "E"),
    "polygon": ("Polygon", "P"),
    "fill": ("Fill", "F"),
    "assist": ("Assist", "A"),
}
CLOSE_DISTANCE = 10.0  # screen pixels: a click this near the first point closes the polygon
DRAG_DISTANCE = 4.0  # screen pixels: a press that moves less is a click
ZOOM_LIMITS = (0.05, 40.0)
SIZE_LIMITS = (1, 200)  # brush diameter in photo pixels


class MaskEditor(QObject):
    """The mask tools on ``canvas`` (a :class:`~modeldesk.ui.canvas.BoxCanvas`).

    Signals
    -------
    edited(object)
        The user finished an edit; carries a copy of the mask.
    state_changed()
        The tool, size, class, undo/redo or the busy message changed.
    """

    edited = Signal(object)
    state_changed = Signal()

    def __init__(self, canvas, parent: QObject | None = None):
        super().__init__(parent)
        self.canvas = canvas
        self._viewport = canvas.viewport()
        self.overlay, self.outline, self.draft = MaskOverlay(), BrushOutline(), Draft()
        for item in (self.overlay, self.outline, self.draft):
            canvas.scene().addItem(item)
            item.hide()
        self.mask: np.ndarray | None = None
        self.history = MaskHistory()
        self.tool, self.size, self.value, self.class_count = "brush", 12, 0, 0
        self.allowed = tuple(TOOLS)  # the tools its keys may pick (an annotator can offer fewer)
        self.message = ""
        self.active = False
        self._stroke: tuple | None = None  # (last point, changed rectangle) while the brush is down
        self._polygon: list[QPointF] = []
        self._press: QPointF | None = None  # the assist's press, in view coordinates
        self._pan: QPointF | None = None
        self._segments: tuple[int, np.ndarray] | None = None  # (region area, superpixels)
        self._pending: list[tuple[float, float]] = []  # clicks waiting for the superpixels
        tasks = TaskGroup(self._failed, self)
        self._regions, self._objects = LatestTask(tasks, self), LatestTask(tasks, self)

    # -- life -----------------------------------------------------------------------------------

    def activate(self) -> None:
        if self.active:
            return
        self.active = True
        self._viewport.setMouseTracking(True)
        self._viewport.installEventFilter(self)
        self.canvas.installEventFilter(self)
        self.overlay.show()

    def deactivate(self) -> None:
        self.active = False
        self._viewport.removeEventFilter(self)
        self.canvas.removeEventFilter(self)
        self._drop_drafts()
        for item in (self.overlay, self.outline):
            item.hide()

    def set_mask(self, mask: np.ndarray | None, class_count: int) -> None:
        """Edit a copy of ``mask`` (a new photo: history, drafts and the assist start over)."""
        self._regions.cancel()  # their results were for the photo before
        self._objects.cancel()
        self._segments, self._pending = None, []
        self._set_message("")
        self.mask = None if mask is None else np.array(mask, dtype=np.uint8, order="C", copy=True)
        self.class_count = class_count
        self.history.clear()
        self._drop_drafts()
        self.overlay.set_mask(self.mask, class_count)
        self.state_changed.emit()

    def replace(self, mask: np.ndarray) -> None:
        """Show ``mask`` instead (Clear, a suggestion taken), as one step that can be undone."""
        if self.mask is None or mask.shape != self.mask.shape:
            self.set_mask(mask, self.class_count)
            return
        self.history.record_replace(self.mask, mask)
        np.copyto(self.mask, mask)
        self.overlay.update()
        self.state_changed.emit()

    def remap(self, lut: np.ndarray) -> None:
        """Renumber the classes of the mask and its history (``lut``: old value -> new value)."""
        if self.mask is not None:
            np.copyto(self.mask, lut[self.mask])
            self.history.remap(lut)
            self.overlay.update()

    def set_class(self, index: int, count: int) -> None:
        """Paint with the class at ``index`` of ``count`` classes."""
        self.value, self.class_count = index, count
        self.overlay.set_class_count(count)
        self.draft.set_color(class_color(index))
        self.state_changed.emit()

    def set_tool(self, tool: str) -> None:
        self._drop_drafts()
        self.tool = tool
        self.outline.setVisible(False)
        self.state_changed.emit()

    def set_size(self, size: int) -> None:
        self.size = int(min(max(size, SIZE_LIMITS[0]), SIZE_LIMITS[1]))
        if self.outline.isVisible():
            self.outline.place(self.outline.rect().center(), self.size)
        self.state_changed.emit()

    # -- edits ----------------------------------------------------------------------------------

    def _begin(self) -> bool:
        if self.mask is None:
            return False
        self.history.begin(self.mask)
        return True

    def _commit(self, rect) -> None:
        self.overlay.changed(rect)
        if self.history.commit(self.mask, rect):
            self.edited.emit(self.mask.copy())
        self.state_changed.emit()

    def undo(self) -> bool:
        """Undo the last edit of this photo; False when there is none."""
        return self._step(self.history.undo)

    def redo(self) -> bool:
        return self._step(self.history.redo)

    def _step(self, step) -> bool:
        if self.mask is None:
            return False
        self._drop_drafts()
        rect = step(self.mask)
        if rect is None:
            return False
        self.overlay.changed(rect)
        self.edited.emit(self.mask.copy())
        self.state_changed.emit()
        return True

    def paint(self, a: QPointF, b: QPointF) -> None:
        """Brush (or erase) from ``a`` to ``b`` (scene points); part of the stroke under way."""
        value = UNLABELED if self.tool == "eraser" else self.value
        rect = paint_segment(self.mask, (a.x(), a.y()), (b.x(), b.y()), self.size, value)
        self.overlay.changed(rect)
        self._stroke = (b, union(self._stroke[1], rect) if self._stroke else rect)

    def close_polygon(self) -> None:
        """Fill the polygon drawn so far with the class (it needs three points)."""
        points, self._polygon = self._polygon, []
        self.draft.clear()
        if len(points) >= 3 and self._begin():
            self._commit(fill_polygon(self.mask, [(p.x(), p.y()) for p in points], self.value))

    def fill(self, point: QPointF) -> None:
        if self._begin():
            self._commit(fill_at(self.mask, point.x(), point.y(), self.value))

    def apply_region(self, region) -> None:
        """Give the assist's region (a boolean array) the class."""
        if region is not None and self._begin():
            self._commit(set_where(self.mask, region, self.value))

    # -- the assist (worker threads) -------------------------------------------------------------

    @property
    def region_area(self) -> int:
        """The assist's region size in photo pixels: the brush size sets it too (about 1.4x its side)."""
        return max(64, 2 * self.size * self.size)

    def assist_click(self, point: QPointF) -> None:
        """Add the photo's region (superpixel) under ``point``."""
        if self.mask is None:
            return
        area = self.region_area
        if self._segments is not None and self._segments[0] == area:
            self.apply_region(region_at(self._segments[1], point.x(), point.y(), self.mask.shape))
            return
        self._pending.append((point.x(), point.y()))
        if not self._regions.running:
            work = lambda photo: (area, superpixels(photo, area))  # noqa: E731
            self._run(self._regions, work, self._segments_ready, "Finding the photo's regions…")

    def assist_box(self, a: QPointF, b: QPointF) -> None:
        """Add the object found inside the box ``a``-``b`` (a box drawn before it is done is dropped)."""
        if self.mask is not None:
            box, shape = (a.x(), a.y(), b.x(), b.y()), self.mask.shape
            self._run(
                self._objects,
                lambda photo: region_in_box(photo, box, shape),
                self.apply_region,
                "Finding the object…",
            )

    def _run(self, latest: LatestTask, work, done, message: str) -> None:
        photo = self._photo()
        if photo is None:
            return
        self._set_message(message)

        def finished(result):
            self._set_message("")
            done(result)

        latest.start(lambda _state: work(photo), finished, on_failed=self._failed)

    def _failed(self, *reason) -> None:
        log.error("the labeling assist failed: %s", reason)
        self._pending.clear()
        self._set_message("The assist could not work on this photo; use the brush or polygon.")

    def _segments_ready(self, segments: tuple[int, np.ndarray]) -> None:
        self._segments = segments
        pending, self._pending = self._pending, []
        for x, y in pending:
            self.apply_region(region_at(segments[1], x, y, self.mask.shape))

    def _photo(self) -> np.ndarray | None:
        """The shown photo as an RGB array (UI thread; the worker gets this copy)."""
        image = self.canvas.image_item.pixmap().toImage()
        if image.isNull():
            return None
        image = image.convertToFormat(QImage.Format_RGB888)
        width, height, line = image.width(), image.height(), image.bytesPerLine()
        raw = np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes())
        return raw.reshape(height, line)[:, : width * 3].reshape(height, width, 3).copy()

    @property
    def busy(self) -> bool:
        """True while the assist works."""
        return self._regions.running or self._objects.running

    def _set_message(self, text: str) -> None:
        if text != self.message:
            self.message = text
            self.state_changed.emit()

    # -- zoom and pan ----------------------------------------------------------------------------

    def zoom(self, factor: float, at: QPointF | None = None) -> None:
        """Zoom by ``factor`` keeping the scene point under ``at`` (view coordinates) in place."""
        canvas = self.canvas
        current = canvas.transform().m11()
        factor = min(max(current * factor, ZOOM_LIMITS[0]), ZOOM_LIMITS[1]) / current
        at = at if at is not None else QPointF(canvas.viewport().rect().center())
        before = canvas.mapToScene(at.toPoint())
        canvas.scale(factor, factor)
        self._scroll(QPointF(canvas.mapFromScene(before)) - at)

    def _scroll(self, delta: QPointF) -> None:
        h, v = self.canvas.horizontalScrollBar(), self.canvas.verticalScrollBar()
        h.setValue(h.value() + round(delta.x()))
        v.setValue(v.value() + round(delta.y()))

    # -- mouse and keys ---------------------------------------------------------------------------

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt name)
        kind = event.type()
        # other events first, untouched: they also come while the canvas is being destroyed
        if kind not in _FILTERED or not self.active or self.mask is None:
            return False
        if watched is self._viewport:
            if kind == QEvent.Leave:
                self.outline.hide()
                return False
            handler = {
                QEvent.MouseButtonPress: self._mouse_press,
                QEvent.MouseButtonDblClick: self._double_click,
                QEvent.MouseMove: self._mouse_move,
                QEvent.MouseButtonRelease: self._mouse_release,
                QEvent.Wheel: self._wheel,
            }.get(kind)
            return handler(event) if handler is not None else False
        if kind == QEvent.ShortcutOverride and self._polygon and event.key() in _POLYGON_KEYS:
            event.accept()  # Enter and Backspace reach the polygon, not the page's shortcuts
            return True
        if kind == QEvent.KeyPress:
            return self._key(event)
        return False

    def _scene(self, event) -> QPointF:
        return self.canvas.mapToScene(event.position().toPoint())

    def _mouse_press(self, event) -> bool:
        if event.button() in (Qt.RightButton, Qt.MiddleButton):
            self._pan = event.position()
            self.canvas.viewport().setCursor(Qt.ClosedHandCursor)
            return True
        if event.button() != Qt.LeftButton:
            return False
        point = self._scene(event)
        if self.tool in ("brush", "eraser"):
            if self._begin():
                self._stroke = None
                self.paint(point, point)
        elif self.tool == "polygon":
            if len(self._polygon) >= 3 and self._near_first(event.position()):
                self.close_polygon()
            else:
                self._polygon.append(point)
                self.draft.show_polygon(self._polygon, point)
                self.draft.show()
        elif self.tool == "fill":
            self.fill(point)
        elif self.tool == "assist":
            self._press = event.position()
        return True

    def _double_click(self, event) -> bool:
        if self.tool == "polygon" and event.button() == Qt.LeftButton:
            self.close_polygon()
            return True
        return self._mouse_press(event)

    def _mouse_move(self, event) -> bool:
        if self._pan is not None:
            self._scroll(self._pan - event.position())
            self._pan = event.position()
            return True
        point = self._scene(event)
        if self.tool in ("brush", "eraser"):
            self.outline.place(point, self.size)
            if self._stroke is not None:
                self.paint(self._stroke[0], point)
        elif self.tool == "polygon" and self._polygon:
            self.draft.show_polygon(self._polygon, point)
        elif (
            self.tool == "assist" and self._press is not None and self._dragged(self._press, event.position())
        ):
            self.draft.show_box(self.canvas.mapToScene(self._press.toPoint()), point)
            self.draft.show()
        return True

    def _mouse_release(self, event) -> bool:
        if self._pan is not None and event.button() in (Qt.RightButton, Qt.MiddleButton):
            self._pan = None
            self.canvas.viewport().unsetCursor()
            return True
        if event.button() != Qt.LeftButton:
            return False
        if self._stroke is not None:
            rect, self._stroke = self._stroke[1], None
            self._commit(rect)
        elif self._press is not None:
            press, self._press = self._press, None
            self.draft.clear()
            if self._dragged(press, event.position()):
                self.assist_box(self.canvas.mapToScene(press.toPoint()), self._scene(event))
            else:
                self.assist_click(self._scene(event))
        return True

    def _wheel(self, event) -> bool:
        steps = event.angleDelta().y() / 120
        if steps:
            self.zoom(1.25**steps, event.position())
        return True

    def _key(self, event) -> bool:
        key, text = event.key(), event.text().upper()
        tool = next((name for name, (_n, k) in TOOLS.items() if k == text and name in self.allowed), None)
        if tool is not None and not event.modifiers() & (
            Qt.ControlModifier | Qt.AltModifier | Qt.MetaModifier
        ):
            self.set_tool(tool)
        elif text in ("[", "]"):
            self.set_size(round(self.size / 1.25) if text == "[" else math.ceil(self.size * 1.25))
        elif key in (Qt.Key_Return, Qt.Key_Enter) and self._polygon:
            self.close_polygon()
        elif key == Qt.Key_Backspace and self._polygon:
            self._polygon.pop()
            self.draft.show_polygon(self._polygon)
        elif key == Qt.Key_Escape and (self._polygon or self._press is not None):
            self._drop_drafts()
        else:
            return False
        return True

    def _near_first(self, position: QPointF) -> bool:
        first = QPointF(self.canvas.mapFromScene(self._polygon[0]))
        return math.dist((first.x(), first.y()), (position.x(), position.y())) <= CLOSE_DISTANCE

    @staticmethod
    def _dragged(press: QPointF, position: QPointF) -> bool:
        delta = position - press
        return abs(delta.x()) + abs(delta.y()) > DRAG_DISTANCE

    def _drop_drafts(self) -> None:
        self._polygon, self._press, self._stroke = [], None, None
        self.draft.clear()


_FILTERED = frozenset(
    (
        QEvent.MouseButtonPress,
        QEvent.MouseButtonDblClick,
        QEvent.MouseMove,
        QEvent.MouseButtonRelease,
        QEvent.Wheel,
        QEvent.Leave,
        QEvent.ShortcutOverride,
        QEvent.KeyPress,
    )
)
_POLYGON_KEYS = (Qt.Key_Return, Qt.Key_Enter, Qt.Key_Backspace, Qt.Key_Escape)
