"""The Label step: one image at a time, classes on buttons and number keys, boxes for detection.

Keyboard: 1-9 pick a class (single-label: label and go to the next image; multi-label: toggle the
tag; detection: the class of new or selected boxes), Left/Right previous/next, Enter accepts the
model's suggestion, Ctrl+Z undoes, Delete removes the selected box.

Every store read and write goes through one single-thread pool, so writes land in order and a
sample is always read after the writes that came before it; the UI thread never waits on SQLite.
"""

from __future__ import annotations

import collections
import logging

from PySide6.QtCore import QSize, Qt, QThreadPool, Signal
from PySide6.QtGui import QColor, QImage, QImageReader, QKeySequence, QPainter, QShortcut
from PySide6.QtWidgets import (QComboBox, QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QVBoxLayout, QWidget)

from ..canvas import BoxCanvas
from ..widgets.error_dialog import show_error
from ..workers import run_task

log = logging.getLogger(__name__)

MAX_SIDE = 2048      # images are decoded at most this large for display
IMAGE_CACHE = 12     # decoded images kept for going back and forth
ORDERS = (("order", "In the order they were added"), ("unlabeled", "Unlabeled first"),
          ("uncertain", "Label these next (model unsure)"))


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


class ClassButton(QPushButton):
    """A class on a button: its number key and name on the left, how many examples it has on the right."""

    def __init__(self, key: str, name: str, parent=None):
        super().__init__(f"{key}    {name}" if key else f"      {name}", parent)
        self.setObjectName("ClassButton")
        self.setCheckable(True)
        self.setFocusPolicy(Qt.NoFocus)
        self.count = 0

    def set_count(self, count: int) -> None:
        self.count = int(count)
        self.setToolTip(f"{self.count:,} example{'s' if self.count != 1 else ''}")
        self.update()

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        painter = QPainter(self)
        color = self.palette().highlightedText().color() if self.isChecked() else QColor("#8a93a3")
        painter.setPen(color)
        painter.drawText(self.rect().adjusted(0, 0, -12, 0), Qt.AlignRight | Qt.AlignVCenter, f"{self.count:,}")


def labeling_order(ws, project: str, mode: str, model_id: str | None) -> list[int]:
    """Sample ids in the order to label them (worker thread)."""
    store = ws.store
    if mode == "order":
        return store.sample_ids(project)
    unlabeled = store.sample_ids(project, unlabeled=True)
    labeled = store.sample_ids(project, unlabeled=False)
    if mode == "uncertain" and model_id:
        first = ws.uncertainty_order(project, model_id)
        seen = set(first)
        unlabeled = first + [s for s in unlabeled if s not in seen]
    return unlabeled + labeled


