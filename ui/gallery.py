"""The image gallery: a list model of sample ids with lazily loaded thumbnails.

Stays smooth on 10,000+ images: the view asks only for visible rows; a thumbnail that is not in
the LRU of pixmaps is requested from a small loader that reads ``ws.thumbnail(id)`` in a
thread pool (newest request first, stale requests dropped) and hands a QImage back through a
queued signal. Only the cheap QImage -> QPixmap conversion runs on the UI thread.
"""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass, field

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QRectF,
    QRunnable,
    QSize,
    Qt,
    QThreadPool,
    Signal,
    Slot,
)
from PySide6.QtGui import QColor, QImage, QPainter, QPixmap
from PySide6.QtWidgets import QAbstractItemView, QListView

from .workers import SHUTDOWN_WAIT_MS

log = logging.getLogger(__name__)

ICON = 112  # logical size of a thumbnail in the view
SampleIdRole = Qt.UserRole + 1


# ------------------------------------------------------------------------------ query (worker side)


@dataclass
class GalleryQuery:
    """What the gallery shows: the filters of the Data page."""

    label: str | None = None
    unlabeled: bool = False
    split: str | None = None
    wrong_only: bool = False
    model_id: str | None = None


@dataclass
class GalleryRows:
    """The answer to a :class:`GalleryQuery`: ids in order and a caption per id."""

    ids: list[int] = field(default_factory=list)
    captions: dict[int, str] = field(default_factory=dict)
    wrong: set[int] = field(default_factory=set)

    @classmethod
    def from_dict(cls, rows: dict) -> GalleryRows:
        """From ``Workspace.gallery_rows``."""
        return cls(list(rows["ids"]), dict(rows["captions"]), set(rows["wrong"]))


# ------------------------------------------------------------------------------ thumbnails


class PixmapCache:
    """A least-recently-used map of sample id -> QPixmap (UI thread only)."""

    def __init__(self, capacity: int = 600):
        self.capacity = int(capacity)
        self._items: collections.OrderedDict[int, QPixmap] = collections.OrderedDict()

    def get(self, key: int) -> QPixmap | None:
        pixmap = self._items.get(key)
        if pixmap is not None:
            self._items.move_to_end(key)
        return pixmap

    def put(self, key: int, pixmap: QPixmap) -> None:
        self._items[key] = pixmap
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: int) -> bool:
        return key in self._items


