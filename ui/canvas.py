"""The labeling canvas: shows one image; for detection, draw, move, resize and delete boxes.

Scene coordinates are the image's pixels (after EXIF orientation), the unit the store keeps boxes
in, so a box read back from :meth:`BoxCanvas.boxes` can go straight to ``ws.annotate(id, "boxes", ...)``.
"""

from __future__ import annotations

import zlib
from typing import NamedTuple

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QImage, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPixmapItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsView,
)


class Box(NamedTuple):
    """A box as drawn: its label and corners in image pixels (``x0 < x1``, ``y0 < y1``)."""

    label: str
    x0: float
    y0: float
    x1: float
    y1: float


#: Boxes smaller than this (image pixels) after a drag are treated as a click, not a box.
MIN_BOX = 4.0
HANDLE = 9.0  # handle size in screen pixels
MAX_ZOOM = 3.0  # small images are enlarged at most this much to fit the view
PALETTE = ("#ff5c5c", "#3fb6ff", "#43d17a", "#ffb020", "#b072ff", "#ff7ad9", "#2ed3c6", "#c7d23a")


def label_color(label: str) -> QColor:
    """A stable, distinct colour per label name."""
    return QColor(PALETTE[zlib.crc32(label.encode("utf-8")) % len(PALETTE)])


class _Handle(QGraphicsRectItem):
    """A corner grip of a :class:`BoxItem`; dragging it resizes the box."""

    def __init__(self, box: BoxItem, corner: int):
        super().__init__(-HANDLE / 2, -HANDLE / 2, HANDLE, HANDLE, box)
        self.corner = corner  # 0 top-left, 1 top-right, 2 bottom-right, 3 bottom-left
        self.setFlag(QGraphicsItem.ItemIgnoresTransformations, True)
        self.setBrush(QBrush(QColor("white")))
        self.setPen(QPen(QColor("#222"), 1))
        self.setCursor(Qt.SizeFDiagCursor if corner in (0, 2) else Qt.SizeBDiagCursor)
        self.setAcceptedMouseButtons(Qt.LeftButton)

    def mousePressEvent(self, event) -> None:
        event.accept()

    def mouseMoveEvent(self, event) -> None:
        self.parentItem().move_corner(self.corner, self.parentItem().mapFromScene(event.scenePos()))

    def mouseReleaseEvent(self, event) -> None:
        self.parentItem().normalise()
        event.accept()


class _Tag(QGraphicsItem):
    """The label of a box: white text on the box's colour, the same size at any zoom."""

    def __init__(self, parent: QGraphicsItem):
        super().__init__(parent)
        self.setFlag(QGraphicsItem.ItemIgnoresTransformations, True)
        self.text = ""
        self.color = QColor("#000")

    def set(self, text: str, color: QColor) -> None:
        self.prepareGeometryChange()
        self.text, self.color = text, QColor(color)
        self.update()

    def _size(self) -> QRectF:
        metrics = QFontMetricsF(QFont())
        return QRectF(
            0, -metrics.height() - 4, metrics.horizontalAdvance(self.text) + 10, metrics.height() + 4
        )

    def boundingRect(self) -> QRectF:
        return self._size()

    def paint(self, painter, _option, _widget=None) -> None:
        rect = self._size()
        painter.setPen(Qt.NoPen)
        painter.setBrush(self.color)
        painter.drawRoundedRect(rect, 3, 3)
        painter.setPen(QColor("#10151c") if self.color.lightness() > 170 else QColor("white"))
        painter.drawText(rect, Qt.AlignCenter, self.text)


