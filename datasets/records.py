"""Plain records the store hands out: projects, samples, boxes, and the list of tasks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

TASKS = (
    "image-classification",
    "image-multilabel",
    "object-detection",
    "text-classification",
    "sound-classification",
)

#: The kind of sample each task holds.
TASK_KIND = {
    "image-classification": "image",
    "image-multilabel": "image",
    "object-detection": "image",
    "text-classification": "text",
    "sound-classification": "audio",
}

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Project:
    """A named collection of samples for one task."""

    id: int
    name: str
    task: str
    created: float

    @property
    def kind(self) -> str:
        """``"image"``, ``"audio"`` or ``"text"``: what this project's samples are."""
        return TASK_KIND[self.task]


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
