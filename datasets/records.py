"""Plain records the store hands out: projects, samples and boxes.

The data layer keeps no list of tasks. A project records what its task means for data: the kind of
sample it holds (``KINDS``) and what a sample's target is (``TARGETS``): one label, a set of tags,
or boxes. The trainers' task registry says which tasks exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .kinds import SAMPLE_KINDS

#: What a sample is (the registered sample kinds, ``datasets/kinds/``).
KINDS = tuple(SAMPLE_KINDS)
#: What a sample's annotation is: one class label, a set of tags, labeled boxes, or a class per pixel.
TARGETS = ("label", "tags", "boxes", "mask")

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Project:
    """A named collection of samples for one task."""

    id: int
    name: str
    task: str
    created: float
    kind: str = "image"
    """``"image"``, ``"audio"`` or ``"text"``: what this project's samples are."""
    target: str = "label"
    """``"label"``, ``"tags"`` or ``"boxes"``: what an annotation of a sample is."""


@dataclass(frozen=True)
class Box:
    """An axis-aligned box in pixels of the (EXIF-oriented) image: ``x0 < x1``, ``y0 < y1``."""

    label: str
    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def area(self) -> float:
        return max(0.0, self.x1 - self.x0) * max(0.0, self.y1 - self.y0)


@dataclass
class Sample:
    """One image, sound clip or text with its annotations.

    ``path`` is the content-addressed media file (None for text). ``width``/``height`` are the
    image size after EXIF orientation (None for text and audio); ``duration`` is in seconds for audio.
    ``labels`` is the sorted list of class tags; for detection it is the sorted set of box labels.
    """

    id: int
    project_id: int
    content_hash: str
    kind: str
    path: Path | None
    text: str | None
    source: str
    split: str | None
    width: int | None
    height: int | None
    labels: list[str] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)
    added: float = 0.0
    duration: float | None = None
