"""The annotator of anomaly photos: a class key says good or the kind of defect, and an optional
brush marks where the defect is, over the model's heatmap (the suggestion, drawn by ``HeatmapHint``).

A value is ``(label, defect)``: the photo's label (None: not labeled) and where the defect is, an
``H x W`` bool array at the photo's size (None: nothing marked), as ``Workspace.annotate(id, "defect",
value)`` takes it. The brush and eraser are the segmentation editor's, limited to the one class
"defect"; every finished stroke is written and can be undone with the page's Undo (Ctrl+Z).

Marking a defect on a photo labeled good (or not labeled yet) makes it a defect photo: the project's
only named defect kind when it has exactly one, else "defect" (a kind key can refine it afterwards).
A new project has the classes good and defect from the start (the task's ``classes``), so both keys
are there before any defect photo is imported.
Labeling a photo good takes its marks off (a good part has no defect to show).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject

from modeldesk.app.anomaly_masks import DEFECT_LABEL, is_good_label

from .annotators import Annotator
from .mask_editor import MaskEditor
from .mask_ops import UNLABELED
from .mask_tools import MaskTools

#: the marks' colour: blue stands apart from the heatmap's red and yellow
DEFECT_COLOR = "#1c7ed6"
TOOLS = ("brush", "eraser")
HINTS = {
    "brush": "optional: drag over the defect to show where it is. [ ] size.",
    "eraser": "drag to take marks off.",
}


def _editor_mask(defect: np.ndarray) -> np.ndarray:
    """The editor's form of a defect mask: class 0 (defect) where marked, not labeled elsewhere."""
    return np.where(defect, 0, UNLABELED).astype(np.uint8)


class DefectAnnotator(Annotator):
    """Good or a defect kind per photo (keys), and an optional brush for where the defect is."""

    target = "defect"
    hint = (
        "Press the key of good or of the defect's kind; the next photo follows. Optionally mark where "
        "the defect is with the brush first."
    )
    keys = "the key next to a class chooses it · B brush, E eraser · [ ] brush size · wheel zooms"
    clear_text = "Clear all"  # the label and the marks; longer words overflow the 300 px card
    noun = "photo"

    def __init__(self, view, parent: QObject | None = None):
        super().__init__(view, parent)
        self.canvas = view.canvas  # marks need a view that draws them (images)
        self.editor = MaskEditor(self.canvas, self)
        self.editor.allowed = TOOLS
        self.editor.overlay.colors = [DEFECT_COLOR]
        self.editor.set_class(0, 1)
        self.tools = MaskTools(self.editor, tools=TOOLS, hints=HINTS, erase_text="Erasing: back to no defect")
        self.tools.title.setText("Mark the defect")
        self.tools.title.setWordWrap(True)  # the narrow card of a small window must not be widened
        self.tools.set_class_name("the defect")
        self.tools.set_legend([])
        # one class: the title says what the brush paints (and a small window keeps room for the
        # classes); strokes are undone with the page's Undo, in turn with the labels
        for widget in (
            self.tools.swatch,
            self.tools.class_label,
            self.tools.undo_button,
            self.tools.redo_button,
        ):
            widget.hide()
        self.editor.edited.connect(self._painted)
        self.labels: list[str] = []
        self.sample = None
        self._active = False

    # -- life on the page -------------------------------------------------------------------------

    def activate(self, labels: list[str]) -> None:
        self._active = True
        self.labels = list(labels)
        self.editor.activate()

    def deactivate(self) -> None:
        self._active = False
        self.editor.deactivate()
        self.editor.set_mask(None, 1)

    def load(self, ws, sample) -> None:
        """Worker thread: read where the defect is marked on the photo (None: nowhere)."""
        sample.defect = ws.defect_mask(sample.id)

    def show(self, sample, labels: list[str]) -> None:
        self.sample, self.labels = sample, list(labels)
        self.editor.set_mask(self._shown(sample), 1)

    def _shown(self, sample) -> np.ndarray | None:
        defect = getattr(sample, "defect", None)
        if defect is not None:
            return _editor_mask(defect)
        width, height = sample.width, sample.height
        if not (width and height):
            bounds = self.canvas.bounds
            width, height = int(bounds.width()), int(bounds.height())
        return np.full((height, width), UNLABELED, np.uint8) if width and height else None

    # -- values ---------------------------------------------------------------------------------------

    def value(self, sample):
        return (sample.labels[0] if sample.labels else None, getattr(sample, "defect", None))

    def names(self, value) -> list[str]:
        return [value[0]] if value and value[0] else []

    def set_local(self, sample, value) -> None:
        label, defect = value if value is not None else (None, None)
        sample.labels = [label] if label else []
        sample.defect = defect
        shown = self.editor.mask
        wanted = self._shown(sample)
        if shown is not None and wanted is not None and not np.array_equal(shown, wanted):
            self.editor.replace(wanted)  # undo or clear: the brush did not draw it

    def cleared(self):
        return (None, None)

    def choose(self, sample, label: str):
        return (label, None if is_good_label(label) else getattr(sample, "defect", None))

    def from_suggestion(self, label: str, proposal=None):
        return self.choose(self.sample, label) if self.sample is not None else (label, None)

    def _painted(self, mask: np.ndarray) -> None:
        """A finished stroke: write the marks, and make a good or unlabeled photo a defect photo."""
        sample = self.sample
        if not self._active or sample is None:
            return
        defect = mask != UNLABELED
        label = sample.labels[0] if sample.labels else None
        if defect.any() and (label is None or is_good_label(label)):
            label = self.defect_label()
        self.edited.emit((label, defect if defect.any() else None))

    def defect_label(self) -> str:
        """The label a photo gets when a defect is marked on it: the only named defect kind (``crack``
        beside the class every project starts with, ``defect``), else "defect"."""
        kinds = [name for name in self.labels if not is_good_label(name) and name != DEFECT_LABEL]
        return kinds[0] if len(kinds) == 1 else DEFECT_LABEL

    def describe(self, sample) -> str:
        words = ", ".join(sample.labels) if sample.labels else "not labeled yet"
        defect = getattr(sample, "defect", None)
        if defect is not None and defect.any():
            words += ", defect marked"  # short: a small window elides the line's middle
        return words