class LabelPage(QWidget):
    """Label the current project's samples.

    Signals
    -------
    status_changed()
        A label was written (the frame updates the sidebar).
    navigate(key)
        Go to another step.
    sample_shown(sample_id)
        A sample is on screen with its annotations (tests wait on this).
    """

    status_changed = Signal()
    navigate = Signal(str)
    sample_shown = Signal(int)

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.project: str | None = None
        self.task = "image-classification"
        self.labels: list[str] = []
        self.counts: dict[str, int] = {}
        self.order: list[int] = []
        self.index = -1
        self.sample = None
        self.model_id: str | None = None
        self.suggestions: dict[int, tuple[str, float]] = {}
        self.undo_stack: list[tuple[int, str, object]] = []
        self.io = QThreadPool(self)
        self.io.setMaxThreadCount(1)
        self._shut = False  # after shutdown() no new background work starts
        self._images: collections.OrderedDict[int, QImage] = collections.OrderedDict()
        self._tasks = set()
        self._wanted: int | None = None
        self._pending_select: int | None = None
        self._build()
        self._shortcuts()

    # -- layout ----------------------------------------------------------------------------------

    def _build(self) -> None:
        title = QLabel("Label")
        title.setObjectName("PageTitle")
        self.subtitle = QLabel()
        self.subtitle.setObjectName("Muted")
        self.order_box = QComboBox()
        for key, text in ORDERS:
            self.order_box.addItem(text, key)
        self.order_box.setCurrentIndex(1)  # unlabeled first: pick up where the work is
        self.order_box.currentIndexChanged.connect(lambda _i: self.reload_order())
        self.train_button = QPushButton("Train a model  ›")
        self.train_button.clicked.connect(lambda: self.navigate.emit("train"))
        header = QHBoxLayout()
        heading = QVBoxLayout()
        heading.addWidget(title)
        heading.addWidget(self.subtitle)
        header.addLayout(heading, 1)
        header.addWidget(QLabel("Order"), 0, Qt.AlignBottom)
        header.addWidget(self.order_box, 0, Qt.AlignBottom)
        header.addWidget(self.train_button, 0, Qt.AlignBottom)

        self.canvas = BoxCanvas()
        self.canvas.boxes_edited.connect(self._boxes_edited)
        self.prev_button = QPushButton("‹  Previous")
        self.prev_button.clicked.connect(self.previous)
        self.next_button = QPushButton("Next  ›")
        self.next_button.clicked.connect(self.next)
        self.position = QLabel()
        self.position.setAlignment(Qt.AlignCenter)
        self.position.setObjectName("Muted")
        nav = QHBoxLayout()
        nav.addWidget(self.prev_button)
        nav.addWidget(self.position, 1)
        nav.addWidget(self.next_button)
        left = QVBoxLayout()
        left.addWidget(self.canvas, 1)
        left.addLayout(nav)

        side = QFrame()
        side.setObjectName("Card")
        side.setFixedWidth(290)
        self.classes_title = QLabel("Classes")
        self.classes_title.setStyleSheet("font-weight: 600; font-size: 15px;")
        self.classes_hint = QLabel()
        self.classes_hint.setObjectName("Muted")
        self.classes_hint.setWordWrap(True)
        self.buttons_box = QVBoxLayout()
        self.buttons_box.setSpacing(6)
        self.class_buttons: list[ClassButton] = []
        self.new_class = QLineEdit()
        self.new_class.setPlaceholderText("Add a class: type a name, press Enter")
        self.new_class.returnPressed.connect(self.add_class_from_field)

        self.banner = QFrame()
        self.banner.setObjectName("Banner")
        self.suggestion_label = QLabel()
        self.suggestion_label.setWordWrap(True)
        self.accept_button = QPushButton("Accept  (Enter)")
        self.accept_button.setObjectName("Primary")
        self.accept_button.clicked.connect(self.accept_suggestion)
        banner_layout = QVBoxLayout(self.banner)
        banner_layout.addWidget(self.suggestion_label)
        banner_layout.addWidget(self.accept_button)
        self.banner.hide()

        self.clear_button = QPushButton("Clear label")
        self.clear_button.clicked.connect(self.clear_annotations)
        self.undo_button = QPushButton("Undo  (Ctrl+Z)")
        self.undo_button.clicked.connect(self.undo)
        self.undo_button.setEnabled(False)
        actions = QHBoxLayout()
        actions.addWidget(self.clear_button)
        actions.addWidget(self.undo_button)
        self.keys_help = QLabel()
        self.keys_help.setObjectName("Muted")
        self.keys_help.setWordWrap(True)

        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(16, 14, 16, 14)
        side_layout.setSpacing(8)
        side_layout.addWidget(self.classes_title)
        side_layout.addWidget(self.classes_hint)
        side_layout.addLayout(self.buttons_box)
        side_layout.addWidget(self.new_class)
        side_layout.addSpacing(6)
        side_layout.addWidget(self.banner)
        side_layout.addStretch(1)
        side_layout.addLayout(actions)
        side_layout.addWidget(self.keys_help)

        content = QHBoxLayout()
        content.setSpacing(14)
        content.addLayout(left, 1)
        content.addWidget(side)
        self.empty = QLabel("No images to label yet. Add some on the Data step.")
        self.empty.setObjectName("Muted")
        self.empty.setAlignment(Qt.AlignCenter)
        self.empty.hide()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 18, 24, 18)
        layout.setSpacing(10)
        layout.addLayout(header)
        layout.addWidget(self.empty)
        layout.addLayout(content, 1)

    def _shortcuts(self) -> None:
        def bind(key, slot):
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(Qt.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)
            return shortcut

        for number in range(1, 10):
            bind(str(number), lambda n=number: self.choose(n - 1))
        bind(Qt.Key_Right, self.next)
        bind(Qt.Key_Left, self.previous)
        bind(Qt.Key_Return, self._enter)
        bind(Qt.Key_Enter, self._enter)
        bind(QKeySequence.Undo, self.undo)
        bind(Qt.Key_Delete, self.canvas.delete_selected)
        bind(Qt.Key_Backspace, self.canvas.delete_selected)

    # -- project ---------------------------------------------------------------------------------

    def set_project(self, name: str | None) -> None:
        if name == self.project:
            return
        self.project = name
        self.order, self.index, self.sample = [], -1, None
        self.undo_stack.clear()
        self.undo_button.setEnabled(False)
        self._images.clear()
        self.canvas.set_image(None)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the task, classes, model suggestions and the labeling order."""
        if self.project is None:
            return
        self.reload_order(keep=self.sample.id if self.sample is not None else None)

    def reload_order(self, keep: int | None = None) -> None:
        project, ws = self.project, self.ws
        if project is None:
            return
        mode = self.order_box.currentData()

        def work(_state):
            info = ws.store.get_project(project)
            stats = ws.stats(project)
            models = ws.list_models(project)
            model_id = models[-1]["id"] if models else None
            suggestions = ws.suggestions(project, model_id) if model_id else {}
            order = labeling_order(ws, project, mode, model_id)
            first = ws.store.sample_ids(project, unlabeled=True)[:1]
            return project, info.task, stats, model_id, suggestions, order, first

        self._run(work, self._order_ready, keep=keep)

    def _order_ready(self, result, keep=None) -> None:
        project, task, stats, model_id, suggestions, order, first = result
        if project != self.project:
            return
        self.task = task
        self.model_id, self.suggestions = model_id, suggestions
        self.order_box.model().item(2).setEnabled(model_id is not None)
        self._set_stats(stats)
        self.order = order
        self.empty.setVisible(not order)
        wanted = self._pending_select if self._pending_select is not None else keep
        self._pending_select = None
        if wanted is None and order:
            wanted = first[0] if first else order[0]
        if wanted in order:
            self.go_to(order.index(wanted))
        elif order:
            self.go_to(0)
        self._configure_for_task()

    def _set_stats(self, stats: dict) -> None:
        self.counts = dict(stats["labels"])
        labels = sorted(self.counts)
        if labels != self.labels:
            self.labels = labels
            self._rebuild_buttons()
        self._update_counts()
        self.subtitle.setText(f"{stats['labeled']:,} of {stats['samples']:,} images labeled")

    def _configure_for_task(self) -> None:
        detection = self.task == "object-detection"
        multi = self.task == "image-multilabel"
        self.canvas.drawing = detection
        self.clear_button.setText("Delete all boxes" if detection else "Clear tags" if multi else "Clear label")
        if detection:
            self.classes_hint.setText("Pick a class, then drag on the image to draw a box around each "
                                      "object. Drag a box to move it, its corners to resize it.")
            keys = "1–9 pick the class · Delete removes the selected box"
        elif multi:
            self.classes_hint.setText("Click or press 1–9 to switch each tag that fits this image on or off.")
            keys = "1–9 switch a tag"
        else:
            self.classes_hint.setText("Click the class of this image or press its number; "
                                      "the next image follows.")
            keys = "1–9 choose the class"
        enter = "" if detection else " · Enter accepts the model's suggestion"
        self.keys_help.setText(f"Keys: {keys} · ← → previous / next{enter} · Ctrl+Z undo")

    # -- classes -----------------------------------------------------------------------------------

    def _rebuild_buttons(self) -> None:
        for button in self.class_buttons:
            self.buttons_box.removeWidget(button)
            button.deleteLater()
        self.class_buttons = []
        for index, label in enumerate(self.labels):
            button = ClassButton(str(index + 1) if index < 9 else "", label)
            button.clicked.connect(lambda _checked=False, i=index: self.choose(i))
            self.buttons_box.addWidget(button)
            self.class_buttons.append(button)
        self._update_counts()
        self._show_checked()

    def _update_counts(self) -> None:
        for label, button in zip(self.labels, self.class_buttons):
            button.set_count(self.counts.get(label, 0))

    def _show_checked(self) -> None:
        current = set(self.sample.labels) if self.sample is not None else set()
        if self.task == "object-detection":
            current = {self.canvas.current_label}
        for label, button in zip(self.labels, self.class_buttons):
            button.setChecked(label in current)

    def add_class_from_field(self) -> None:
        name = self.new_class.text().strip()
        if name:
            self.add_class(name)
        self.new_class.clear()
        self.setFocus()

    def add_class(self, name: str) -> None:
        """Add a class (stored right away so it survives with no image labeled yet)."""
        if name in self.labels:
            return
        project, store = self.project, self.ws.store
        self.counts.setdefault(name, 0)
        self.labels = sorted(self.counts)
        self._rebuild_buttons()
        if self.task == "object-detection" and not self.canvas.current_label:
            self.canvas.current_label = name
            self._show_checked()
        self._run(lambda _s: store.add_label(project, name), None)

    # -- navigation ----------------------------------------------------------------------------------

    def go_to(self, index: int) -> None:
        """Show the sample at ``index`` of the labeling order."""
        if not self.order:
            return
        index = max(0, min(index, len(self.order) - 1))
        self.index = index
        sample_id = self.order[index]
        self._wanted = sample_id
        self.position.setText(f"{index + 1:,} of {len(self.order):,}")
        self.prev_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(self.order) - 1)
        cached = self._images.get(sample_id)
        store = self.ws.store

        def work(_state):
            sample = store.get_sample(sample_id)
            image = cached if cached is not None else read_image(sample.path)
            return sample, image

        self._run(work, self._sample_ready)
        for neighbour in self.order[index + 1:index + 3]:  # read ahead
            if neighbour not in self._images:
                self._run(lambda _s, n=neighbour: (n, read_image(store.get_sample(n).path)),
                          self._prefetched, quiet=True)

    def next(self) -> None:
        if self.index < len(self.order) - 1:
            self.go_to(self.index + 1)

    def previous(self) -> None:
        if self.index > 0:
            self.go_to(self.index - 1)

    def show_sample(self, sample_id: int) -> None:
        """Show ``sample_id`` (e.g. a mistake picked on the Evaluate step)."""
        sample_id = int(sample_id)
        if sample_id in self.order:
            self.go_to(self.order.index(sample_id))
        else:
            self._pending_select = sample_id
            self.order_box.setCurrentIndex(0)
            self.reload_order(keep=sample_id)

    def _prefetched(self, result) -> None:
        sample_id, image = result
        self._cache(sample_id, image)

    def _cache(self, sample_id: int, image: QImage) -> None:
        self._images[sample_id] = image
        self._images.move_to_end(sample_id)
        while len(self._images) > IMAGE_CACHE:
            self._images.popitem(last=False)

    def _sample_ready(self, result) -> None:
        sample, image = result
        if sample.id != self._wanted:
            return
        self._cache(sample.id, image)
        self.sample = sample
        size = (sample.width, sample.height) if sample.width and sample.height else None
        self.canvas.set_image(image, size)
        if self.task == "object-detection":
            self.canvas.set_boxes(sample.boxes)
            if not self.canvas.current_label and self.labels:
                self.canvas.current_label = self.labels[0]
        self._show_position()
        self._show_checked()
        self._show_suggestion()
        self.sample_shown.emit(sample.id)

    def _show_position(self) -> None:
        sample = self.sample
        if sample is None:
            return
        self.clear_button.setEnabled(bool(sample.labels or sample.boxes))
        name = sample.source.rsplit("/", 1)[-1]
        if self.task == "object-detection":
            n = len(sample.boxes)
            state = f"{n} box{'es' if n != 1 else ''}" if n else "no boxes yet"
        else:
            state = ", ".join(sample.labels) if sample.labels else "not labeled yet"
        self.position.setText(f"{self.index + 1:,} of {len(self.order):,}  ·  {name}  ·  {state}")

    def _show_suggestion(self) -> None:
        sample = self.sample
        suggestion = self.suggestions.get(sample.id) if sample is not None else None
        if suggestion and not sample.labels and self.task != "object-detection":
            label, score = suggestion
            self.suggestion_label.setText(f"The model thinks this is <b>{label}</b> ({score:.0%} sure).")
            self.banner.show()
        else:
            self.banner.hide()

    # -- labeling ---------------------------------------------------------------------------------------

    def choose(self, index: int) -> None:
        """What number key ``index + 1`` does for this task."""
        if index >= len(self.labels):
            return
        label = self.labels[index]
        if self.task == "object-detection":
            self.canvas.current_label = label
            self.canvas.relabel_selected(label)
            self._show_checked()
            return
        if self.sample is None:
            return
        if self.task == "image-multilabel":
            tags = set(self.sample.labels) ^ {label}
            self._apply("tags", sorted(tags))
            return
        self._apply("label", label)
        self.next()

    def accept_suggestion(self) -> None:
        """Take the model's suggestion for the current image (Enter)."""
        if self.sample is None or self.sample.id not in self.suggestions or self.sample.labels:
            return
        label = self.suggestions[self.sample.id][0]
        if self.task == "image-multilabel":
            self._apply("tags", [label])
        else:
            self._apply("label", label)
            self.next()

    def _enter(self) -> None:
        if self.new_class.hasFocus():
            self.add_class_from_field()
        else:
            self.accept_suggestion()

    def clear_annotations(self) -> None:
        if self.sample is None:
            return
        if self.task == "object-detection":
            self.canvas.clear_boxes()
            self._apply("boxes", [])
        else:
            self._apply("tags" if self.task == "image-multilabel" else "label", [] if self.task == "image-multilabel" else None)

    def _boxes_edited(self, boxes: list) -> None:
        if self.sample is not None:
            self._apply("boxes", list(boxes), redraw=False)

    def _apply(self, kind: str, value, *, record: bool = True, redraw: bool = True) -> None:
        """Write one annotation change for the current sample (through the ordered pool)."""
        sample = self.sample
        old = {"label": sample.labels[0] if sample.labels else None, "tags": list(sample.labels),
               "boxes": list(sample.boxes)}[kind]
        if record:
            self.undo_stack.append((sample.id, kind, old))
            self.undo_button.setEnabled(True)
        self._local_update(sample, kind, value, redraw)
        self._write(sample.id, kind, value)

    def _local_update(self, sample, kind: str, value, redraw: bool) -> None:
        before = [b.label for b in sample.boxes] if kind == "boxes" else list(sample.labels)
        if kind == "label":
            sample.labels = [value] if value else []
        elif kind == "tags":
            sample.labels = sorted(value)
        else:
            sample.boxes = list(value)
            sample.labels = sorted({b.label for b in value})
            if redraw and sample is self.sample:
                self.canvas.set_boxes(sample.boxes)
        after = [b.label for b in sample.boxes] if kind == "boxes" else list(sample.labels)
        for label in before:
            self.counts[label] = self.counts.get(label, 1) - 1
        for label in after:
            self.counts[label] = self.counts.get(label, 0) + 1
        if sorted(self.counts) != self.labels:
            self.labels = sorted(self.counts)
            self._rebuild_buttons()
        self._update_counts()
        self._show_checked()
        self._show_suggestion()
        if sample is self.sample:
            self._show_position()

    def _write(self, sample_id: int, kind: str, value) -> None:
        store, project, ws = self.ws.store, self.project, self.ws

        def work(_state):
            if kind == "label":
                store.set_label(sample_id, value)
            elif kind == "tags":
                store.set_tags(sample_id, value)
            else:
                store.set_boxes(sample_id, value)
            return ws.stats(project)

        self._run(work, self._written)

    def _written(self, stats: dict) -> None:
        if stats.get("project") == self.project:
            self.subtitle.setText(f"{stats['labeled']:,} of {stats['samples']:,} images labeled")
        self.status_changed.emit()

    def undo(self) -> None:
        """Put back the annotation changed last (and show that image)."""
        if not self.undo_stack:
            return
        sample_id, kind, old = self.undo_stack.pop()
        self.undo_button.setEnabled(bool(self.undo_stack))
        if self.sample is not None and self.sample.id == sample_id:
            self._local_update(self.sample, kind, old, redraw=True)
        value = old if kind != "boxes" else list(old)
        self._write(sample_id, kind, value)
        if sample_id in self.order:
            self.go_to(self.order.index(sample_id))

    # -- plumbing ---------------------------------------------------------------------------------------------

    def _run(self, fn, on_done, *, quiet: bool = False, **extra) -> None:
        if self._shut:
            return
        handle = run_task(fn, pool=self.io, parent=self)
        self._tasks.add(handle)
        if on_done is not None:
            handle.finished.connect(lambda result: on_done(result, **extra) if extra else on_done(result))
        if quiet:
            handle.failed.connect(lambda message, _d: log.info("read-ahead failed: %s", message))
        else:
            handle.failed.connect(lambda message, details: show_error(
                self, "Labeling problem", message, details, self.ws.paths.log))
        handle.ended.connect(lambda: self._tasks.discard(handle))

    def is_idle(self) -> bool:
        """True when no read or write is pending (tests wait on this)."""
        return not self._tasks

    def closeEvent(self, event) -> None:  # when shown on its own; the frame calls shutdown()
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        """Let pending reads and writes finish before the window closes (they are short)."""
        self._shut = True
        self.io.waitForDone()
