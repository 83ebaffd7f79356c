"""The live training chart: loss (left axis) and accuracy (right axis) against the training step."""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QFontMetrics, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from .charts import _fmt, _grid, _muted, _nice_ticks, series_color


class TrainingChart(QWidget):
    """Loss (left axis) and accuracy (right axis, 0-100 %) against the training step.

    Feed it with :meth:`add_metrics` using the ``metrics`` dict of each job event; numeric keys whose
    name contains ``loss`` are drawn on the left axis, keys containing ``acc`` on the right axis.
    ``epoch`` or ``step`` (when present) is the x value, otherwise the running count of updates.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.series: dict[str, list[tuple[float, float]]] = {}
        self._count = 0
        self.x_name = "training progress"
        self.setAccessibleName("Training curve")
        self.setMinimumSize(320, 200)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)

    def sizeHint(self) -> QSize:
        return QSize(520, 240)

    @property
    def moves(self) -> bool:
        """True once a curve has two points: a single dot is no chart."""
        return any(len(points) > 1 for points in self.series.values())

    def clear(self) -> None:
        """Forget every point."""
        self.series.clear()
        self._count = 0
        self.update()

    def add_metrics(self, metrics: dict | None) -> bool:
        """Add one point per loss/accuracy value in ``metrics``; True when anything was added."""
        if not metrics:
            return False
        values = {
            k: float(v)
            for k, v in metrics.items()
            if isinstance(v, (int, float))
            and not isinstance(v, bool)
            and math.isfinite(v)
            and ("loss" in k.lower() or self._is_accuracy(k))
        }
        if not values:
            return False
        self._count += 1
        x = float(self._count)
        for name in ("epoch", "step"):
            if isinstance(metrics.get(name), (int, float)):
                x, self.x_name = float(metrics[name]), name
                break
        for key, value in values.items():
            points = self.series.setdefault(key, [])
            if points and points[-1][0] == x:
                points[-1] = (x, value)
            else:
                points.append((x, value))
        self.setAccessibleDescription(
            "; ".join(f"{self._pretty(k)} {pts[-1][1]:.3g}" for k, pts in self.series.items())
        )
        self.update()
        return True

    @staticmethod
    def _is_accuracy(key: str) -> bool:
        """Accuracy-like values (0..1) go on the right axis."""
        return "acc" in key.lower() or "f1" in key.lower()

    @staticmethod
    def _pretty(key: str) -> str:
        known = {
            "cv_accuracy": "Best setting so far",
            "trial_accuracy": "Each setting tried",
            "accuracy": "Test accuracy",
            "macro_f1": "Balanced F1",
            "val_accuracy": "Validation accuracy",
            "val_loss": "Validation loss",
            "loss": "Loss",
            "train_loss": "Training loss",
        }
        if key in known:
            return known[key]
        words = key.replace("_", " ")
        return words[:1].upper() + words[1:]

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        metrics = QFontMetrics(self.font())
        line_h = metrics.height()
        plot = QRectF(self.rect()).adjusted(
            metrics.horizontalAdvance("0.000") + 14,
            line_h * 2 + 8,
            -(metrics.horizontalAdvance("100%") + 14),
            -(line_h + 10),
        )
        if not self.series:
            painter.setPen(_muted(self))
            painter.drawText(
                self.rect(), Qt.AlignCenter, "The training curve appears here once training starts."
            )
            return
        xs = [x for pts in self.series.values() for x, _ in pts]
        x_lo, x_hi = min(xs), max(xs)
        if x_hi <= x_lo:
            x_hi = x_lo + 1
        losses = [y for k, pts in self.series.items() if not self._is_accuracy(k) for _, y in pts]
        l_lo, l_hi = (0.0, max(losses) * 1.05) if losses else (0.0, 1.0)
        if l_hi <= l_lo:
            l_hi = l_lo + 1
        has_acc = any(self._is_accuracy(k) for k in self.series)
        accs = [y for k, pts in self.series.items() if self._is_accuracy(k) for _, y in pts]
        # Zoom the accuracy axis onto the values (0.7..1 rather than 0..1 when they are all high).
        a_lo = max(0.0, math.floor((min(accs, default=0.0) - 0.05) * 10) / 10) if accs else 0.0
        a_hi = 1.0 if a_lo < 1.0 else 1.05

        def to_px(x, y, lo, hi):
            return QPointF(
                plot.left() + (x - x_lo) / (x_hi - x_lo) * plot.width(),
                plot.bottom() - (y - lo) / (hi - lo) * plot.height(),
            )

        painter.setPen(QPen(_grid(self), 1))
        for tick in _nice_ticks(l_lo, l_hi):
            p = to_px(x_lo, tick, l_lo, l_hi)
            painter.drawLine(QPointF(plot.left(), p.y()), QPointF(plot.right(), p.y()))
        painter.setPen(_muted(self))
        if losses:
            for tick in _nice_ticks(l_lo, l_hi):
                p = to_px(x_lo, tick, l_lo, l_hi)
                painter.drawText(
                    QRectF(0, p.y() - line_h / 2, plot.left() - 6, line_h),
                    Qt.AlignRight | Qt.AlignVCenter,
                    _fmt(tick),
                )
        if has_acc:
            for tick in _nice_ticks(a_lo, 1.0):
                p = to_px(x_lo, tick, a_lo, a_hi)
                painter.drawText(
                    QRectF(plot.right() + 6, p.y() - line_h / 2, 60, line_h),
                    Qt.AlignLeft | Qt.AlignVCenter,
                    f"{tick:.0%}",
                )
        painter.drawText(
            QRectF(plot.left(), plot.bottom() + 4, plot.width(), line_h), Qt.AlignCenter, self.x_name
        )
        painter.setPen(QPen(_grid(self), 1))
        painter.drawRect(plot)

        legend_x = plot.left()
        for index, (key, points) in enumerate(sorted(self.series.items())):
            color = series_color(index)
            lo, hi = (a_lo, a_hi) if self._is_accuracy(key) else (l_lo, l_hi)
            pen = QPen(color, 2)
            if key.lower().startswith(("val", "test")):
                pen.setStyle(Qt.DashLine)
            painter.setPen(pen)
            if len(points) == 1:
                painter.setBrush(color)
                painter.drawEllipse(to_px(*points[0], lo, hi), 3, 3)
            else:
                path = QPainterPath(to_px(*points[0], lo, hi))
                for x, y in points[1:]:
                    path.lineTo(to_px(x, y, lo, hi))
                painter.setBrush(Qt.NoBrush)
                painter.drawPath(path)
            suffix = " (right axis)" if self._is_accuracy(key) and losses else ""
            last = points[-1][1]
            text = f"{self._pretty(key)}{suffix}: {f'{last:.0%}' if self._is_accuracy(key) else _fmt(last)}"
            painter.drawLine(QPointF(legend_x, line_h / 2 + 4), QPointF(legend_x + 16, line_h / 2 + 4))
            painter.setPen(self.palette().color(self.foregroundRole()))
            painter.drawText(QPointF(legend_x + 20, line_h), text)
            legend_x += 20 + metrics.horizontalAdvance(text) + 18