class BoxItem(QGraphicsRectItem):
    """One labeled box: movable, selectable, resizable by its corner handles."""

    def __init__(self, label: str, rect: QRectF, bounds: QRectF):
        super().__init__(0, 0, rect.width(), rect.height())
        self.bounds = bounds
        self.setPos(rect.topLeft())
        self.setFlags(
            QGraphicsItem.ItemIsMovable
            | QGraphicsItem.ItemIsSelectable
            | QGraphicsItem.ItemSendsGeometryChanges
        )
        self.caption = _Tag(self)
        self.handles = [_Handle(self, corner) for corner in range(4)]
        self.set_label(label)
        self._place_handles()
        self._show_handles(False)

    def set_label(self, label: str) -> None:
        self.label = label
        color = label_color(label)
        pen = QPen(color, 2)
        pen.setCosmetic(True)
        self.setPen(pen)
        fill = QColor(color)
        fill.setAlpha(40)
        self.setBrush(fill)
        self.caption.set(label, color)
        self.update()

    def scene_rect(self) -> QRectF:
        return self.mapRectToScene(self.rect())

    def to_box(self) -> Box:
        r = self.scene_rect()
        return Box(
            self.label, round(r.left(), 2), round(r.top(), 2), round(r.right(), 2), round(r.bottom(), 2)
        )

    def move_corner(self, corner: int, point: QPointF) -> None:
        """Drag ``corner`` to ``point`` (item coordinates), kept inside the image."""
        scene_point = self.mapToScene(point)
        scene_point.setX(min(max(scene_point.x(), self.bounds.left()), self.bounds.right()))
        scene_point.setY(min(max(scene_point.y(), self.bounds.top()), self.bounds.bottom()))
        point = self.mapFromScene(scene_point)
        r = QRectF(self.rect())
        if corner == 0:
            r.setTopLeft(point)
        elif corner == 1:
            r.setTopRight(point)
        elif corner == 2:
            r.setBottomRight(point)
        else:
            r.setBottomLeft(point)
        self.prepareGeometryChange()
        self.setRect(r)
        self._place_handles()

    def normalise(self) -> None:
        """After a resize: positive size, and the rectangle's origin at the item's position."""
        scene = self.scene_rect().normalized()
        self.prepareGeometryChange()
        self.setPos(scene.topLeft())
        self.setRect(0, 0, scene.width(), scene.height())
        self._place_handles()

    def _place_handles(self) -> None:
        r = self.rect()
        for handle, point in zip(self.handles, (r.topLeft(), r.topRight(), r.bottomRight(), r.bottomLeft())):
            handle.setPos(point)
        self.caption.setPos(r.topLeft())

    def _show_handles(self, shown: bool) -> None:
        for handle in self.handles:
            handle.setVisible(shown)

    def itemChange(self, change, value):
        if change == QGraphicsItem.ItemPositionChange and self.bounds is not None:
            r = self.rect()
            x = min(max(value.x(), self.bounds.left() - r.left()), self.bounds.right() - r.right())
            y = min(max(value.y(), self.bounds.top() - r.top()), self.bounds.bottom() - r.bottom())
            return QPointF(x, y)
        if change == QGraphicsItem.ItemSelectedHasChanged:
            self._show_handles(bool(value))
        return super().itemChange(change, value)


