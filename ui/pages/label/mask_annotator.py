"""The annotator for target ``mask`` (segmentation): a class for every pixel of a photo, painted
with the tools of :mod:`.mask_editor` on the labeling canvas.

A value is an ``H x W`` uint8 array at the photo's size: the index of the pixel's class in the
project's class list (sorted by name, as the Label page lists them), 255 where not labeled. It is
read with ``Workspace.sample_mask`` on the page's worker thread and written, after each finished
edit, through the page's usual write. Undo and redo are the editor's (per photo, changed
rectangles only), so large photos do not pile whole masks up in memory.
"""

from __future__ import annotations

import logging

import numpy as np
from PySide6.QtCore import QObject

from modeldesk.app.mask_views import class_slots_by_name, slot_color, suggested_mask

from ...job_watcher import TaskGroup
from ...page import LatestTask
from ...wording import plural
from .annotators import Annotator
from .mask_editor import MaskEditor
from .mask_ops import UNLABELED
from .mask_overlay import MaskOverlay, set_class_colors
from .mask_tools import MaskTools

log = logging.getLogger(__name__)


class MaskAnnotator(Annotator):
    """Paint classes on a photo: brush, eraser, polygon, fill and the assist; keys pick the class."""

    target = "mask"
    hint = "Press a class's key (or click it), then paint it on the photo with the tools above."
    keys = (
        "the key next to a class picks it · B, E, P, F, A pick a tool · [ ] brush size · "
        "wheel zooms, right-drag moves the photo · Ctrl+Shift+Z redo"
    )
    clear_text = "Clear mask"
    takes_suggestions = True  # a trained model's mask: Enter takes it
    noun = "photo"
    history = True

    def __init__(self, view, parent: QObject | None = None):
        super().__init__(view, parent)
        self.canvas = view.canvas  # masks need a view that draws them (images)
        self.editor = MaskEditor(self.canvas, self)
        self.tools = MaskTools(self.editor)
        self.editor.edited.connect(self._edited)
        self.proposal = MaskOverlay()
        self.proposal.setOpacity(0.3)
        self.canvas.scene().addItem(self.proposal)
        self._proposed: tuple[int, np.ndarray] | None = None  # (sample id, the model's mask)
        self._suggester = LatestTask(TaskGroup(self._no_suggestion, self), self)
        self.labels: list[str] = []
        self.slots: dict[str, int] = {}  # class name -> its colour slot, as the project keeps them
        self.current = ""
        self.sample = None
        self._active = False

    def _edited(self, mask: np.ndarray) -> None:
        if self._active:
            self.edited.emit(mask)

    def _show_legend(self) -> None:
        mask = self.editor.mask
        names = self.names(mask) if mask is not None else []
        self.tools.set_legend([(self.labels.index(name), name) for name in names])

    # -- life on the page -------------------------------------------------------------------------

    def activate(self, labels: list[str]) -> None:
        self._active = True
        self._set_labels(labels)
        self.editor.activate()

    def deactivate(self) -> None:
        self._active = False
        self.colors_changed.emit({})
        self.show_proposal(None)
        self.editor.deactivate()

    def load(self, ws, sample) -> None:
        """Worker thread: read the sample's saved mask (None when it has none yet)."""
        sample.mask = ws.sample_mask(sample.id)
        sample.class_slots = class_slots_by_name(ws, sample.project_id)

    def show(self, sample, labels: list[str]) -> None:
        self.sample = sample
        self.slots.update(getattr(sample, "class_slots", {}))
        self._set_labels(labels)
        self.editor.set_mask(self._mask(sample), len(self.labels))
        sample.labels = self.names(getattr(sample, "mask", None))
        self._show_legend()

    def _set_labels(self, labels: list[str]) -> None:
        labels = list(labels)
        if self.labels and labels != self.labels:  # a class added or gone: the same pixels, new numbers
            lut = np.full(256, UNLABELED, np.uint8)
            for index, name in enumerate(self.labels):
                lut[index] = labels.index(name) if name in labels else UNLABELED
            self.editor.remap(lut)
        self.labels = labels
        for name in labels:  # a class added here: the smallest free slot, as the project will store it
            if name not in self.slots:
                used = {self.slots[n] for n in labels if n in self.slots}
                self.slots[name] = next(k for k in range(len(used) + 1) if k not in used)
        colors = [slot_color(self.slots[name]) for name in labels]
        set_class_colors(colors)
        if self._active:
            self.colors_changed.emit(dict(zip(labels, colors)))
        if self.current not in self.labels:
            self.current = self.labels[0] if self.labels else ""
        index = self.labels.index(self.current) if self.current else 0
        self.editor.set_class(index, len(self.labels))
        self.tools.set_class_name(self.current)

    def _mask(self, sample) -> np.ndarray | None:
        mask = getattr(sample, "mask", None)
        if mask is not None:
            return mask
        width, height = sample.width, sample.height
        if not (width and height):
            bounds = self.canvas.bounds
            width, height = int(bounds.width()), int(bounds.height())
        return np.full((height, width), UNLABELED, np.uint8) if width and height else None

    def undo(self) -> bool:
        return self.editor.undo()

    def redo(self) -> bool:
        return self.editor.redo()

    # -- values ---------------------------------------------------------------------------------------

    def value(self, sample):
        return getattr(sample, "mask", None)

    def names(self, value) -> list[str]:
        if value is None:
            return []
        present = np.flatnonzero(np.bincount(value.ravel(), minlength=256)[: len(self.labels)])
        return [self.labels[index] for index in present]

    def set_local(self, sample, value) -> None:
        sample.mask = value
        sample.labels = self.names(value)
        shown = self.editor.mask
        if value is None:
            value = self._mask(sample)
        if shown is not None and value is not None and not np.array_equal(shown, value):
            self.editor.replace(value)  # Clear: the editor did not draw it
        self._show_legend()

    # -- the model's mask as a suggestion ----------------------------------------------------------------

    def suggestion_text(self, label: str, score: float, proposal=None) -> str:
        # no figure: a photo scored after training carries its largest class's share, not how sure
        return (
            "The model painted this photo (the faint colours). Press Enter to take its mask, then fix "
            "what is off with the tools."
        )

    def show_proposal(self, proposal) -> None:
        """Show the model's mask faintly while the page offers it (the page passes no ``proposal`` for
        masks: the mask is asked for here, one photo at a time, off the UI thread)."""
        sample, page = self.sample, self.parent()
        wanted = sample is not None and not sample.labels and sample.id in getattr(page, "suggestions", {})
        if not wanted or getattr(page, "model_id", None) is None:
            self._suggester.cancel()
            self._proposed = None
            self.proposal.set_mask(None, 0)
            return
        if self._proposed is not None and self._proposed[0] == sample.id:
            return
        ws, model_id, project, sample_id = page.ws, page.model_id, page.project, sample.id
        self._suggester.start(
            lambda _state: (sample_id, suggested_mask(ws, model_id, project, sample_id)), self._proposal_ready
        )

    def _proposal_ready(self, result) -> None:
        sample_id, mask = result
        if mask is None or self.sample is None or self.sample.id != sample_id or self.sample.labels:
            return
        self._proposed = (sample_id, mask)
        self.proposal.set_mask(mask, len(self.labels))

    def _no_suggestion(self, *reason) -> None:
        log.warning("the model's mask could not be shown: %s", reason)

    def from_suggestion(self, label: str, proposal=None):
        proposed = self._proposed
        if proposed is None or self.sample is None or proposed[0] != self.sample.id:
            return self.value(self.sample)  # not there yet: nothing changes
        return proposed[1].copy()

    def cleared(self):
        shown = self.editor.mask
        return None if shown is None else np.full_like(shown, UNLABELED)

    def choose(self, sample, label: str):
        self.current = label
        self._set_labels(self.labels)
        return None

    def advances(self) -> bool:
        return False

    def checked(self, sample) -> set[str]:
        return {self.current} if self.current else set()

    def describe(self, sample) -> str:
        mask = getattr(sample, "mask", None)
        if mask is None or not (mask != UNLABELED).any():
            return "nothing painted yet"
        share = float(np.mean(mask != UNLABELED))
        return f"{share:.0%} painted, {plural(len(self.names(mask)), 'class', 'classes')}"
