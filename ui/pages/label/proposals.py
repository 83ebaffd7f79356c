"""A detector's proposed boxes on the Label page: drawn dashed on the canvas, not editable until
accepted (Enter turns them into ordinary boxes, which the user then moves, resizes or deletes)."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsRectItem

from ...canvas import _Tag, label_color


class ProposalLayer:
    """Dashed, click-through rectangles with a "label 87%" tag over a :class:`~ui.canvas.BoxCanvas`."""

    def __init__(self, canvas):
        self.canvas = canvas
        self.items: list[QGraphicsRectItem] = []

    def show(self, proposals) -> None:
        """Draw ``proposals`` (``{"label", "score", "box": [x0, y0, x1, y1]}`` in image pixels)."""
        self.clear()
        for proposal in proposals or []:
            x0, y0, x1, y1 = proposal["box"]
            color = label_color(proposal["label"])
            item = QGraphicsRectItem(QRectF(QPointF(x0, y0), QPointF(x1, y1)).normalized())
            pen = QPen(color, 2, Qt.DashLine)
            pen.setCosmetic(True)  # the same width at any zoom
            item.setPen(pen)
            item.setAcceptedMouseButtons(Qt.NoButton)  # drawing goes on underneath
            item.setFlag(QGraphicsItem.ItemIsSelectable, False)
            item.setZValue(5)
            tag = _Tag(item)
            tag.set(f"{proposal['label']} {proposal['score']:.0%}?", color)
            tag.setPos(QPointF(x0, y0))
            self.canvas.scene().addItem(item)
            self.items.append(item)

    def clear(self) -> None:
        for item in self.items:
            try:
                if item.scene() is not None:
                    item.scene().removeItem(item)
            except RuntimeError:  # the scene was cleared and the item deleted with it
                pass
        self.items = []
