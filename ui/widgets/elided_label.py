"""A one-line label that shortens its text with "…" to fit, the whole text in its tooltip; given a
separator, a text too long for one line goes on two, broken at the separator, before anything is cut."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QSizePolicy


class ElidedLabel(QLabel):
    """Never wider than its space: the text is cut in the middle ("photo_0…jpg") or at the end; with
    ``breaks`` (a separator such as ``"  ·  "``) it first takes a second line, broken there."""

    def __init__(self, text: str = "", parent=None, mode=Qt.ElideMiddle, breaks: str | None = None):
        super().__init__(text, parent)
        self.mode = mode
        self.breaks = breaks
        self._shown_lines = 1
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.setMinimumWidth(10)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt name)
        super().setText(text)
        self.setToolTip(text)
        self._relayout()

    def lines(self) -> list[str]:
        """The lines the text is shown on (before any is cut to fit): one, or two broken at ``breaks``."""
        text, metrics, width = self.text(), self.fontMetrics(), self.width()
        if not self.breaks or self.breaks not in text or metrics.horizontalAdvance(text) <= width:
            return [text]
        parts = text.split(self.breaks)
        first, k = parts[0], 1
        while k < len(parts) - 1 and metrics.horizontalAdvance(first + self.breaks + parts[k]) <= width:
            first, k = first + self.breaks + parts[k], k + 1
        return [first, self.breaks.join(parts[k:])]

    def _relayout(self) -> None:
        count = len(self.lines())
        if count != self._shown_lines:
            self._shown_lines = count
            self.updateGeometry()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._relayout()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        hint = super().sizeHint()
        extra = (self._shown_lines - 1) * self.fontMetrics().lineSpacing()
        return QSize(hint.width(), hint.height() + extra)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        hint = super().minimumSizeHint()
        extra = (self._shown_lines - 1) * self.fontMetrics().lineSpacing()
        return QSize(hint.width(), hint.height() + extra)

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt name)
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        lines = self.lines()
        step = self.fontMetrics().lineSpacing()
        top = (self.height() - step * len(lines)) // 2 if len(lines) > 1 else 0
        for k, line in enumerate(lines):
            text = self.fontMetrics().elidedText(line, self.mode, self.width())
            rect = self.rect() if len(lines) == 1 else QRect(0, top + k * step, self.width(), step)
            painter.drawText(rect, int(self.alignment()), text)
