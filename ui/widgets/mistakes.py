"""The Evaluate page's "photos it got wrong": thumbnails of the mistakes, filtered by a matrix square;
a click asks to relabel that sample (for sound clips a click plays it and a double-click relabels)."""

from __future__ import annotations

import logging

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListView, QListWidget, QListWidgetItem, QPushButton

from ..page import card
from ..pages.detection_summary import mistake_caption
from .clip_player import ClipPlayer

log = logging.getLogger(__name__)

THUMB = 112
MAX_MISTAKES = 200


class ThumbnailList(QListWidget):
    """A static icon grid that never scrolls sideways and whose height fits its rows: one row at least
    (an empty list is no large empty box), ``max_rows`` at most (then it scrolls), so a few photos leave
    no gap and many do not push the page's other cards away."""

    def __init__(self, max_rows: int):
        super().__init__()
        self.max_rows = max_rows
        for signal in (self.model().rowsInserted, self.model().rowsRemoved, self.model().modelReset):
            signal.connect(self._fit)

    def rows_needed(self) -> int:
        """The rows its items take at its width (the scroll bar's room kept free), within the limits."""
        cell = self.gridSize()
        width = self.width() - 2 * self.frameWidth() - self.verticalScrollBar().sizeHint().width()
        per_row = max(1, width // max(cell.width(), 1))
        return min(max(1, -(-self.count() // per_row)), self.max_rows)

    def _fit(self, *_args) -> None:
        # the height follows the width only: setting it here does not change the rows, so no loop
        self.setFixedHeight(self.rows_needed() * self.gridSize().height() + 2 * self.frameWidth() + 8)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit()


def thumbnail_list(thumb: int, cell: QSize, max_rows: int = 3) -> QListWidget:
    """A :class:`ThumbnailList` of ``thumb``-pixel thumbnails in ``cell``-sized cells."""
    view = ThumbnailList(max_rows)
    view.setObjectName("Gallery")
    view.setViewMode(QListView.IconMode)
    view.setIconSize(QSize(thumb, thumb))
    view.setGridSize(cell)
    view.setResizeMode(QListView.Adjust)
    view.setMovement(QListView.Static)
    view.setUniformItemSizes(True)
    view.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    view._fit()
    return view


def report_sample_ids(ws, project: str | None, entries: list[dict]) -> list[int | None]:
    """Each report entry's sample: its ``sample_id``, else the project's sample with its media hash ``key``
    (a report made elsewhere names samples by hash). Runs off the UI thread."""
    keys = [e["key"] for e in entries if e.get("sample_id") is None and e.get("key")]
    by_hash = ws.sample_ids_for_keys(project, keys) if project and keys else {}
    return [e["sample_id"] if e.get("sample_id") is not None else by_hash.get(e.get("key")) for e in entries]


class MistakesCard:
    """The card; ``thumbnails(mistakes, done)`` loads ``[(sample_id, thumbnail path, clip)]`` off the UI
    thread (``clip`` is ``(path, peaks, duration)`` for sound samples, else None).

    ``relabel(sample_id)`` is called when the user clicks a mistake.
    """

    def __init__(self, thumbnails, relabel, noun: str = "photos"):
        self.load_thumbnails, self.relabel = thumbnails, relabel
        self.noun = noun
        self.report: dict | None = None
        self.generation = 0
        self.frame, layout = card()
        self.title = QLabel(f"<b>{noun.capitalize()} it got wrong</b>")
        self.show_all = QPushButton("Show all")
        self.show_all.clicked.connect(lambda: self.filter(None, None))
        self.show_all.hide()
        self.hint = QLabel("Click one to check its label: a wrong label teaches the model wrong.")
        self.hint.setObjectName("Muted")
        self.hint.setWordWrap(True)
        self.list = thumbnail_list(THUMB, QSize(THUMB + 36, THUMB + 44))
        self.list.setWordWrap(True)
        self.list.itemClicked.connect(self._clicked)
        self.list.itemDoubleClicked.connect(self._relabel)
        self.sound = False
        self.clip_player = ClipPlayer()
        self.clip_player.hide()
        row = QHBoxLayout()
        row.addWidget(self.title)
        row.addStretch(1)
        row.addWidget(self.show_all)
        layout.addLayout(row)
        layout.addWidget(self.hint)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.clip_player)
        self.none = QLabel()
        self.none.setObjectName("Muted")
        layout.addWidget(self.none)

    def set_report(self, report: dict | None, sound: bool = False) -> None:
        self.report, self.sound = report, sound
        self.clip_player.hide()  # shown with the first clip clicked
        self.clip_player.clear()
        self.hint.setText(
            "Click a clip to hear it, double-click to check its label: a wrong label teaches the model wrong."
            if sound
            else "Click one to check its label: a wrong label teaches the model wrong."
        )
        self.filter(None, None)

    def filter(self, true: str | None, predicted: str | None) -> None:
        """Show the mistakes of one matrix square (``None, None``: all of them)."""
        listed = (self.report or {}).get("mistakes") or []
        mistakes = [
            m
            for m in listed
            if (true is None or m.get("true") == true)
            and (predicted is None or m.get("predicted") == predicted)
        ]
        detector = "map50" in (self.report or {})
        if true is not None and true == predicted:
            self.title.setText(f"<b>'{true}' {self.noun} it got right</b> are not listed; pick a red square")
        elif true is not None:
            self.title.setText(f"<b>'{true}' {self.noun} it took for '{predicted}'</b> ({len(mistakes)})")
        else:
            what = (
                "Photos with missed objects or false boxes"
                if detector
                else f"{self.noun.capitalize()} it got wrong"
            )
            self.title.setText(f"<b>{what}</b> ({len(listed)})")
        self.show_all.setVisible(true is not None)
        self.generation += 1
        self.list.clear()
        shown = mistakes[:MAX_MISTAKES]
        for mistake in shown:
            caption, tip = mistake_caption(mistake)
            item = QListWidgetItem(caption)
            item.setData(Qt.UserRole, mistake.get("sample_id"))
            item.setToolTip(
                tip.replace(
                    "\nClick to check its label.", "\nClick to play it, double-click to check its label."
                )
                if self.sound
                else tip
            )
            item.setSizeHint(QSize(THUMB + 30, THUMB + 40))
            self.list.addItem(item)
        if detector:
            self.hint.setText("Click a photo to check its boxes: a missing box teaches the model wrong.")
        self.hint.setVisible(bool(mistakes))
        self.list.setVisible(bool(mistakes))
        self.none.setVisible(not mistakes)
        if "mistakes" not in (self.report or {}):
            self.title.setText(f"<b>{self.noun.capitalize()} it got wrong</b>")
            self.none.setText("This model's evaluation does not list them.")
        elif true is not None:
            self.none.setText("None in this square.")
        else:
            self.none.setText(f"None: every test {self.noun[:-1]} was recognised correctly.")
        if shown:
            generation = self.generation
            self.load_thumbnails(shown, lambda found: self._thumbnails(generation, found))

    def _thumbnails(self, generation: int, found: list) -> None:
        if generation != self.generation:  # the list was rebuilt meanwhile
            return
        for row, (sample_id, path, clip) in enumerate(found):
            item = self.list.item(row)
            if item is None:
                continue
            item.setData(Qt.UserRole, sample_id)
            item.setData(Qt.UserRole + 1, clip)
            if path:
                item.setIcon(QIcon(QPixmap(path)))

    def _clicked(self, item: QListWidgetItem) -> None:
        if self.sound:
            clip = item.data(Qt.UserRole + 1)
            if clip:
                path, peaks, duration = clip
                self.clip_player.set_clip(path, peaks, duration, f"{item.text()} · {duration:.2f} s")
                self.clip_player.show()
                self.clip_player.play()
            return
        self._relabel(item)

    def _relabel(self, item: QListWidgetItem) -> None:
        sample_id = item.data(Qt.UserRole)
        if sample_id is not None:
            self.relabel(int(sample_id))
