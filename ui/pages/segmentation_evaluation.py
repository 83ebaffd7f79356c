"""The Evaluate page's part for segmentation models: mean IoU and pixel accuracy in plain words, IoU
per class, the classes it mixes up, and the test photos with their true and predicted masks side by
side, worst first; a click opens the photo on the Label step.

The side-by-side pictures are made off the UI thread by ``load(sample_ids, done)``.
"""

from __future__ import annotations

import html
import logging
from pathlib import Path

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QLabel, QListWidgetItem

from modeldesk.app.mask_views import model_colors

from ..charts import BarChart
from ..page import card
from ..widgets.mistakes import thumbnail_list
from ..wording import plural

log = logging.getLogger(__name__)

SIDE = 200  # each of the two pictures, at most
MAX_PHOTOS = 60
ROUGH_BELOW = 5  # test photos: fewer, and the figures are said to be rough


def _interval(values) -> str:
    """The 95% interval in words; none when its two ends read the same (one test photo gives no spread)."""
    if not values or f"{values[0]:.0%}" == f"{values[1]:.0%}":
        return ""
    return f" (95% interval {values[0]:.0%} to {values[1]:.0%})"


def segmentation_words(report: dict) -> tuple[str, str, str]:
    """(hero, detail, advice) for a segmentation report."""
    n, miou = report.get("n") or 0, float(report.get("miou") or 0.0)
    hero = f"Its outlines overlap the true ones by {miou:.0%} on average (mean IoU)"
    detail = (
        f"Pixel accuracy {float(report.get('pixel_accuracy') or 0.0):.0%}"
        f"{_interval(report.get('pixel_accuracy_interval'))}, mean IoU{_interval(report.get('miou_interval'))}"
        f", on {plural(n, 'photo')} it never saw during training. IoU: the pixels both it and the truth "
        "call a class, over the pixels either calls it."
    )
    if 0 < n < ROUGH_BELOW:
        detail += f" With only {plural(n, 'test photo')} these numbers are rough: paint more photos."
    per_class = {k: v for k, v in (report.get("per_class") or {}).items() if v is not None}
    advice = ""
    if per_class:
        worst = min(per_class, key=per_class.get)
        advice = f"It finds <b>{html.escape(worst)}</b> least well (IoU {per_class[worst]:.0%})"
        mixed = most_mixed(report)
        if mixed:
            true, said, share = mixed
            advice += (
                f"; it most often takes <b>{html.escape(true)}</b> for <b>{html.escape(said)}</b> "
                f"({share:.0%} of its pixels)"
            )
        advice += ". Painting more photos where these appear would help."
    return hero, detail, advice


def most_mixed(report: dict) -> tuple[str, str, float] | None:
    """(true class, class said instead, share of the true class's pixels) of the largest mix-up."""
    labels, matrix = report.get("labels") or [], report.get("confusion") or []
    best = None
    for i, row in enumerate(matrix):
        total = sum(row)
        for j, value in enumerate(row):
            if i != j and total and value and (best is None or value / total > best[2]):
                best = (labels[i], labels[j], value / total)
    return best


class SegmentationCard:
    """The card; ``frame`` goes on the page, ``set_report(report, sample_ids)`` fills it, and
    ``relabel(sample_id)`` runs when a photo is clicked."""

    def __init__(self, load, relabel):
        self.load, self.relabel = load, relabel
        self.frame, layout = card(
            "Per class and per photo",
            "IoU per class: 100% would be every pixel of the class found and nothing else called it. "
            "Below, the test photos, worst first: the true mask on the left, the model's on the right. "
            "Click a photo to fix its mask on the Label step.",
        )
        self.bars = BarChart(("IoU", "Pixels found"))
        layout.addWidget(self.bars)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        layout.addWidget(self.legend)
        self.cell = cell = QSize(2 * SIDE + 30, SIDE * 3 // 4 + 44)
        self.photos = thumbnail_list(2 * SIDE + 6, cell, max_rows=2)
        self.photos.setIconSize(QSize(2 * SIDE + 6, SIDE * 3 // 4))
        self.photos.itemClicked.connect(self._clicked)
        layout.addWidget(self.photos)
        self._items: list[QListWidgetItem] = []

    def set_report(self, report: dict | None) -> None:
        self.photos.clear()
        self._items = []
        if not report:
            return
        labels = report.get("labels") or []
        per_class, found = report.get("per_class") or {}, report.get("per_class_accuracy") or {}
        self.bars.set_rows(
            (label, (per_class.get(label) or 0.0, found.get(label) or 0.0))
            for label in labels
            if per_class.get(label) is not None
        )
        colors = model_colors(labels, report.get("colors"))
        self.legend.setText(
            "Colours: "
            + " &nbsp; ".join(
                f"<span style='color:{c}'>■</span>&nbsp;{html.escape(str(name))}"
                for name, c in zip(labels, colors)
            )
        )
        photos = list(report.get("photos") or [])[:MAX_PHOTOS]
        for photo in photos:
            item = QListWidgetItem(
                f"IoU {photo.get('miou', 0):.0%} · {Path(str(photo.get('file') or '')).name}"
            )
            item.setToolTip(
                f"{photo.get('file')}\nmean IoU {photo.get('miou', 0):.0%}, "
                f"pixel accuracy {photo.get('pixel_accuracy', 0):.0%}"
            )
            item.setSizeHint(self.cell)  # uniform sizes: measured before the pictures arrive
            self.photos.addItem(item)
            self._items.append(item)
        self.photos.scrollToTop()
        if photos:
            self.load(photos, self._show_pictures)

    def _show_pictures(self, found: list) -> None:
        for (sample_id, picture, name), item in zip(found, self._items):
            item.setData(Qt.UserRole, sample_id)
            if name:  # the report names the stored copy; people know the photo by its own name
                item.setText(f"{item.text().split(' · ')[0]} · {name}")
            if picture is not None:
                item.setIcon(QIcon(QPixmap(str(picture))))
            if sample_id is None:
                item.setToolTip(item.toolTip() + "\n(not in this project any more)")

    def _clicked(self, item: QListWidgetItem) -> None:
        sample_id = item.data(Qt.UserRole)
        if sample_id is not None:
            self.relabel(int(sample_id))
