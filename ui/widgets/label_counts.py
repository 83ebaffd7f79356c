"""A horizontal bar chart of examples per label, with classes that are too small in warning colour."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from .. import theme
from ..wording import MIN_PER_CLASS


class LabelCountsChart(QWidget):
    """Bars of ``label -> count``; bars under ``minimum`` are drawn in the warning colour."""

    ROW = 22

    def __init__(self, parent=None, minimum: int = MIN_PER_CLASS):
        super().__init__(parent)
        self.minimum = minimum
        self.counts: dict[str, int] = {}
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Fixed)

    def set_counts(self, counts: dict[str, int]) -> None:
        self.counts = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        self.setFixedHeight(max(1, len(self.counts)) * self.ROW + 6)
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(260, max(1, len(self.counts)) * self.ROW + 6)

    def paintEvent(self, _event) -> None:
        colors = theme.current()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        metrics = painter.fontMetrics()
        if not self.counts:
            painter.setPen(QColor(colors.muted))
            painter.drawText(self.rect(), Qt.AlignLeft | Qt.AlignVCenter, "No labels yet")
            return
        name_w = min(max(metrics.horizontalAdvance(n) for n in self.counts) + 10, self.width() // 3)
        count_w = metrics.horizontalAdvance("00000") + 6
        bar_w = max(10, self.width() - name_w - count_w)
        top = max(self.counts.values()) or 1
        for row, (name, count) in enumerate(self.counts.items()):
            y = 3 + row * self.ROW
            painter.setPen(QColor(colors.text))
            painter.drawText(
                QRectF(0, y, name_w - 6, self.ROW),
                Qt.AlignRight | Qt.AlignVCenter,
                metrics.elidedText(name, Qt.ElideRight, name_w - 6),
            )
            painter.setPen(Qt.NoPen)
            painter.setBrush(QColor(colors.alt_base))
            painter.drawRoundedRect(QRectF(name_w, y + 4, bar_w, self.ROW - 8), 3, 3)
            small = count < self.minimum
            painter.setBrush(QColor(colors.warn if small else colors.accent))
            painter.drawRoundedRect(QRectF(name_w, y + 4, max(3.0, bar_w * count / top), self.ROW - 8), 3, 3)
            painter.setPen(QColor(colors.warn if small else colors.muted))
            painter.drawText(
                QRectF(name_w + bar_w + 6, y, count_w, self.ROW), Qt.AlignLeft | Qt.AlignVCenter, f"{count:,}"
            )


def counts_card(title: str, body: list[QWidget], foot: QWidget) -> QFrame:
    """The Data page's side card: ``title``, the ``body`` widgets (the chart, its warning) and ``foot`` at
    the bottom, scrolling when the window is too short for all of them (at 760x540 ten classes and a
    warning overlapped)."""
    card = QFrame()
    card.setObjectName("Card")
    inner = QWidget()
    inner.setObjectName("CountsCardBody")
    column = QVBoxLayout(inner)
    column.setContentsMargins(16, 14, 16, 14)
    heading = QLabel(title)
    heading.setStyleSheet("font-weight: 600;")
    for widget in (heading, *body):
        column.addWidget(widget)
    column.addStretch(1)
    column.addWidget(foot)
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    scroll.setStyleSheet("QScrollArea, QWidget#CountsCardBody { background: transparent; }")
    scroll.viewport().setAutoFillBackground(False)
    scroll.setWidget(inner)
    outer = QVBoxLayout(card)
    outer.setContentsMargins(0, 0, 0, 0)
    outer.addWidget(scroll)
    return card
