"""How a sample's target is edited on the Label page: one annotator per target type.

The page picks the annotator from :data:`ANNOTATORS` by the project's target ("label", "tags",
"boxes"), the way napari's ``layer_to_controls`` picks a layer's controls; pages never test a task
name. An annotator says what a class key does, what is written, how an annotation reads in words,
and (for boxes) drives the view. A new target adds a subclass and one :func:`register_annotator` call.

Values are what ``Workspace.annotate(sample_id, target, value)`` takes: a class name or None
(``label``), a sorted list of names (``tags``), a list of boxes (``boxes``), an index mask (``mask``,
see :mod:`.mask_annotator`).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from ...canvas import Box
from ...wording import plural
from .proposals import ProposalLayer


class Annotator(QObject):
    """Edits one kind of target. The base class is the single-label behaviour's skeleton.

    Signals
    -------
    edited(object)
        The user changed the current sample's annotation on the view itself (boxes drawn or moved);
        carries the new value. Class keys and buttons go through :meth:`choose` instead.
    colors_changed(object)
        The colours the classes are drawn in changed: ``{class name: "#rrggbb"}`` (empty: none), for
        the class buttons' swatches.
    """

    edited = Signal(object)
    colors_changed = Signal(object)

    target = "label"
    #: Under the classes title.
    hint = ""
    #: The keys line, without the navigation keys every annotator shares.
    keys = ""
    clear_text = "Clear label"
    #: Whether the model's suggestion can be accepted with Enter.
    takes_suggestions = True
    #: Whether labels are counted per sample (False: per box).
    noun = "example"
    #: Whether the annotator keeps its own undo history (:meth:`undo`, :meth:`redo`) instead of the page's.
    history = False
    #: Its own tools for the side panel (a widget), if it has any.
    tools = None

    def __init__(self, view, parent: QObject | None = None):
        super().__init__(parent)
        self.view = view

    # -- life on the page -------------------------------------------------------------------------

    def activate(self, labels: list[str]) -> None:
        """The page switched to this annotator (a project with this target opened)."""

    def deactivate(self) -> None:
        """The page switched to another annotator."""

    def load(self, ws, sample) -> None:
        """Worker thread: read what the annotation needs beyond ``ws.sample`` (e.g. a mask) onto ``sample``."""

    def show(self, sample, labels: list[str]) -> None:
        """The view shows ``sample``; draw the annotation on the view if it lives there."""

    def undo(self) -> bool:
        """Undo the annotator's own last edit (with :attr:`history`); False when it has none."""
        return False

    def redo(self) -> bool:
        """Redo what :meth:`undo` took back; False when there is nothing to redo."""
        return False

    # -- values ---------------------------------------------------------------------------------------

    def value(self, sample):
        """The sample's annotation as ``Workspace.annotate`` takes it."""
        return sample.labels[0] if sample.labels else None

    def names(self, value) -> list[str]:
        """The class names a value counts for (one per sample, or one per box)."""
        return [value] if value else []

    def set_local(self, sample, value) -> None:
        """Put ``value`` on the in-memory sample (the write to the workspace follows)."""
        sample.labels = [value] if value else []

    def cleared(self):
        """The value of "no annotation"."""
        return None

    def choose(self, sample, label: str):
        """A class key or button was pressed: the new value, or None to write nothing."""
        return label

    def advances(self) -> bool:
        """Whether choosing a class goes on to the next sample."""
        return True

    def from_suggestion(self, label: str, proposal=None):
        """The value for accepting the model's suggestion ``label`` (``proposal``: a detector's boxes)."""
        return label

    def suggestion_text(self, label: str, score: float, proposal=None) -> str:
        """The banner's sentence about the model's suggestion for the current sample."""
        return f"The model thinks this is <b>{label}</b> ({score:.0%} sure)."

    def show_proposal(self, proposal) -> None:
        """Show (or with None, hide) a suggestion that lives on the view, e.g. proposed boxes."""

    def checked(self, sample) -> set[str]:
        """The classes to show as chosen for ``sample``."""
        return set(sample.labels) if sample is not None else set()

    def describe(self, sample) -> str:
        """The annotation in a few words for the position line."""
        return ", ".join(sample.labels) if sample.labels else "not labeled yet"


class LabelAnnotator(Annotator):
    """One class per sample: a key or a click labels it and goes on to the next sample."""

    target = "label"
    hint = "Click the class of this sample or press its key; the next one follows."
    keys = "the key next to a class chooses it"


