"""The Evaluate page's part for anomaly models: the catch and false-alarm counts in plain words, image
and pixel AUROC, the catch rate per defect kind, the false-alarm rate the threshold can promise on
unseen good parts, a threshold slider that moves every figure, and the test photos with the model's
heatmap drawn on them (misses and false alarms first).

The slider recomputes the figures from the scores saved in the report (no model run); the heatmap
thumbnails are made off the UI thread by ``load(files, done)``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QIcon, QImage, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidgetItem, QSlider

from modeldesk.app.anomaly_formatting import catch_sentence, counts_from_images, promise_words, verdict

from ..gallery import fit_square
from ..page import card
from ..widgets.mistakes import thumbnail_list

log = logging.getLogger(__name__)

THUMB = 168
MAX_PHOTOS = 120
STEPS = 200
COLORS = {"missed": "#e03131", "false alarm": "#f08c00", "caught": "#2f9e44", "good": "#868e96"}


def anomaly_words(report: dict, counts: dict) -> tuple[str, str]:
    """(hero sentence, detail) of an anomaly report at the counts' threshold."""
    hero = catch_sentence(counts).capitalize() + "."
    parts = []
    if report.get("auroc") is not None:
        parts.append(f"image AUROC {report['auroc']:.3f} (1.0 = every defect scores above every good part)")
    if report.get("pixel_auroc") is not None:
        masks = report.get("masks")
        where = f" on {masks} photos with a defect mask" if masks else ""
        parts.append(
            f"pixel AUROC {report['pixel_auroc']:.3f}{where} (where it points: 1.0 = every defect pixel "
            "scores above every good one)"
        )
    detail = "On photos it never learned from" + (": " + "; ".join(parts) + "." if parts else ".")
    return hero, detail


class AnomalyCard:
    """The card; ``frame`` goes on the page, ``set_report(report)`` fills it, ``on_words(hero, detail)``
    lets the page's headline follow the slider."""

    def __init__(self, load, on_words):
        self.load, self.on_words = load, on_words
        self.report: dict | None = None
        self.images: list[dict] = []
        self.lo, self.hi = 0.0, 1.0
        self._trained_step = -1
        self.frame, layout = card(
            "At the threshold",
            "Move the threshold: higher raises fewer false alarms but lets more defects through. "
            "Every figure below follows.",
        )
        row = QHBoxLayout()
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(0, STEPS)
        self.slider.setAccessibleName("Threshold")
        self.slider.valueChanged.connect(self._moved)
        self.value = QLabel()
        self.value.setMinimumWidth(150)
        row.addWidget(QLabel("Threshold"))
        row.addWidget(self.slider, 1)
        row.addWidget(self.value)
        layout.addLayout(row)
        self.figures = QLabel()
        self.figures.setWordWrap(True)
        self.figures.setTextFormat(Qt.RichText)
        layout.addWidget(self.figures)
        # what the threshold as trained promises on unseen good parts (hidden once the slider moves)
        self.promise = QLabel()
        self.promise.setObjectName("Muted")
        self.promise.setWordWrap(True)
        layout.addWidget(self.promise)
        self.photos_title = QLabel("<b>Test photos, misses and false alarms first</b>")
        layout.addWidget(self.photos_title)
        legend = " ".join(f"<span style='color:{c}'>■</span> {k}" for k, c in COLORS.items())
        self.legend = QLabel(legend + " · red-yellow shading: where it looks unlike the good parts")
        self.legend.setObjectName("Muted")
        self.legend.setWordWrap(True)
        layout.addWidget(self.legend)
        self.photos = thumbnail_list(THUMB, QSize(THUMB + 24, THUMB + 44))
        layout.addWidget(self.photos)

    @property
    def threshold(self) -> float:
        """The slider's threshold: the model's own at the step it starts on (not a rounded neighbour)."""
        if self.report and self.slider.value() == self._trained_step:
            return float(self.report.get("threshold", 0.0))
        return self.lo + (self.hi - self.lo) * self.slider.value() / STEPS

    def set_report(self, report: dict | None) -> None:
        self.report = report
        self.photos.clear()
        if not report:
            return
        self.images = list(report.get("images") or [])[:MAX_PHOTOS]
        scores = [m["score"] for m in report.get("images") or []] or [report.get("threshold", 0.0)]
        trained = float(report.get("threshold", 0.0))
        self.lo, self.hi = min(min(scores), trained) * 0.95, max(max(scores), trained) * 1.05
        self._trained_step = round(STEPS * (trained - self.lo) / max(self.hi - self.lo, 1e-9))
        self.slider.blockSignals(True)
        self.slider.setValue(self._trained_step)
        self.slider.blockSignals(False)
        self._items = []
        for image in self.images:
            item = QListWidgetItem(Path(str(image.get("file") or "")).name)
            item.setSizeHint(QSize(THUMB + 24, THUMB + 44))
            self.photos.addItem(item)
            self._items.append(item)
        self._moved()
        self.load([m["file"] for m in self.images], self._show_thumbnails)

    def set_pixel_auroc(self, found: dict | None) -> None:
        """Add the pixel AUROC worked out from the project's stored defect masks (None: it has none, and
        nothing is said about it)."""
        if self.report is None or not found or found.get("pixel_auroc") is None:
            return
        self.report["pixel_auroc"], self.report["masks"] = found["pixel_auroc"], found["masks"]
        self._moved()

    def _moved(self, *_):
        if not self.report:
            return
        threshold = self.threshold
        trained = float(self.report.get("threshold", 0.0))
        counts = counts_from_images(self.report.get("images") or [], threshold)
        as_trained = abs(threshold - trained) < 1e-9
        self.value.setText(f"{threshold:.2f}" + ("  (as trained)" if as_trained else ""))
        self.promise.setText(promise_words(self.report))
        self.promise.setVisible(as_trained and bool(self.promise.text()))
        kinds = counts["per_kind"]
        lines = [f"<b>{catch_sentence(counts).capitalize()}</b>"]
        if counts["catch_rate"] is not None:
            lines.append(f"Catch rate {counts['catch_rate']:.0%}")
        if counts["false_alarm_rate"] is not None:
            lines[-1] += f", false alarms {counts['false_alarm_rate']:.0%} of good parts"
        if kinds:
            lines.append(
                "Per kind: " + ", ".join(f"{k} {v['caught']} of {v['defects']}" for k, v in kinds.items())
            )
        self.figures.setText("<br>".join(lines))
        self.on_words(*anomaly_words(self.report, counts))
        for image, item in zip(self.images, self._items):
            what = verdict(image, threshold)
            item.setText(f"{what} · {image['score']:.1f}")
            item.setForeground(QColor(COLORS[what]))
            item.setToolTip(f"{image.get('file')}\n{image.get('kind')}: score {image['score']:.2f}, {what}")
            item.setData(Qt.UserRole, what)

    def _show_thumbnails(self, found: list) -> None:
        for (_file, picture), item in zip(found, self._items):
            if picture is not None:  # on a square, so the captions line up whatever the photo's shape
                item.setIcon(QIcon(QPixmap.fromImage(fit_square(QImage(str(picture)), THUMB))))
