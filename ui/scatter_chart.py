"""A predicted-against-true scatter plot, QPainter-drawn in the theme's colours like :mod:`.charts`:
one dot a held-out row, the diagonal where a perfect model's dots would lie."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from .charts import nice_ticks, series_color, tick_label


class ScatterPlot(QWidget):
    """``set_points([(true, predicted), ...], x_title, y_title)``; the axes share one range."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.points: list[tuple[float, float]] = []
        self.x_title, self.y_title = "true value", "predicted"
        self.setMinimumSize(260, 220)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        return QSize(420, 320)

    def set_points(self, points, x_title: str = "true value", y_title: str = "predicted") -> None:
        self.points = [(float(a), float(b)) for a, b in points]
        self.x_title, self.y_title = x_title, y_title
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        text = self.palette().color(self.foregroundRole())
        muted, grid = QColor(text), QColor(text)
        muted.setAlphaF(0.6)
        grid.setAlphaF(0.12)
        metrics = QFontMetrics(self.font())
        if not self.points:
            painter.setPen(muted)
            painter.drawText(self.rect(), Qt.AlignCenter, "No held-out rows to plot")
            return
        values = [v for pair in self.points for v in pair]
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
        ticks = nice_ticks(lo, hi, 5)
        labels = [tick_label(t) for t in ticks]
        left = max((metrics.horizontalAdvance(s) for s in labels), default=20) + 14 + metrics.height()
        bottom = metrics.height() * 2 + 10
        plot = QRectF(left, 8, self.width() - left - 12, self.height() - bottom - 8)
        side = min(plot.width(), plot.height())  # square: the diagonal at 45 degrees
        plot = QRectF(plot.left(), plot.top(), side, side)

        def at(x: float, y: float) -> QPointF:
            return QPointF(
                plot.left() + (x - lo) / (hi - lo) * plot.width(),
                plot.bottom() - (y - lo) / (hi - lo) * plot.height(),
            )

        for tick, label in zip(ticks, labels):
            painter.setPen(grid)
            painter.drawLine(at(tick, lo), at(tick, hi))
            painter.drawLine(at(lo, tick), at(hi, tick))
            painter.setPen(muted)
            x = at(tick, lo).x()
            painter.drawText(QRectF(x - 40, plot.bottom() + 4, 80, metrics.height()), Qt.AlignCenter, label)
            y = at(lo, tick).y()
            painter.drawText(
                QRectF(0, y - metrics.height() / 2, left - 8, metrics.height()), Qt.AlignRight, label
            )
        painter.setPen(muted)
        painter.drawText(
            QRectF(plot.left(), plot.bottom() + 4 + metrics.height(), plot.width(), metrics.height() + 4),
            Qt.AlignCenter,
            self.x_title,
        )
        painter.save()
        painter.translate(metrics.height() * 0.2, plot.center().y())
        painter.rotate(-90)
        painter.drawText(
            QRectF(-plot.height() / 2, 0, plot.height(), metrics.height()), Qt.AlignCenter, self.y_title
        )
        painter.restore()
        diagonal = QPen(muted, 1, Qt.DashLine)
        painter.setPen(diagonal)
        painter.drawLine(at(lo, lo), at(hi, hi))
        dot = series_color(0)
        fill = QColor(dot)
        fill.setAlphaF(0.55)
        painter.setPen(QPen(dot, 1))
        painter.setBrush(fill)
        for true, predicted in self.points:
            painter.drawEllipse(at(true, predicted), 3.5, 3.5)
