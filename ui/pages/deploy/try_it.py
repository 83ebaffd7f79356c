"""The "Try it" card: drop, choose or take a photo (or record or choose a sound clip, for a sound model)
and see what the model answers."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFont, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from ...canvas import label_color
from ...charts import BarChart
from ...kinds import IMAGE_SUFFIXES, ui_kind
from ...page import card
from ...widgets import camera
from ...widgets.clip_player import ClipPlayer
from ...widgets.row_form import RowForm
from ...widgets.text_try import TextTry
from ...wording import found_words, top_scores
from .live_preview import LiveMode


class DropArea(QLabel):
    """A dashed box that accepts one dropped image file and emits its path."""

    dropped = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setAlignment(Qt.AlignCenter)
        self.setWordWrap(True)
        self.setObjectName("DropArea")
        self._idle_style()
        self.reset()

    def reset(self) -> None:
        """Empty, at its first size: the last project's photo and a mask's or boxes' room do not stay."""
        self.clear()
        self.setMinimumSize(200, 160)
        self.setText("Drop a photo here")

    def _idle_style(self, hover: bool = False) -> None:
        border = "#2f6fed" if hover else "#9aa4b5"
        self.setStyleSheet(
            f"QLabel#DropArea {{ border: 2px dashed {border}; border-radius: 10px; padding: 6px; }}"
        )

    @staticmethod
    def _image_path(event) -> str | None:
        for url in event.mimeData().urls():
            path = url.toLocalFile()
            if path and path.lower().endswith(IMAGE_SUFFIXES):
                return path
        return None

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if self._image_path(event):
            self._idle_style(True)
            event.acceptProposedAction()

    def dragLeaveEvent(self, event) -> None:  # noqa: N802
        self._idle_style()

    def dropEvent(self, event) -> None:  # noqa: N802
        self._idle_style()
        path = self._image_path(event)
        if path:
            event.acceptProposedAction()
            self.dropped.emit(path)

    def show_image(self, path: str, boxes=None, *, roomy: bool = False) -> None:
        """Show ``path`` scaled into the box, with a detector's ``boxes`` drawn on it; ``roomy``: the
        box grows as for boxes (a segmentation model's mask over the photo needs room to be read)."""
        pixmap = QPixmap(path)
        if pixmap.isNull():
            self.setText(f"Cannot show {Path(path).name}")
            return
        if boxes:
            draw_boxes(pixmap, boxes)
        if boxes or roomy:
            self.setMinimumHeight(max(self.minimumHeight(), 320))  # boxes and masks need room to be read
        room = QSize(self.width(), max(self.height(), self.minimumHeight())) - QSize(16, 16)
        self.setPixmap(pixmap.scaled(room, Qt.KeepAspectRatio, Qt.SmoothTransformation))


def draw_boxes(pixmap: QPixmap, boxes) -> None:
    """Paint ``boxes`` (``{"label", "score", "box"}`` in the photo's pixels) onto ``pixmap``."""
    painter = QPainter(pixmap)
    width = max(2, round(max(pixmap.width(), pixmap.height()) / 250))
    font = QFont()
    font.setPixelSize(width * 7)
    painter.setFont(font)
    for box in boxes:
        x0, y0, x1, y1 = box["box"]
        color = label_color(box["label"])
        painter.setPen(QPen(color, width))
        painter.drawRect(round(x0), round(y0), round(x1 - x0), round(y1 - y0))
        painter.drawText(
            round(x0) + width, max(round(y0) - width, width * 7), f"{box['label']} {box['score']:.0%}"
        )
    painter.end()


