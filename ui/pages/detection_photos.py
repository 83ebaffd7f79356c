"""The Evaluate page's test photos for a detector: each thumbnail drawn with the true boxes and the
model's boxes, the photos with missed objects or false boxes first; a click opens the photo on the
Label page (``open_photo(sample_id)``).

True boxes are solid (green when the model found them, red when it missed them), the model's boxes
dashed (blue when right, orange when false), so they read apart in colour and in style. What to draw
is decided without Qt (:func:`box_layers`); the drawing runs off the UI thread on a ``QImage``
(:func:`load_photos`), and only the finished images become icons on the UI thread.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QIcon, QImage, QImageReader, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidgetItem, QSlider

from ..page import card
from ..widgets.mistakes import report_sample_ids, thumbnail_list

log = logging.getLogger(__name__)

THUMB = 168
MAX_PHOTOS = 200
COLORS = {"found": "#2f9e44", "missed": "#e03131", "right": "#1c7ed6", "false": "#f08c00"}
TRUE_KINDS = ("found", "missed")
LEGEND = (
    ("found", "━━", "your box, found"),
    ("missed", "━━", "your box, missed"),
    ("right", "╍╍", "model's box, right"),
    ("false", "╍╍", "model's box, nothing there"),
)


def _same(a, b, tolerance: float = 1e-3) -> bool:
    return all(abs(float(x) - float(y)) <= tolerance for x, y in zip(a[:4], b[:4]))


def box_layers(image: dict, threshold: float) -> list[tuple[str, list[float]]]:
    """What to draw on one test photo, in drawing order: ``(kind, [x0, y0, x1, y1])`` in the photo's pixels.

    Parameters
    ----------
    image : one entry of a detector report's ``images`` (or ``mistakes``): ``truth`` ([x0, y0, x1, y1,
        label] each), ``boxes`` (predictions ``{"label", "score", "box"}``), ``misses`` (true boxes
        not found) and ``false_boxes`` (predictions matching no true box).
    threshold : the score from which a prediction counts as a box the model draws.

    Returns
    -------
    True boxes first (``found`` or ``missed``), then the predictions at or above ``threshold``
    (``right`` or ``false``).
    """
    misses = image.get("misses") or []
    false = [p["box"] for p in image.get("false_boxes") or []]
    layers = []
    for truth in image.get("truth") or []:
        missed = any(_same(truth, m) for m in misses)
        layers.append(("missed" if missed else "found", [float(v) for v in truth[:4]]))
    for pred in image.get("boxes") or []:
        if pred.get("score", 0.0) >= threshold:
            wrong = any(_same(pred["box"], f) for f in false)
            layers.append(("false" if wrong else "right", [float(v) for v in pred["box"]]))
    return layers


def caption(image: dict) -> tuple[str, str]:
    """(caption, tooltip) of one test photo."""
    misses, false = len(image.get("misses") or []), len(image.get("false_boxes") or [])
    parts = [f"{misses} missed"] * bool(misses) + [f"{false} false"] * bool(false)
    name = Path(str(image.get("file") or "")).name
    tip = (f"{name}\n" if name else "") + (
        f"{misses} object(s) not found, {false} box(es) where there is nothing"
        if parts
        else "Every object found, no false box"
    )
    return (" · ".join(parts) if parts else "✓ all right"), tip + "\nClick to open it on the Label page."


def draw_photo(image: QImage, scale: float, layers, size: int = THUMB) -> QImage:
    """A ``size`` x ``size`` picture: ``image`` (a thumbnail ``scale`` times the photo's size) centred on a
    transparent square, so that the captions under the photos line up, with ``layers`` drawn on it."""
    out = QImage(size, size, QImage.Format_ARGB32_Premultiplied)
    out.fill(Qt.transparent)
    left, top = (size - image.width()) // 2, (size - image.height()) // 2
    painter = QPainter(out)
    try:
        painter.drawImage(left, top, image)
        painter.setRenderHint(QPainter.Antialiasing)
        painter.translate(left, top)
        for kind, (x0, y0, x1, y1) in layers:
            truth = kind in TRUE_KINDS
            pen = QPen(
                QColor(COLORS[kind]), 3 if kind == "missed" else 2, Qt.SolidLine if truth else Qt.DashLine
            )
            painter.setPen(pen)
            painter.drawRect(
                QRectF(x0 * scale, y0 * scale, max((x1 - x0) * scale, 1.0), max((y1 - y0) * scale, 1.0))
            )
    finally:
        painter.end()
    return out


def _read_scaled(path: str, size: int) -> tuple[QImage, float]:
    """A photo file read at most ``size`` pixels on its longest side, and its scale (fallback for photos
    that are not in the project, e.g. an exported model's report)."""
    reader = QImageReader(path)
    reader.setAutoTransform(True)
    full = reader.read()
    if full.isNull():
        raise OSError(f"{path}: {reader.errorString()}")
    scale = min(size / max(full.width(), full.height()), 1.0)
    return full.scaled(
        max(1, round(full.width() * scale)),
        max(1, round(full.height() * scale)),
        Qt.KeepAspectRatio,
        Qt.SmoothTransformation,
    ), scale


def load_photos(ws, project: str | None, images: list[dict], threshold: float, state) -> list:
    """``[(sample_id or None, QImage or None)]`` for ``images``, boxes drawn (runs off the UI thread).

    The project's sample is found by ``sample_id`` or by its media hash ``key``; its thumbnail is scaled
    by the sample's own (EXIF-oriented) size. A photo not in the project is read from its ``file``.
    """
    found = []
    for entry, sample_id in zip(images, report_sample_ids(ws, project, images)):
        if state.is_interruption_requested():
            break
        picture = None
        try:
            if sample_id is not None:
                sample = ws.sample(sample_id)
                thumb = QImage(str(ws.thumbnail(sample_id, THUMB)))
                scale = thumb.width() / sample.width if sample.width else 1.0
            elif entry.get("file") and Path(entry["file"]).is_file():
                thumb, scale = _read_scaled(entry["file"], THUMB)
            else:
                thumb = None
            if thumb is not None and not thumb.isNull():
                picture = draw_photo(thumb, scale, box_layers(entry, threshold))
        except (KeyError, ValueError, OSError, EOFError) as exc:
            log.warning("no picture for test photo %s: %s", entry.get("file"), exc)
        found.append((sample_id, picture))
    return found


def legend_html() -> str:
    """The colours and line styles, in words."""
    return " &nbsp; ".join(
        f"<span style='color:{COLORS[kind]}; font-weight:bold'>{line}</span> {words}"
        for kind, line, words in LEGEND
    )


class DetectionPhotosCard:
    """The card of a detector's test photos.

    Parameters
    ----------
    load : callable
        ``load(images, threshold, done)`` starts :func:`load_photos` off the UI thread and calls
        ``done([(sample_id, QImage or None)])`` on it.
    open_photo : callable
        ``open_photo(sample_id)``, when the user clicks a photo of the project.
    move_threshold : callable, optional
        ``move_threshold(score)``, when the user settles the confidence slider on a new score (the
        caller saves it and shows the report again); without it the slider is hidden.
    """

    def __init__(self, load, open_photo, move_threshold=None):
        self.load, self.open_photo, self.move_threshold = load, open_photo, move_threshold
        self.threshold = 0.5
        self.images: list[dict] = []
        self.generation = 0
        self.frame, layout = card()
        self.title = QLabel("<b>Test photos</b>")
        self.legend = QLabel(legend_html())
        self.legend.setWordWrap(True)
        self.hint = QLabel(
            "Photos with missed objects or false boxes come first. Click one to check its boxes "
            "on the Label page: a missing box teaches the model wrong."
        )
        self.hint.setObjectName("Muted")
        self.hint.setWordWrap(True)
        self.list = thumbnail_list(THUMB, QSize(THUMB + 24, THUMB + 40))
        self.list.itemClicked.connect(self._clicked)
        self.none = QLabel("This model's evaluation does not list its test photos.")
        self.none.setObjectName("Muted")
        self.threshold_label = QLabel()
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(10, 95)  # the report keeps every box from 10% up
        self.slider.setFixedWidth(160)
        tip = (
            "The model draws a box only where it is at least this sure. Lower: it finds more objects and "
            "draws more false boxes. Higher: fewer false boxes, more missed objects. Deploy uses it too."
        )
        self.slider.setToolTip(tip)
        self.threshold_label.setToolTip(tip)
        self.settle = QTimer(self.frame)
        self.settle.setSingleShot(True)
        self.settle.setInterval(450)
        self.settle.timeout.connect(self._settled)
        self.slider.valueChanged.connect(self._slid)
        self.title.setWordWrap(True)  # a long title wraps on a small window instead of widening the page
        row = QHBoxLayout()
        row.addWidget(self.title, 1)
        row.addWidget(self.threshold_label)
        row.addWidget(self.slider)
        layout.addLayout(row)
        layout.addWidget(self.legend)
        layout.addWidget(self.hint)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.none)

    def set_report(self, report: dict | None) -> None:
        """Show ``report``'s test photos (``images``, else its ``mistakes``), most errors first."""
        report = report or {}
        images = list(report.get("images") or report.get("mistakes") or [])
        ids = {m.get("key"): m.get("sample_id") for m in report.get("mistakes") or [] if m.get("sample_id")}
        images = [{**m, "sample_id": m.get("sample_id") or ids.get(m.get("key"))} for m in images]
        images.sort(key=lambda m: -(len(m.get("misses") or []) + len(m.get("false_boxes") or [])))
        self.images = images[:MAX_PHOTOS]
        self.threshold = float(report.get("threshold") or 0.0)
        self.settle.stop()
        self.slider.blockSignals(True)
        self.slider.setValue(round(self.threshold * 100))
        self.slider.blockSignals(False)
        self.threshold_label.setText(f"Boxes from {self.threshold:.0%} sure")
        for widget in (self.slider, self.threshold_label):
            widget.setVisible(bool(self.images) and self.move_threshold is not None)
        wrong = sum(1 for m in images if m.get("misses") or m.get("false_boxes"))
        self.title.setText(
            f"<b>Test photos: {wrong} of {len(images)} with a missed object or a false box</b>"
            if images
            else "<b>Test photos</b>"
        )
        self.generation += 1
        self.list.clear()
        for entry in self.images:
            text, tip = caption(entry)
            item = QListWidgetItem(text)
            item.setData(Qt.UserRole, entry.get("sample_id"))
            item.setToolTip(tip)
            item.setSizeHint(
                QSize(THUMB + 20, THUMB + 36)
            )  # uniform sizes: room for the picture before it comes
            self.list.addItem(item)
        for widget in (self.list, self.legend, self.hint):
            widget.setVisible(bool(self.images))
        self.none.setVisible(not self.images)
        if self.images:
            generation = self.generation
            self.load(self.images, self.threshold, lambda found: self._pictures(generation, found))

    def _slid(self, value: int) -> None:
        self.threshold_label.setText(f"Boxes from {value / 100:.0%} sure")
        self.settle.start()  # moved again before it settled: wait for the last value

    def _settled(self) -> None:
        score = self.slider.value() / 100
        if self.move_threshold is not None and abs(score - self.threshold) > 1e-6:
            self.threshold_label.setText(f"Boxes from {score:.0%} sure · counting…")
            self.move_threshold(score)

    def _pictures(self, generation: int, found: list) -> None:
        if generation != self.generation:  # the list was rebuilt meanwhile
            return
        for row, (sample_id, picture) in enumerate(found):
            item = self.list.item(row)
            if item is None:
                continue
            item.setData(Qt.UserRole, sample_id)
            if picture is not None:
                item.setIcon(QIcon(QPixmap.fromImage(picture)))

    def _clicked(self, item: QListWidgetItem) -> None:
        sample_id = item.data(Qt.UserRole)
        if sample_id is not None:
            self.open_photo(int(sample_id))
