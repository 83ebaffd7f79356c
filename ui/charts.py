"""Small QPainter-drawn charts: a confusion-matrix heatmap and horizontal bars (the training curve is
in :mod:`.training_chart`), and the drawing helpers they share.

They hold plain Python data (no model objects), draw with the widget palette so they follow the app
theme, and never do work beyond painting: feed them numbers computed elsewhere.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from modeldesk.ui import theme

SECOND = QColor("#e07b24")
OTHERS = (QColor("#8e44ad"), QColor("#16a085"), QColor("#c0392b"))


def series_color(index: int) -> QColor:
    """The colour of the ``index``-th series: the theme accent, then fixed distinct hues."""
    colors = (QColor(theme.current().accent), SECOND, QColor(theme.current().good)) + OTHERS
    return colors[index % len(colors)]


def _muted(widget: QWidget) -> QColor:
    color = QColor(widget.palette().color(widget.foregroundRole()))
    color.setAlphaF(0.55)
    return color


def _grid(widget: QWidget) -> QColor:
    color = QColor(widget.palette().color(widget.foregroundRole()))
    color.setAlphaF(0.12)
    return color


def _nice_ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """About ``count`` round tick values covering ``[lo, hi]``."""
    if not math.isfinite(lo) or not math.isfinite(hi):
        return []
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=raw)
    first = math.ceil(lo / step) * step
    ticks, value = [], first
    while value <= hi + step * 1e-6:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:.0f}"
    if abs(value) >= 1:
        return f"{value:.1f}"
    return f"{value:.2g}"


#: the tick rule and the tick labels, public for the other charts (ui/scatter_chart.py)
nice_ticks, tick_label = _nice_ticks, _fmt


def heat_color(fraction: float, base: QColor, zero: QColor) -> QColor:
    """``zero`` (fraction 0) blended towards ``base`` (fraction 1)."""
    f = min(max(float(fraction), 0.0), 1.0)
    return QColor(
        round(zero.red() + (base.red() - zero.red()) * f),
        round(zero.green() + (base.green() - zero.green()) * f),
        round(zero.blue() + (base.blue() - zero.blue()) * f),
    )


class ConfusionMatrixView(QWidget):
    """A confusion-matrix heatmap: rows are the true labels, columns the predictions.

    Cell colour is the row-normalised share (so small classes read as clearly as big ones), the text is
    the count. Clicking a cell emits :attr:`cell_clicked` with the (true, predicted) label names.
    """

    cell_clicked = Signal(str, str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.labels: list[str] = []
        self.matrix: list[list[int]] = []
        self.setMouseTracking(True)
        self.setAccessibleName("Confusion matrix")
        self.setMinimumSize(260, 220)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)

    def sizeHint(self) -> QSize:
        metrics = QFontMetrics(self.font())
        n = max(len(self.labels), 2)
        cell = max(18.0, min(64.0, 560.0 / n))
        left = (
            max(
                (metrics.horizontalAdvance(self._elide(label, metrics, 120)) for label in self.labels),
                default=40,
            )
            + metrics.height()
            + 14
        )
        return QSize(int(left + n * cell + 8), int(metrics.height() * 3 + 16 + n * cell))

    def set_data(self, labels, matrix) -> None:
        """Show ``matrix[i][j]`` = how many samples labeled ``labels[i]`` were predicted ``labels[j]``."""
        labels = [str(label) for label in labels]
        matrix = [[int(v) for v in row] for row in matrix]
        if len(matrix) != len(labels) or any(len(row) != len(labels) for row in matrix):
            raise ValueError(f"confusion matrix must be {len(labels)}x{len(labels)}")
        self.labels, self.matrix = labels, matrix
        self.setAccessibleDescription(
            "; ".join(
                f"{label}: {row[i]} of {sum(row)} right" for i, (label, row) in enumerate(zip(labels, matrix))
            )
        )
        self.updateGeometry()
        self.update()

    def _layout(self):
        metrics = QFontMetrics(self.font())
        shown = [self._elide(label, metrics, 120) for label in self.labels]
        left = max((metrics.horizontalAdvance(s) for s in shown), default=0) + metrics.height() + 14
        top = metrics.height() * 2 + 10
        bottom_room = metrics.height() + 6
        n = max(len(self.labels), 1)
        side = min((self.width() - left - 8) / n, (self.height() - top - bottom_room) / n, 72.0)
        side = max(side, 4.0)
        return left, top, side, shown

    @staticmethod
    def _elide(text: str, metrics: QFontMetrics, width: int) -> str:
        return metrics.elidedText(text, Qt.ElideRight, width)

    def cell_at(self, pos) -> tuple[int, int] | None:
        """(row, column) under a widget position, or None."""
        if not self.labels:
            return None
        left, top, side, _ = self._layout()
        col = int((pos.x() - left) // side)
        row = int((pos.y() - top) // side)
        n = len(self.labels)
        if 0 <= row < n and 0 <= col < n and pos.x() >= left and pos.y() >= top:
            return row, col
        return None

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        cell = self.cell_at(event.position())
        if cell is None:
            QToolTip.hideText()
            return
        row, col = cell
        count = self.matrix[row][col]
        total = sum(self.matrix[row]) or 1
        verb = "correctly recognised" if row == col else f"taken for {self.labels[col]}"
        QToolTip.showText(
            event.globalPosition().toPoint(),
            f"{count} of {total} '{self.labels[row]}' samples {verb} ({count / total:.0%})",
            self,
        )

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802
        cell = self.cell_at(event.position())
        if cell is not None and event.button() == Qt.LeftButton:
            self.cell_clicked.emit(self.labels[cell[0]], self.labels[cell[1]])

    def paintEvent(self, event) -> None:  # noqa: N802
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        if not self.labels:
            painter.setPen(_muted(self))
            painter.drawText(self.rect(), Qt.AlignCenter, "No evaluation yet")
            return
        metrics = QFontMetrics(self.font())
        left, top, side, shown = self._layout()
        n = len(self.labels)
        grid = QRectF(left, top, side * n, side * n)
        painter.setPen(_muted(self))
        painter.drawText(
            QRectF(left, 0, grid.width(), metrics.height()), Qt.AlignCenter, "What the model said"
        )
        painter.save()
        painter.translate(metrics.height() / 2 + 2, top + grid.height() / 2)
        painter.rotate(-90)
        painter.drawText(
            QRectF(-grid.height() / 2, -metrics.height() / 2, grid.height(), metrics.height()),
            Qt.AlignCenter,
            "The right answer",
        )
        painter.restore()
        colors = theme.current()
        zero = QColor(colors.base)
        count_font = QFont(self.font())
        count_font.setBold(True)
        for j in range(n):
            rect = QRectF(left + j * side, metrics.height() + 6, side, metrics.height())
            painter.setPen(self.palette().color(self.foregroundRole()))
            painter.drawText(
                rect, Qt.AlignCenter, metrics.elidedText(self.labels[j], Qt.ElideRight, int(side) - 2)
            )
        for i in range(n):
            total = sum(self.matrix[i]) or 1
            painter.setPen(self.palette().color(self.foregroundRole()))
            painter.drawText(
                QRectF(metrics.height() + 6, top + i * side, left - metrics.height() - 12, side),
                Qt.AlignRight | Qt.AlignVCenter,
                shown[i],
            )
            for j in range(n):
                value = self.matrix[i][j]
                share = value / total
                base = QColor(colors.good if i == j else colors.bad)
                cell = QRectF(left + j * side, top + i * side, side, side).adjusted(1, 1, -1, -1)
                painter.setPen(Qt.NoPen)
                # a single mix-up still reads as red (in dark mode 15% of red over the base was barely red)
                floor = 0.15 if i == j else 0.45
                painter.setBrush(
                    heat_color(floor + (1 - floor) * share, base, zero) if value else QColor(colors.alt_base)
                )
                painter.drawRoundedRect(cell, 3, 3)
                if side >= 18:
                    painter.setFont(count_font)
                    painter.setPen(QColor("white") if share > 0.5 else QColor(colors.text))
                    painter.drawText(cell, Qt.AlignCenter, str(value))
                    painter.setFont(self.font())


class BarChart(QWidget):
    """Horizontal bars, one group per row: per-class precision/recall, or prediction scores.

    Parameters
    ----------
    series : names of the values drawn for each row (one bar each), e.g. ``("Precision", "Recall")``.
    highlight_first : draw the first row's bars in the accent colour and the rest muted (predictions).
    empty_text : shown while there are no rows.
    """

    def __init__(
        self,
        series=("Score",),
        parent=None,
        *,
        highlight_first: bool = False,
        empty_text: str = "Nothing to show yet",
    ):
        super().__init__(parent)
        self.series = tuple(series)
        self.empty_text = empty_text
        self.rows: list[tuple[str, tuple[float, ...]]] = []
        self.row_colors: dict[str, QColor] = {}
        self.highlight_first = highlight_first
        self.setAccessibleName(" and ".join(self.series))
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Preferred)

    def set_rows(self, rows, colors: dict | None = None) -> None:
        """``rows``: iterable of ``(label, values)`` with one value in 0..1 per series; ``colors``: a
        row's own colour by label (a segmentation model's class colours, so the bars are the legend)."""
        self.row_colors = {str(k): QColor(v) for k, v in (colors or {}).items()}
        cleaned = []
        for label, values in rows:
            values = tuple(float(v) for v in (values if isinstance(values, (list, tuple)) else (values,)))
            if len(values) != len(self.series):
                raise ValueError(f"{label!r}: expected {len(self.series)} values, got {len(values)}")
            cleaned.append((str(label), values))
        self.rows = cleaned
        self.setAccessibleDescription(
            "; ".join(
                f"{label}: " + ", ".join(f"{name} {v:.0%}" for name, v in zip(self.series, values))
                for label, values in cleaned
            )
        )
        self.updateGeometry()
        self.update()

    def _row_height(self) -> float:
        line = QFontMetrics(self.font()).height()
        return max(line + 4, len(self.series) * (line * 0.8) + 8)

    def sizeHint(self) -> QSize:
        legend = QFontMetrics(self.font()).height() + 8 if len(self.series) > 1 else 0
        return QSize(360, int(legend + max(len(self.rows), 1) * self._row_height() + 8))

    def minimumSizeHint(self) -> QSize:
        return QSize(220, self.sizeHint().height())

    def paintEvent(self, event) -> None:  # noqa: N802
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        metrics = QFontMetrics(self.font())
        if not self.rows:
            painter.setPen(_muted(self))
            # wrapped, so a narrow chart never cuts its words off at both ends
            painter.drawText(
                self.rect().adjusted(8, 0, -8, 0), Qt.AlignCenter | Qt.TextWordWrap, self.empty_text
            )
            return
        y = 4.0
        if len(self.series) > 1:
            x = 4.0
            for index, name in enumerate(self.series):
                color = series_color(index)
                painter.setPen(Qt.NoPen)
                painter.setBrush(color)
                painter.drawRoundedRect(QRectF(x, y + 3, 12, metrics.height() - 6), 2, 2)
                painter.setPen(self.palette().color(self.foregroundRole()))
                painter.drawText(QPointF(x + 16, y + metrics.ascent()), name)
                x += 16 + metrics.horizontalAdvance(name) + 16
            y += metrics.height() + 8
        label_w = min(
            max(metrics.horizontalAdvance(label) for label, _ in self.rows) + 12, self.width() * 0.35
        )
        value_w = metrics.horizontalAdvance("100%") + 10
        bar_x = label_w
        bar_w = max(self.width() - label_w - value_w - 4, 10)
        row_h = self._row_height()
        bar_h = (row_h - 8) / len(self.series)
        for row_index, (label, values) in enumerate(self.rows):
            painter.setPen(self.palette().color(self.foregroundRole()))
            painter.drawText(
                QRectF(0, y, label_w - 8, row_h),
                Qt.AlignRight | Qt.AlignVCenter,
                metrics.elidedText(label, Qt.ElideRight, int(label_w) - 8),
            )
            for index, value in enumerate(values):
                color = series_color(index)
                if self.highlight_first and row_index > 0:
                    color = QColor(theme.current().muted)
                color = self.row_colors.get(label, color)
                track = QRectF(bar_x, y + 4 + index * bar_h, bar_w, bar_h - 2)
                painter.setPen(Qt.NoPen)
                painter.setBrush(_grid(self))
                painter.drawRoundedRect(track, 3, 3)
                painter.setBrush(color)
                painter.drawRoundedRect(
                    QRectF(
                        track.x(), track.y(), max(track.width() * min(max(value, 0), 1), 2), track.height()
                    ),
                    3,
                    3,
                )
                painter.setPen(self.palette().color(self.foregroundRole()))
                painter.drawText(
                    QRectF(bar_x + bar_w + 4, track.y() - 2, value_w, track.height() + 4),
                    Qt.AlignLeft | Qt.AlignVCenter,
                    f"{value:.0%}",
                )
            y += row_h
