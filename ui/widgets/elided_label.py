"""A one-line label that shortens its text with "…" to fit, the whole text in its tooltip."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QSizePolicy


class ElidedLabel(QLabel):
    """Never wider than its space: the text is cut in the middle ("photo_0…jpg") or at the end."""

    def __init__(self, text: str = "", parent=None, mode=Qt.ElideMiddle):
        super().__init__(text, parent)
        self.mode = mode
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.setMinimumWidth(10)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt name)
        super().setText(text)
        self.setToolTip(text)

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt name)
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        text = self.fontMetrics().elidedText(self.text(), self.mode, self.width())
        painter.drawText(self.rect(), int(self.alignment()), text)