class TryIt:
    """The card's widgets; :meth:`show_prediction` and :meth:`clear` are called by the page.

    ``on_file(path)`` is called with each photo or clip to try; ``on_error(title, message)`` for a camera
    failure; ``recorder`` is the record bar shown for sound models (its ``recorded`` goes to the page).
    """

    def __init__(self, on_file, on_error, recorder, on_text=None, on_row=None):
        self.on_file, self.on_error = on_file, on_error
        self.sound = False
        self.kind = ui_kind("image")
        self.noun = "photo"
        self.frame, layout = card("Try it", "Drop a photo to see what the model says.")
        self.subtitle = self.frame.findChildren(QLabel)[-1]
        self.drop = DropArea()
        self.drop.dropped.connect(on_file)
        self.choose_button = QPushButton("Choose a photo…")
        self.choose_button.clicked.connect(self._choose)
        self.camera_button = QPushButton("Take a photo")
        self.camera_button.clicked.connect(self._take_photo)
        self.camera_button.setVisible(bool(camera.cameras()))
        self._camera = None
        self.answer = QLabel()
        self.answer.setObjectName("Hero")
        self.answer.setWordWrap(True)
        self.scores = BarChart(
            ("Score",), highlight_first=True, empty_text="The model's answer for your photo appears here."
        )
        self.clip_player = ClipPlayer()  # sound models: the clip tried, and recording one
        self.clip_player.hide()
        self.recorder = recorder
        self.recorder.hide()
        self.text_try = TextTry()  # text models: a text box instead of the drop area
        if on_text is not None:
            self.text_try.submitted.connect(on_text)
        self.text_try.hide()
        self.row_form = RowForm()  # table models: one field per column
        if on_row is not None:
            self.row_form.submitted.connect(on_row)
        self.row_form.hide()
        left = QVBoxLayout()
        left.addWidget(self.row_form, 1)
        left.addWidget(self.text_try, 1)
        left.addWidget(self.drop, 1)
        left.addWidget(self.clip_player, 1)
        left.addWidget(self.recorder)
        buttons = QHBoxLayout()
        buttons.addWidget(self.choose_button)
        buttons.addWidget(self.camera_button)
        self.live = LiveMode(self, buttons, parent=self.frame)  # the page sets live.predict
        buttons.addStretch(1)
        left.addLayout(buttons)
        right = QVBoxLayout()
        right.addWidget(self.answer)
        right.addWidget(self.scores)
        right.addStretch(1)
        row = QHBoxLayout()
        row.addLayout(left, 1)
        row.addSpacing(12)
        row.addLayout(right, 1)
        layout.addLayout(row)

    def set_input_kind(self, kind: str | None) -> None:
        """Show the parts of the card that the input kind uses (``ui/kinds.py``)."""
        self.kind = entry = ui_kind(kind)
        parts = entry.try_parts
        self.sound = entry.plays
        self.drop.setVisible("drop" in parts)
        self.camera_button.setVisible("camera" in parts and bool(camera.cameras()))
        self.clip_player.setVisible("player" in parts)
        self.recorder.setVisible("recorder" in parts)
        self.text_try.setVisible("text" in parts)
        self.row_form.setVisible("form" in parts)
        self.choose_button.setVisible("choose" in parts)
        if entry.choose:
            self.choose_button.setText(entry.choose[0])
        self.subtitle.setText(entry.try_hint)
        self.noun = noun = entry.one
        self.scores.empty_text = f"The model's answer for your {noun} appears here."
        self.live.set_input_kind(kind)

    def _choose(self) -> None:
        _text, title, filters = self.kind.choose or ("", "Choose a file", "")
        path, _ = QFileDialog.getOpenFileName(self.frame, title, str(Path.home()), filters)
        if path:
            self.on_file(path)

    def _take_photo(self) -> None:
        if camera.cameras():
            self._camera = camera.CameraDialog(self.frame, self.on_file, self.on_error)

    def looking(self, path: str | None) -> None:
        if path and "drop" in self.kind.try_parts:
            self.drop.show_image(path)
        self.answer.setText("Reading…" if path is None else self.kind.looking)
        self.scores.set_rows([])

    def clear(self) -> None:
        self.live.stop()
        self.drop.reset()
        self.answer.setText("")
        self.scores.set_rows([])
        self.scores.show()

    def show_prediction(self, prediction: dict, path: str | None = None) -> None:
        """The answer in words and the top scores as bars (a detector's boxes drawn on the photo)."""
        if "anomalous" in prediction:  # an anomaly model: the photo with its heatmap, a yes/no
            if prediction.get("overlay"):  # the heatmap needs room to be read, as a mask does
                self.drop.show_image(prediction["overlay"], roomy=True)
            self.answer.setText(anomaly_answer(prediction))
            # how sure the yes/no is: what "Put to work" rules compare with ("at least 80% sure")
            self.scores.set_rows([("how sure", (prediction.get("confidence", 1.0),))])
            return
        if "areas" in prediction:  # a segmentation model: the photo with its mask, the share of each class
            if prediction.get("overlay"):
                self.drop.show_image(prediction["overlay"], roomy=True)
            self.answer.setText(area_words(prediction["areas"]))
            self.scores.set_rows(
                top_scores({"scores": prediction["areas"]}, 10), prediction.get("overlay_colors")
            )
            return
        if "boxes" in prediction:  # a detector: the boxes on the photo, one row per box
            if path:
                self.drop.show_image(path, prediction["boxes"])
            self.answer.setText(found_words(prediction["boxes"]))
            self.scores.set_rows((b["label"], (b["score"],)) for b in prediction["boxes"][:10])
            return
        self.scores.setVisible("value" not in prediction)  # a number predicted has no scores to show
        if prediction.get("value") is not None:  # a table regression
            self.answer.setText(
                f"{prediction['value']:.6g}  <span style='font-size:15px; font-weight:400'>predicted</span>"
            )
            return
        if "tags" in prediction:  # a tags model: every tag over its threshold
            tags = prediction.get("tags") or []
            self.answer.setText(", ".join(tags) if tags else "No tag fits")
        elif prediction.get("sure") is False:  # unlike anything the model was trained on
            self.answer.setText(
                f"Not sure  <span style='font-size:15px; font-weight:400'>this {self.noun} is "
                f"unlike the ones it learned from (closest guess: {prediction['label']})</span>"
            )
        else:
            self.answer.setText(
                f"{prediction['label']}  <span style='font-size:15px; font-weight:400'>"
                f"({prediction['score']:.0%} sure)</span>"
            )
        self.scores.set_rows((label, (score,)) for label, score in top_scores(prediction))


def area_words(areas: dict) -> str:
    """Plain words for a segmentation model's answer: the classes that cover most of the photo."""
    shown = [(label, share) for label, share in sorted(areas.items(), key=lambda x: -x[1]) if share >= 0.01]
    if not shown:
        return "Nothing found"
    words = ", ".join(f"{label} {share:.0%}" for label, share in shown[:3])
    return f"{words}  <span style='font-size:15px; font-weight:400'>of the photo</span>"


def anomaly_answer(prediction: dict) -> str:
    """Plain words for an anomaly model's answer on one photo."""
    how = f"score {prediction['score']:.1f}; it flags photos from {prediction['threshold']:.1f}"
    if prediction["anomalous"]:
        return (
            "Looks defective  <span style='font-size:15px; font-weight:400'>unlike the good parts where "
            f"it is shaded red ({how})</span>"
        )
    return f"Looks good  <span style='font-size:15px; font-weight:400'>as the good parts do ({how})</span>"