class TagsAnnotator(Annotator):
    """Several tags per sample: keys and clicks switch tags on and off; the sample stays."""

    target = "tags"
    hint = "Click or press a tag's key to switch it on or off for this sample."
    keys = "the key next to a tag switches it"
    clear_text = "Clear tags"

    def value(self, sample):
        return list(sample.labels)

    def names(self, value) -> list[str]:
        return list(value or [])

    def set_local(self, sample, value) -> None:
        sample.labels = sorted(value or [])

    def cleared(self):
        return []

    def choose(self, sample, label: str):
        return sorted(set(sample.labels) ^ {label})

    def advances(self) -> bool:
        return False

    def from_suggestion(self, label: str, proposal=None):
        return [label]


class BoxesAnnotator(Annotator):
    """Boxes on an image: keys pick the class of new (and selected) boxes; boxes are drawn on the
    view's canvas and written as they change."""

    target = "boxes"
    hint = (
        "Pick a class, then drag on the image to draw a box around each object. Drag a box to "
        "move it, its corners to resize it."
    )
    keys = "the key next to a class picks it · Delete removes the selected box"
    clear_text = "Delete all boxes"
    takes_suggestions = True  # a detector's proposed boxes: Enter accepts them all
    noun = "box"

    def __init__(self, view, parent: QObject | None = None):
        super().__init__(view, parent)
        self.canvas = view.canvas  # boxes need a view that draws them (images)
        self.proposals = ProposalLayer(self.canvas)
        self.canvas.boxes_edited.connect(self._edited)
        self._active = False

    def _edited(self, boxes: list) -> None:
        if self._active:
            self.edited.emit(list(boxes))

    def activate(self, labels: list[str]) -> None:
        self._active = True
        self.canvas.drawing = True
        if not self.canvas.current_label and labels:
            self.canvas.current_label = labels[0]

    def deactivate(self) -> None:
        self.proposals.clear()
        self._active = False
        self.canvas.drawing = False
        self.canvas.current_label = ""

    def show(self, sample, labels: list[str]) -> None:
        self.canvas.set_boxes(sample.boxes)
        if not self.canvas.current_label and labels:
            self.canvas.current_label = labels[0]

    def value(self, sample):
        return list(sample.boxes)

    def names(self, value) -> list[str]:
        return [box.label for box in value or []]

    def set_local(self, sample, value) -> None:
        sample.boxes = list(value or [])
        sample.labels = sorted({box.label for box in sample.boxes})
        if [_corners(b) for b in self.canvas.boxes()] != [_corners(b) for b in sample.boxes]:
            self.canvas.set_boxes(sample.boxes)  # undo or clear: the canvas did not draw it

    def cleared(self):
        return []

    def from_suggestion(self, label: str, proposal=None):
        self.proposals.clear()
        return [Box(p["label"], *map(float, p["box"])) for p in proposal or []]

    def suggestion_text(self, label: str, score: float, proposal=None) -> str:
        count = len(proposal or [])
        if not count:
            return "The model found nothing here. Draw any boxes it missed."
        return (
            f"The model proposes {plural(count, 'box', 'boxes')} (dashed). Press Enter to accept "
            "them, then move, resize or delete any that are off."
        )

    def show_proposal(self, proposal) -> None:
        self.proposals.show(proposal) if proposal else self.proposals.clear()

    def choose(self, sample, label: str):
        self.canvas.current_label = label
        self.canvas.relabel_selected(label)  # a change is written through ``edited``
        return None

    def advances(self) -> bool:
        return False

    def checked(self, sample) -> set[str]:
        return {self.canvas.current_label} if self.canvas.current_label else set()

    def describe(self, sample) -> str:
        return plural(len(sample.boxes), "box", "boxes") if sample.boxes else "no boxes yet"


def _corners(box) -> tuple:
    return (box.label, box.x0, box.y0, box.x1, box.y1)


#: target -> annotator class.
ANNOTATORS: dict[str, type[Annotator]] = {
    "label": LabelAnnotator,
    "tags": TagsAnnotator,
    "boxes": BoxesAnnotator,
}


def register_annotator(target: str, annotator: type[Annotator]) -> None:
    """Edit targets of type ``target`` with ``annotator`` on the Label page."""
    ANNOTATORS[target] = annotator