def fit_square(image: QImage, size: int) -> QImage:
    """``image`` scaled to fit a transparent ``size`` x ``size`` square, centred (any thread).

    Every tile then has the same size, so captions line up whatever the photo's orientation.
    """
    scaled = image.scaled(size, size, Qt.KeepAspectRatio, Qt.SmoothTransformation)
    square = QImage(size, size, QImage.Format_ARGB32_Premultiplied)
    square.fill(Qt.transparent)
    painter = QPainter(square)
    painter.drawImage((size - scaled.width()) // 2, (size - scaled.height()) // 2, scaled)
    painter.end()
    return square


class _LoaderSignals(QObject):
    loaded = Signal(int, QImage)
    failed = Signal(int, str)


class _DrainQueue(QRunnable):
    """Loads thumbnails until the loader's queue is empty."""

    def __init__(self, loader: ThumbnailLoader):
        super().__init__()
        self.loader = loader

    def run(self) -> None:  # worker thread
        loader = self.loader
        while True:
            sample_id = loader._next()
            if sample_id is None:
                return
            try:
                path = loader.source.thumbnail(sample_id, loader.pixel_size)
                image = QImage(str(path))
                if image.isNull():
                    raise ValueError(f"unreadable thumbnail {path}")
                loader._signals.loaded.emit(sample_id, fit_square(image, loader.display_size))
            except Exception as exc:  # a broken file shows a placeholder; the reason goes to the log
                log.warning("no thumbnail for sample %s: %s", sample_id, exc)
                loader._signals.failed.emit(sample_id, str(exc))
            finally:
                loader._finish(sample_id)


class ThumbnailLoader(QObject):
    """Loads thumbnails off the UI thread, newest request first.

    Signals
    -------
    loaded(sample_id, QImage)
    failed(sample_id, reason)
    """

    loaded = Signal(int, QImage)
    failed = Signal(int, str)

    def __init__(
        self,
        source,
        pixel_size: int = 160,
        threads: int = 2,
        max_pending: int = 400,
        display_size: int | None = None,
        parent: QObject | None = None,
    ):
        super().__init__(parent)
        self.source = source  # the Workspace: thumbnail(sample_id, size) -> path
        self.pixel_size = int(pixel_size)
        self.display_size = int(display_size or pixel_size)
        self.max_pending = int(max_pending)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max(1, threads))
        self._lock = threading.Lock()
        self._pending: collections.OrderedDict[int, None] = collections.OrderedDict()
        self._inflight: set[int] = set()
        self._drainers = 0
        self._closed = False
        self._signals = _LoaderSignals(self)
        self._signals.loaded.connect(self.loaded, Qt.QueuedConnection)
        self._signals.failed.connect(self.failed, Qt.QueuedConnection)

    def request(self, sample_id: int) -> None:
        """Ask for ``sample_id``'s thumbnail (no-op if already queued or loading)."""
        with self._lock:
            if self._closed or sample_id in self._inflight:
                return
            if sample_id in self._pending:
                self._pending.move_to_end(sample_id)
            else:
                self._pending[sample_id] = None
                while len(self._pending) > self.max_pending:  # scrolled past: drop the oldest
                    self._pending.popitem(last=False)
            start = self._drainers < self.pool.maxThreadCount()
            if start:
                self._drainers += 1
        if start:
            self.pool.start(_DrainQueue(self))

    def cancel_all(self) -> None:
        """Forget queued requests (those being loaded finish)."""
        with self._lock:
            self._pending.clear()

    def close(self) -> None:
        """Refuse new requests, drop queued ones and wait for the loading threads."""
        with self._lock:
            self._closed = True
            self._pending.clear()
        if not self.pool.waitForDone(SHUTDOWN_WAIT_MS):
            log.warning("thumbnail loading did not stop within %.0f s", SHUTDOWN_WAIT_MS / 1000)

    def wait(self, msecs: int = -1) -> bool:
        """Wait for the loading threads to finish (used on shutdown and in tests)."""
        return self.pool.waitForDone(msecs)

    def _next(self) -> int | None:
        with self._lock:
            if not self._pending:
                self._drainers -= 1
                return None
            sample_id, _ = self._pending.popitem(last=True)
            self._inflight.add(sample_id)
            return sample_id

    def _finish(self, sample_id: int) -> None:
        with self._lock:
            self._inflight.discard(sample_id)


# ------------------------------------------------------------------------------ model and view