class BoxCanvas(QGraphicsView):
    """Shows an image; with ``drawing`` enabled, boxes are drawn by dragging on the image.

    Signals
    -------
    boxes_edited(list)
        The user added, moved, resized, relabeled or deleted a box; carries :meth:`boxes`.
    """

    boxes_edited = Signal(list)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.setRenderHints(QPainter.Antialiasing | QPainter.SmoothPixmapTransform)
        self.setDragMode(QGraphicsView.NoDrag)
        self.setTransformationAnchor(QGraphicsView.AnchorViewCenter)
        self.setBackgroundBrush(QColor("#15181d"))
        self.setFrameShape(QGraphicsView.NoFrame)
        self.setFocusPolicy(Qt.StrongFocus)
        self.image_item = QGraphicsPixmapItem()
        self.image_item.setTransformationMode(Qt.SmoothTransformation)
        self.scene().addItem(self.image_item)
        self.bounds = QRectF()
        self.drawing = False
        self.current_label = ""
        self._draft: QGraphicsRectItem | None = None
        self._origin = QPointF()
        self._before: list[Box] = []
        self.message = ""

    # -- content -------------------------------------------------------------------------------

    def set_image(self, image: QImage | None, size: tuple[int, int] | None = None) -> None:
        """Show ``image``; ``size`` is the original (width, height) when ``image`` was downscaled."""
        self.clear_boxes()
        if image is None or image.isNull():
            self.image_item.setPixmap(QPixmap())
            self.bounds = QRectF()
            self.viewport().update()
            return
        pixmap = QPixmap.fromImage(image)
        self.image_item.setPixmap(pixmap)
        width, height = size or (image.width(), image.height())
        self.image_item.setScale(width / max(1, image.width()))
        self.bounds = QRectF(0, 0, width, height)
        self.scene().setSceneRect(self.bounds)
        self.fit()

    def set_boxes(self, boxes) -> None:
        """Replace the shown boxes (anything with ``label``, ``x0``, ``y0``, ``x1``, ``y1``; image pixels)."""
        self.clear_boxes()
        for box in boxes:
            self._add(box.label, QRectF(QPointF(box.x0, box.y0), QPointF(box.x1, box.y1)))

    def clear_boxes(self) -> None:
        for item in self.box_items():
            self.scene().removeItem(item)

    def box_items(self) -> list[BoxItem]:
        return [item for item in self.scene().items(Qt.AscendingOrder) if isinstance(item, BoxItem)]

    def boxes(self) -> list[Box]:
        """The boxes as drawn, in image pixels."""
        return [item.to_box() for item in self.box_items()]

    def _add(self, label: str, rect: QRectF) -> BoxItem:
        item = BoxItem(label, rect.normalized().intersected(self.bounds), self.bounds)
        self.scene().addItem(item)
        return item

    def fit(self) -> None:
        """Fit the image in the view, enlarging small images at most :data:`MAX_ZOOM` times."""
        if self.bounds.isEmpty():
            return
        self.fitInView(self.bounds.adjusted(-8, -8, 8, 8), Qt.KeepAspectRatio)
        zoom = self.transform().m11()
        if zoom > MAX_ZOOM:
            self.resetTransform()
            self.scale(MAX_ZOOM, MAX_ZOOM)
            self.centerOn(self.bounds.center())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()

    # -- editing -------------------------------------------------------------------------------

    def delete_selected(self) -> bool:
        """Delete the selected boxes; True if any was deleted."""
        selected = [item for item in self.box_items() if item.isSelected()]
        for item in selected:
            self.scene().removeItem(item)
        if selected:
            self.boxes_edited.emit(self.boxes())
        return bool(selected)

    def relabel_selected(self, label: str) -> bool:
        """Give the selected boxes ``label``; True if any changed."""
        selected = [item for item in self.box_items() if item.isSelected() and item.label != label]
        for item in selected:
            item.set_label(label)
        if selected:
            self.boxes_edited.emit(self.boxes())
        return bool(selected)

    def mousePressEvent(self, event) -> None:
        self._before = self.boxes()
        point = self.mapToScene(event.position().toPoint())
        over_box = any(
            isinstance(item, (BoxItem, _Handle)) for item in self.items(event.position().toPoint())
        )
        if (
            self.drawing
            and event.button() == Qt.LeftButton
            and not over_box
            and self.bounds.contains(point)
            and self.current_label
        ):
            self.scene().clearSelection()
            self._origin = point
            self._draft = QGraphicsRectItem(QRectF(point, point))
            pen = QPen(label_color(self.current_label), 2, Qt.DashLine)
            pen.setCosmetic(True)
            self._draft.setPen(pen)
            self.scene().addItem(self._draft)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:
        if self._draft is not None:
            point = self.mapToScene(event.position().toPoint())
            point.setX(min(max(point.x(), self.bounds.left()), self.bounds.right()))
            point.setY(min(max(point.y(), self.bounds.top()), self.bounds.bottom()))
            self._draft.setRect(QRectF(self._origin, point).normalized())
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event) -> None:
        if self._draft is not None:
            rect = self._draft.rect()
            self.scene().removeItem(self._draft)
            self._draft = None
            if rect.width() >= MIN_BOX and rect.height() >= MIN_BOX:
                item = self._add(self.current_label, rect)
                item.setSelected(True)
                self.boxes_edited.emit(self.boxes())
            event.accept()
            return
        super().mouseReleaseEvent(event)
        after = self.boxes()
        if after != self._before:
            self.boxes_edited.emit(after)

    def drawForeground(self, painter, rect) -> None:
        if self.message:
            painter.save()
            painter.resetTransform()
            painter.setPen(QColor("#c9d1dc"))
            painter.drawText(self.viewport().rect(), Qt.AlignCenter, self.message)
            painter.restore()
