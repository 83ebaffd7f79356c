"""What the mask annotator draws over the photo: the mask in its classes' colours (translucent), the
brush's outline, and the polygon or box being drawn.

The overlay shares the mask's memory (an 8-bit indexed QImage over the numpy array, the class index
picking the colour), so an edit shows by repainting only the rectangle it changed.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QPen, qRgba
from PySide6.QtWidgets import QGraphicsEllipseItem, QGraphicsItem, QGraphicsPathItem, QStyleOptionGraphicsItem

from modeldesk.app.mask_views import model_colors

from .mask_ops import UNLABELED

#: Class colours by class index (the project's classes sorted by name) until the project's own are set
#: (:func:`set_class_colors`); its models' mask PNGs and the Evaluate page use the same ones.
MASK_COLORS = list(model_colors(range(UNLABELED)))


def set_class_colors(colors: list[str]) -> None:
    """The colours of the open project's classes (``app.mask_views.project_colors``), by class index."""
    MASK_COLORS[:] = list(colors) or model_colors(range(UNLABELED))


#: How opaque the mask is over the photo.
OPACITY = 0.5


def class_color(index: int) -> QColor:
    """The colour of the class at ``index`` in the project's class list."""
    return QColor(MASK_COLORS[index % len(MASK_COLORS)])


def color_table(count: int, colors=None) -> list[int]:
    """An indexed image's colours: one per class (``colors`` when given, else the classes'), transparent
    for :data:`UNLABELED`, grey for any value past the classes (a class deleted since)."""
    table = [qRgba(128, 128, 128, 255)] * 256
    for index in range(count):
        color = QColor(colors[index % len(colors)]) if colors else class_color(index)
        table[index] = qRgba(color.red(), color.green(), color.blue(), 255)
    table[UNLABELED] = qRgba(0, 0, 0, 0)
    return table


class MaskOverlay(QGraphicsItem):
    """The mask over the photo, one scene unit per mask pixel, drawn without smoothing."""

    def __init__(self, parent: QGraphicsItem | None = None):
        super().__init__(parent)
        self.setFlag(QGraphicsItem.ItemUsesExtendedStyleOption, True)
        self.setAcceptedMouseButtons(Qt.NoButton)
        self.setOpacity(OPACITY)
        self.setZValue(1)
        self.mask: np.ndarray | None = None
        self.image: QImage | None = None
        self.colors: list | None = None  # colours of its own instead of the classes' (e.g. a defect)

    def set_mask(self, mask: np.ndarray | None, class_count: int) -> None:
        """Show ``mask`` (C-contiguous uint8, kept and shared, not copied) in ``class_count`` colours."""
        self.prepareGeometryChange()
        self.mask = mask
        if mask is None:
            self.image = None
        else:
            height, width = mask.shape
            self.image = QImage(mask.data, width, height, width, QImage.Format_Indexed8)
            self.image.setColorTable(color_table(class_count, self.colors))
        self.update()

    def set_class_count(self, count: int) -> None:
        if self.image is not None:
            self.image.setColorTable(color_table(count, self.colors))
            self.update()

    def changed(self, rect) -> None:
        """Repaint the pixels ``(row0, row1, col0, col1)`` after they were edited."""
        if rect is not None:
            r0, r1, c0, c1 = rect
            self.update(QRectF(c0, r0, c1 - c0, r1 - r0))

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt name)
        if self.image is None:
            return QRectF()
        return QRectF(0, 0, self.image.width(), self.image.height())

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, _widget=None) -> None:
        if self.image is None:
            return
        exposed = option.exposedRect.toAlignedRect().intersected(self.image.rect())
        if exposed.isEmpty():
            return
        painter.setRenderHint(QPainter.SmoothPixmapTransform, False)
        painter.drawImage(exposed, self.image, exposed)


def _cosmetic(color: str, width: float = 1.5, style=Qt.SolidLine) -> QPen:
    pen = QPen(QColor(color), width, style)
    pen.setCosmetic(True)
    return pen


class BrushOutline(QGraphicsEllipseItem):
    """The brush's size and place: a circle under the pointer, dark and light so that it shows on
    any photo."""

    def __init__(self):
        super().__init__()
        self.setPen(_cosmetic("#ffffff", 1.2))
        self.setZValue(3)
        self.setAcceptedMouseButtons(Qt.NoButton)
        self.hide()

    def paint(self, painter: QPainter, option, widget=None) -> None:
        painter.setPen(_cosmetic("#000000", 3))
        painter.drawEllipse(self.rect())
        super().paint(painter, option, widget)

    def place(self, point: QPointF, size: float) -> None:
        radius = max(size, 1.0) / 2
        self.setRect(QRectF(point.x() - radius, point.y() - radius, 2 * radius, 2 * radius))
        self.show()


class Draft(QGraphicsPathItem):
    """The polygon being drawn (its points, and a line to the pointer) or the assist's box."""

    def __init__(self):
        super().__init__()
        self.setPen(_cosmetic("#ffffff", 2, Qt.DashLine))
        self.setZValue(2)
        self.setAcceptedMouseButtons(Qt.NoButton)

    def set_color(self, color: QColor) -> None:
        """Outline and fill in the class's colour (a white dashed line vanished on a bright sky)."""
        self.setPen(_cosmetic(QColor(color).darker(120).name(), 2))
        fill = QColor(color)
        fill.setAlpha(70)
        self.setBrush(fill)

    def paint(self, painter: QPainter, option, widget=None) -> None:
        super().paint(painter, option, widget)
        painter.setPen(_cosmetic("#ffffff", 1, Qt.DashLine))  # light dashes over the coloured line
        painter.setBrush(Qt.NoBrush)
        painter.drawPath(self.path())

    def show_polygon(self, points: list[QPointF], pointer: QPointF | None = None) -> None:
        path = QPainterPath()
        if points:
            path.moveTo(points[0])
            for point in points[1:] + ([pointer] if pointer is not None else []):
                path.lineTo(point)
        self.setPath(path)

    def show_box(self, a: QPointF, b: QPointF) -> None:
        path = QPainterPath()
        path.addRect(QRectF(a, b).normalized())
        self.setPath(path)

    def clear(self) -> None:
        self.setPath(QPainterPath())
