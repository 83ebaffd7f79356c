"""The Label step: one sample at a time, classes on buttons with stable keys, undo.

The sample is shown by a view chosen by the project's input kind (:mod:`.views`), and its target is
edited by an annotator chosen by the project's target (:mod:`.annotators`): this page never tests a
task name. Keyboard: each class's key (shown on its button), Left/Right previous/next, Enter accepts
the model's suggestion, Ctrl+Z undoes, Delete removes the selected box. Typing in a field never labels.

Every read and write goes through the page's one-thread pool, so writes land in order and a sample
is always read after the writes that came before it; the UI thread never waits on the workspace.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
)

from ...kinds import label_view
from ...page import Page
from ...widgets.elided_label import ElidedLabel
from ...wording import file_name
from .annotators import ANNOTATORS
from .class_edit import ClassEditor
from .class_panel import KEYS
from .fresh_suggestions import ask_fresh_suggestion
from .heatmap_hint import HeatmapHint
from .keep_up_bar import KeepUpBar
from .side_panel import SidePanel
from .table_mode import show_table
from .views import PayloadCache

log = logging.getLogger(__name__)

ORDERS = (
    ("order", "In the order they were added"),
    ("unlabeled", "Unlabeled first"),
    ("uncertain", "Label these next (model unsure)"),
)


class LabelPage(Page):
    """Label the current project's samples.

    Signals
    -------
    sample_shown(sample_id)
        A sample is on screen with its annotations (tests wait on this).
    """

    sample_shown = Signal(int)

    title = "Label"
    empty_text = "Nothing to label yet. Add some on the Data step."
    empty_button = "Go to Data"
    empty_target = "data"
    threads = 1  # reads after the writes before them, writes in order

    def __init__(self, workspace, parent=None):
        super().__init__(workspace, parent)
        self.info: dict = {}
        self.counts: dict[str, int] = {}
        self.order: list[int] = []
        self.index = -1
        self.sample = None
        self.model_id: str | None = None
        self.suggestions: dict[int, tuple[str, float]] = {}
        self.proposals: dict[int, list] = {}
        self.undo_stack: list[tuple[int, object]] = []
        self.views: dict = {}
        self.view = None
        self.annotators: dict = {}
        self.annotator = None
        self._cache = PayloadCache(12)
        self._wanted: int | None = None
        self._select: int | None = None  # a sample asked for (show_sample) that the next load honours
        self._build()
        self._shortcuts()
        self.class_editor = ClassEditor(self)
        self.heatmap_hint = HeatmapHint(self)

    @property
    def labels(self) -> list[str]:
        """The project's classes, sorted by name."""
        return self.panel.labels

    class_buttons = property(lambda self: self.panel.buttons)
    new_class = property(lambda self: self.panel.new_class)

    @property
    def canvas(self):
        """The image canvas (None before an image project was shown)."""
        return getattr(self.views.get("image"), "canvas", None)

    # -- layout ----------------------------------------------------------------------------------

    def _build(self) -> None:
        self.order_box = QComboBox()
        for key, text in ORDERS:
            self.order_box.addItem(text, key)
        self.order_box.setCurrentIndex(1)  # unlabeled first: pick up where the work is
        self.order_box.currentIndexChanged.connect(lambda _i: self.refresh())
        self.train_button = QPushButton("Train a model  ›")
        self.train_button.clicked.connect(lambda: self.navigate.emit("train"))
        self.order_label = self.header.add(QLabel("Order"))
        self.header.add(self.order_box)
        self.header.add(self.train_button)
        self.keep_up = KeepUpBar(self)  # "Improve as I label"

        self.view_stack = QStackedWidget()
        self.prev_button = QPushButton("‹  Previous")
        self.prev_button.clicked.connect(self.previous)
        self.next_button = QPushButton("Next  ›")
        self.next_button.clicked.connect(self.next)
        self.position = ElidedLabel(breaks="  ·  ")  # a narrow window: two lines before "…"
        self.position.setAlignment(Qt.AlignCenter)
        self.position.setObjectName("Muted")
        self.position.setMinimumWidth(10)
        nav = QHBoxLayout()
        nav.addWidget(self.prev_button)
        nav.addStretch(1)
        nav.addWidget(self.next_button)
        left = QVBoxLayout()
        left.addWidget(self.view_stack, 1)
        left.addLayout(nav)
        left.addWidget(self.position)  # under the buttons: a narrow window has no room between them
        left.addWidget(self.keep_up)

        self.side = SidePanel()
        self.panel = self.side.classes
        self.panel.chosen.connect(self.choose_label)
        self.panel.add_requested.connect(self.add_class)
        self.side.accept_button.clicked.connect(self.accept_suggestion)
        self.side.clear_button.clicked.connect(self.clear_annotations)
        self.side.undo_button.clicked.connect(self.undo)
        for name in "banner suggestion_label accept_button clear_button undo_button keys_help".split():
            setattr(self, name, getattr(self.side, name))

        content = QHBoxLayout(self.body)
        content.setContentsMargins(0, 0, 0, 0)
        content.setSpacing(14)
        content.addLayout(left, 1)
        content.addWidget(self.side)

    def _shortcuts(self) -> None:
        def bind(key, slot):
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(Qt.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)

        for key in KEYS:
            bind(key, lambda k=key: self.press_key(k))
        for keys, slot in (
            ((Qt.Key_Right,), self.next),
            ((Qt.Key_Left,), self.previous),
            ((Qt.Key_Return, Qt.Key_Enter), self._enter),
            ((QKeySequence.Undo,), self.undo),
            ((QKeySequence.Redo,), lambda: self.annotator is not None and self.annotator.redo()),
            ((Qt.Key_Delete, Qt.Key_Backspace), self._delete_key),
        ):
            for key in keys:
                bind(key, slot)

    @staticmethod
    def _typing() -> bool:
        """True while a text field has the focus: keys then type, they never label."""
        return isinstance(QApplication.focusWidget(), QLineEdit)

    # -- project and loading ---------------------------------------------------------------------

    def project_changed(self) -> None:
        self.order, self.index, self.sample, self.info = [], -1, None, {}
        self.undo_stack.clear()
        self.undo_button.setEnabled(False)
        self._cache.clear()
        self.keep_up.set_project(self.project)
        self.panel.set_project(self.project)
        if self.view is not None:
            self.view.clear()

    def load_request(self) -> dict:
        return {"mode": self.order_box.currentData()}

    def load(self, project: str, mode: str = "unlabeled") -> dict:
        ws = self.ws
        models = ws.list_models(project)
        model_id = models[-1]["id"] if models else None
        return {
            "info": ws.project_info(project),
            "stats": ws.stats(project),
            "labels": ws.labels(project),
            "model_id": model_id,
            "suggestions": ws.suggestions(project, model_id) if model_id else {},
            "proposals": ws.box_proposals(project, model_id) if model_id else {},
            "order": ws.labeling_order(project, mode, model_id),
            "first": ws.sample_ids(project, unlabeled=True)[:1],
            "mode": mode,
        }

    def show_data(self, data: dict) -> None:
        target = data["info"].get("annotation") or data["info"].get("target", "label")
        if target not in ANNOTATORS:  # a task whose annotator this build lacks (e.g. masks)
            self.show_empty(True, f"This version cannot paint {target}s here: import photos with {target}s.")
            return
        if show_table(self, data):  # rows of a table are labeled in the table
            return
        self._configure(data["info"], data["labels"])
        self.model_id, self.suggestions = data["model_id"], data["suggestions"]
        self.proposals = data.get("proposals") or {}
        self.order_box.model().item(2).setEnabled(self.model_id is not None)
        self.counts = {label: 0 for label in data["labels"]} | dict(data["stats"]["labels"])
        self.panel.set_labels(self.counts)
        self._show_counts(data["stats"])
        self.order = data["order"]
        self.show_empty(not self.order)
        keep = self.sample.id if self.sample is not None else None
        unlabeled = data["stats"]["samples"] - data["stats"]["labeled"]
        if keep in self.order and self.order.index(keep) >= unlabeled > 0 and data["mode"] != "order":
            keep = None  # "unlabeled first" or "label these next" opens on work still to do
        wanted = self._select if self._select is not None else keep
        self._select = None
        if wanted is None and self.order:
            wanted = data["first"][0] if data["first"] else self.order[0]
        if wanted in self.order:
            self.go_to(self.order.index(wanted))
        elif self.order:
            self.go_to(0)

    def _configure(self, info: dict, labels: list[str]) -> None:
        """Pick the view for the input kind and the annotator for the target."""
        kind, target = info.get("input_kind", "image"), info.get("annotation") or info.get("target", "label")
        if kind not in self.views:
            self.views[kind] = label_view(kind)()
            self.view_stack.addWidget(self.views[kind].widget)
        view = self.views[kind]
        if (kind, target) not in self.annotators:
            annotator = ANNOTATORS[target](view, self)
            annotator.edited.connect(lambda value: self._apply(value))
            annotator.colors_changed.connect(self.panel.set_colors)
            self.annotators[kind, target] = annotator
        annotator = self.annotators[kind, target]
        if annotator is not self.annotator and self.annotator is not None:
            self.annotator.deactivate()
        self.info, self.view, self.annotator = info, view, annotator
        self.view_stack.setCurrentWidget(view.widget)
        annotator.activate(labels)
        self.side.configure(annotator)

    def _show_counts(self, stats: dict | None = None) -> None:
        noun = self.annotator.noun if self.annotator is not None else "example"
        self.panel.set_counts(self.counts, noun)
        if stats is not None:
            self.header.set_subtitle(f"{stats['labeled']:,} of {stats['samples']:,} labeled")
            done = stats["samples"] > 0 and stats["labeled"] >= stats["samples"]
            if done != (self.train_button.objectName() == "Primary"):  # all labeled: the next step stands out
                self.train_button.setObjectName("Primary" if done else "")
                # the same words either way (the subtitle says "all labeled"): longer ones were cut at 760 px
                self.train_button.setToolTip("Everything is labeled: train a model" if done else "")
                self.train_button.style().polish(self.train_button)

    # -- navigation ----------------------------------------------------------------------------------

    def go_to(self, index: int) -> None:
        """Show the sample at ``index`` of the labeling order."""
        if not self.order or self.view is None:
            return
        index = max(0, min(index, len(self.order) - 1))
        self.index = index
        sample_id = self.order[index]
        self._wanted = sample_id
        self.position.setText(f"{index + 1:,} of {len(self.order):,}")
        self.prev_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(self.order) - 1)
        ws, view, annotator = self.ws, self.view, self.annotator
        cached = self._cache.get(sample_id) if view.cacheable else None

        def read(_state):
            sample = ws.sample(sample_id)
            annotator.load(ws, sample)
            return sample, cached if cached is not None else view.load(sample)

        self.run(read, self._sample_ready, title="Could not show this sample")
        if view.cacheable:
            for neighbour in self.order[index + 1 : index + 3]:  # read ahead
                if neighbour not in self._cache:
                    self.run(
                        lambda _s, n=neighbour: (n, view.load(ws.sample(n))),
                        self._prefetched,
                        on_failed=lambda message, _d: log.info("read-ahead failed: %s", message),
                    )

    def next(self) -> None:
        if self.index < len(self.order) - 1:
            self.go_to(self.index + 1)

    def previous(self) -> None:
        if self.index > 0:
            self.go_to(self.index - 1)

    def show_sample(self, sample_id: int) -> None:
        """Show ``sample_id`` (e.g. a mistake picked on the Evaluate step), even if a refresh is
        under way: the refresh then lands on it too."""
        sample_id = int(sample_id)
        self._select = sample_id
        if sample_id in self.order and not self.latest.running:
            self._select = None
            self.go_to(self.order.index(sample_id))
        elif sample_id not in self.order:
            self.order_box.blockSignals(True)
            self.order_box.setCurrentIndex(0)
            self.order_box.blockSignals(False)
            self.refresh()

    def _prefetched(self, result) -> None:
        self._cache.put(*result)

    def _sample_ready(self, result) -> None:
        sample, payload = result
        if sample.id != self._wanted:
            return
        if self.view.cacheable:
            self._cache.put(sample.id, payload)
        self.sample = sample
        self.view.show(sample, payload)
        self.annotator.show(sample, self.labels)
        self._show_sample_state()
        self.heatmap_hint.show(sample, self.model_id)  # an anomaly model: where it looks unlike good parts
        self.sample_shown.emit(sample.id)
        ask_fresh_suggestion(self, sample)

    def _show_sample_state(self) -> None:
        sample = self.sample
        if sample is None:
            return
        self.panel.set_checked(self.annotator.checked(sample))
        self.clear_button.setEnabled(bool(sample.labels or getattr(sample, "boxes", None)))
        self.position.setText(
            f"{self.index + 1:,} of {len(self.order):,}  ·  {file_name(sample.source)}"
            f"  ·  {self.annotator.describe(sample)}"
        )
        suggestion = self.suggestions.get(sample.id)
        if suggestion and not sample.labels and self.annotator.takes_suggestions:
            label, score = suggestion
            proposal = self.proposals.get(sample.id)
            self.side.show_suggestion(self.annotator.suggestion_text(label, score, proposal))
            self.annotator.show_proposal(proposal)
        else:
            self.annotator.show_proposal(None)
            self.side.show_suggestion(None)

    # -- labeling ---------------------------------------------------------------------------------------

    def press_key(self, key: str) -> None:
        """What a class key does (nothing while a text field has the focus)."""
        if self._typing():
            return
        label = self.panel.label_for_key(key)
        if label is not None:
            self.choose_label(label)

    def choose_label(self, label: str) -> None:
        if self.annotator is None or self.sample is None:
            return
        value = self.annotator.choose(self.sample, label)
        self.panel.set_checked(self.annotator.checked(self.sample))
        if value is None:
            return
        self._apply(value)
        if self.annotator.advances():
            self.next()

    def accept_suggestion(self) -> None:
        """Take the model's suggestion for the current sample (Enter)."""
        sample = self.sample
        if (
            sample is None
            or sample.id not in self.suggestions
            or sample.labels
            or not self.annotator.takes_suggestions
        ):
            return
        self._apply(
            self.annotator.from_suggestion(self.suggestions[sample.id][0], self.proposals.get(sample.id))
        )
        if self.annotator.advances():
            self.next()

    def _enter(self) -> None:
        if QApplication.focusWidget() is self.panel.new_class:  # the page's shortcut gets Enter first
            self.panel.submit()
        elif not self._typing():
            self.accept_suggestion()

    def _delete_key(self) -> None:
        if not self._typing() and self.view is not None and hasattr(self.view, "canvas"):
            self.view.canvas.delete_selected()

    def clear_annotations(self) -> None:
        if self.sample is not None:
            self._apply(self.annotator.cleared())

    def add_class(self, name: str) -> None:
        """Add a class (stored right away so it survives with no sample labeled yet)."""
        if name in self.labels or self.project is None:
            return
        project, ws = self.project, self.ws
        self.counts.setdefault(name, 0)
        self.panel.set_labels(self.counts)
        self._show_counts()
        if self.annotator is not None:
            self.annotator.activate(self.labels)
            if self.sample is not None:
                self.panel.set_checked(self.annotator.checked(self.sample))
        self.run(lambda _s: ws.add_class(project, name), title="Could not add the class")

    def _apply(self, value, *, record: bool = True) -> None:
        """Write ``value`` as the current sample's annotation (through the ordered pool)."""
        sample = self.sample
        if sample is None:
            return
        old = self.annotator.value(sample)
        if record and not self.annotator.history:  # else the annotator keeps its own
            self.undo_stack.append((sample.id, old))
            self.undo_button.setEnabled(True)
        self._set_local(sample, old, value)
        self._write(sample.id, value)

    def _set_local(self, sample, old, value) -> None:
        annotator = self.annotator
        for label in annotator.names(old):
            self.counts[label] = self.counts.get(label, 1) - 1
        for label in annotator.names(value):
            self.counts[label] = self.counts.get(label, 0) + 1
        annotator.set_local(sample, value)
        if sorted(self.counts) != self.labels:
            self.panel.set_labels(self.counts)
        self._show_counts()
        self._show_sample_state()

    def _write(self, sample_id: int, value) -> None:
        ws, project, target = self.ws, self.project, self.annotator.target

        def write(_state):
            ws.annotate(sample_id, target, value)
            return ws.stats(project)

        self.run(write, self._written, title="Could not save the label")

    def _written(self, stats: dict) -> None:
        if stats.get("project") == self.project:
            self.counts = {label: 0 for label in self.labels} | dict(stats["labels"])
            self._show_counts(stats)  # the store's counts: right after undo too
            self.keep_up.labeled(stats)
        self.status_changed.emit()

    def shutdown(self) -> None:
        self.keep_up.stop()  # a background run goes on in its worker; the next start follows it
        super().shutdown()

    def undo(self) -> None:
        """Put back the annotation changed last (and show that sample)."""
        if self._typing() or (self.annotator is not None and self.annotator.undo()) or not self.undo_stack:
            return
        sample_id, old = self.undo_stack.pop()
        self.undo_button.setEnabled(bool(self.undo_stack))
        if self.sample is not None and self.sample.id == sample_id:
            self._set_local(self.sample, self.annotator.value(self.sample), old)
        self._write(sample_id, old)
        if sample_id in self.order:
            self.go_to(self.order.index(sample_id))
