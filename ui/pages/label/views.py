"""How the Label page shows one sample, chosen by the project's input kind (image, text, audio).

A view is a widget plus two steps: :meth:`SampleView.load` reads what the sample needs on a worker
thread (a decoded image, a text), :meth:`SampleView.show` puts it on screen on the UI thread. A new
input kind adds a view class, named by its entry in ``ui/kinds.py`` (or given to :func:`register_view`).
"""

from __future__ import annotations

import collections

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QImage, QImageReader
from PySide6.QtWidgets import QWidget

from ...canvas import BoxCanvas

MAX_SIDE = 2048  # images are decoded at most this large for display


def read_image(path, max_side: int = MAX_SIDE) -> QImage:
    """Decode ``path`` EXIF-oriented, at most ``max_side`` pixels on its longest side (any thread)."""
    reader = QImageReader(str(path))
    reader.setAutoTransform(True)
    size = reader.size()
    if size.isValid() and max(size.width(), size.height()) > max_side:
        reader.setScaledSize(size.scaled(QSize(max_side, max_side), Qt.KeepAspectRatio))
    image = reader.read()
    if image.isNull():
        raise ValueError(f"{path}: {reader.errorString()}")
    return image


class SampleView:
    """Shows one sample of an input kind. Subclasses set :attr:`widget` in ``__init__``.

    Attributes
    ----------
    widget : QWidget
        What the page puts in its main area.
    cacheable : bool
        Whether the page may keep :meth:`load` results to go back and forth quickly.
    """

    cacheable = True

    def __init__(self):
        self.widget: QWidget = QWidget()

    @staticmethod
    def load(sample):
        """Worker thread: what :meth:`show` needs (for example the decoded image)."""
        return None

    def show(self, sample, payload) -> None:
        """UI thread: put ``sample`` on screen."""

    def clear(self) -> None:
        """Show nothing."""


class ImageView(SampleView):
    """An image on the labeling canvas (the boxes annotator draws on the same canvas)."""

    def __init__(self):
        super().__init__()
        self.canvas = BoxCanvas()
        self.widget = self.canvas

    @staticmethod
    def load(sample) -> QImage:
        return read_image(sample.path)

    def show(self, sample, payload) -> None:
        size = (sample.width, sample.height) if sample.width and sample.height else None
        self.canvas.set_image(payload, size)

    def clear(self) -> None:
        self.canvas.set_image(None)


#: input kind -> view class, for views registered from outside (``ui/kinds.py`` names the built-in ones).
VIEWS: dict[str, type[SampleView]] = {}


def register_view(input_kind: str, view: type[SampleView]) -> None:
    """Show samples of ``input_kind`` with ``view`` on the Label page."""
    VIEWS[input_kind] = view


class PayloadCache:
    """The last ``size`` loaded payloads by sample id, for going back and forth quickly."""

    def __init__(self, size: int = 12):
        self.size = size
        self._items: collections.OrderedDict[int, object] = collections.OrderedDict()

    def get(self, sample_id: int):
        return self._items.get(sample_id)

    def __contains__(self, sample_id: int) -> bool:
        return sample_id in self._items

    def put(self, sample_id: int, payload) -> None:
        self._items[sample_id] = payload
        self._items.move_to_end(sample_id)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()