def placeholder_pixmap(size: int, ratio: float, color: str, text: str = "") -> QPixmap:
    """A rounded grey tile shown while a thumbnail loads (or when it cannot)."""
    pixmap = QPixmap(int(size * ratio), int(size * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.Antialiasing)
    painter.setPen(Qt.NoPen)
    painter.setBrush(QColor(color))
    painter.drawRoundedRect(4, 4, size - 8, size - 8, 8, 8)
    if text:
        painter.setPen(QColor("#8a93a3"))
        painter.drawText(QRectF(0, 0, size, size), Qt.AlignCenter, text)
    painter.end()
    return pixmap


class SampleListModel(QAbstractListModel):
    """Rows are sample ids; DecorationRole is the thumbnail, DisplayRole the caption."""

    def __init__(self, source, ratio: float = 1.0, parent: QObject | None = None):
        super().__init__(parent)
        self.ratio = max(1.0, float(ratio))
        pixel = int(ICON * self.ratio)
        self.loader = ThumbnailLoader(
            source, pixel_size=160 if pixel <= 160 else 320, display_size=pixel, parent=self
        )
        self.loader.loaded.connect(self._loaded)
        self.loader.failed.connect(self._failed)
        self.cache = PixmapCache()
        self.ids: list[int] = []
        self.captions: dict[int, str] = {}
        self.wrong: set[int] = set()
        self._rows: dict[int, int] = {}
        self._broken: set[int] = set()
        self._placeholder = placeholder_pixmap(ICON, self.ratio, "#c9ced8")
        self._broken_pixmap = placeholder_pixmap(ICON, self.ratio, "#e7b9b9", "?")

    def set_rows(self, rows: GalleryRows) -> None:
        """Show ``rows`` (keeps cached thumbnails)."""
        self.beginResetModel()
        self.loader.cancel_all()
        self.ids = list(rows.ids)
        self.captions = dict(rows.captions)
        self.wrong = set(rows.wrong)
        self._rows = {sid: row for row, sid in enumerate(self.ids)}
        self.endResetModel()

    def forget(self, sample_ids=None) -> None:
        """Drop cached thumbnails (all, or of ``sample_ids``) so they reload."""
        if sample_ids is None:
            self.cache.clear()
            self._broken.clear()
        else:
            for sid in sample_ids:
                self.cache._items.pop(sid, None)
                self._broken.discard(sid)

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: B008 (Qt's own signature)
        return 0 if parent.isValid() else len(self.ids)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or index.row() >= len(self.ids):
            return None
        sid = self.ids[index.row()]
        if role == Qt.DisplayRole:
            return self.captions.get(sid, "")
        if role == Qt.DecorationRole:
            pixmap = self.cache.get(sid)
            if pixmap is not None:
                return pixmap
            if sid in self._broken:
                return self._broken_pixmap
            self.loader.request(sid)
            return self._placeholder
        if role == SampleIdRole:
            return sid
        if role == Qt.ToolTipRole:
            return f"#{sid}: {self.captions.get(sid, '')}"
        if role == Qt.ForegroundRole:
            if sid in self.wrong:
                return QColor("#d0393e")
            if self.captions.get(sid) == "unlabeled":
                return QColor("#8a93a3")
        return None

    def row_of(self, sample_id: int) -> int:
        return self._rows.get(sample_id, -1)

    @Slot(int, QImage)
    def _loaded(self, sample_id: int, image: QImage) -> None:
        pixmap = QPixmap.fromImage(image)
        pixmap.setDevicePixelRatio(self.ratio)
        self.cache.put(sample_id, pixmap)
        self._changed(sample_id)

    @Slot(int, str)
    def _failed(self, sample_id: int, _reason: str) -> None:
        self._broken.add(sample_id)
        self._changed(sample_id)

    def _changed(self, sample_id: int) -> None:
        row = self._rows.get(sample_id)
        if row is not None:
            index = self.index(row)
            self.dataChanged.emit(index, index, [Qt.DecorationRole])


class GalleryView(QListView):
    """An icon grid tuned for many items (uniform sizes, batched layout)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("Gallery")
        self.setViewMode(QListView.IconMode)
        self.setUniformItemSizes(True)
        self.setLayoutMode(QListView.Batched)
        self.setBatchSize(256)
        self.setMovement(QListView.Static)
        self.setResizeMode(QListView.Adjust)
        self.setIconSize(QSize(ICON, ICON))
        self.setGridSize(QSize(ICON + 22, ICON + 34))
        self.setSpacing(4)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.ElideRight)
        self.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # the grid always fits the width
        self.setVerticalScrollMode(QAbstractItemView.ScrollPerPixel)
        self.verticalScrollBar().setSingleStep(24)
        self.setDragEnabled(False)

    def resizeEvent(self, event) -> None:
        """Spread the columns over the whole width instead of leaving a gap on the right."""
        width = self.viewport().width() - 2 * self.spacing()
        columns = max(1, width // (ICON + 22))
        cell = max(ICON + 22, width // columns)
        if self.gridSize().width() != cell:
            self.setGridSize(QSize(cell, ICON + 34))
        super().resizeEvent(event)

    def selected_ids(self) -> list[int]:
        return [index.data(SampleIdRole) for index in self.selectionModel().selectedIndexes()]
