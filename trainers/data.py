"""The trainers' neutral input type, filled by the app from the dataset store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from modeldesk.datasets.masks import MaskRef
from modeldesk.datasets.records import Box

SPLITS = ("train", "val", "test")

#: A label (``str``), a set of tags (``tuple[str, ...]``), boxes (``tuple[Box, ...]``) or a stored mask
#: (``datasets.masks.MaskRef``); None: unlabeled.
Target = Union[str, "tuple[str, ...]", "tuple[Box, ...]", MaskRef, None]


@dataclass(frozen=True)
class LabeledSample:
    """One sample for any task.

    Parameters
    ----------
    key : the content hash (the feature cache key).
    source : the media file's path for images and sounds, the text itself for texts.
    target : what the task predicts: a class label, a tuple of tags or a tuple of ``Box``;
        None when the sample is not labeled yet (ignored for training).
    split : ``"train"``, ``"val"`` or ``"test"``.
    name : the file's name where it came from (``source`` is the stored copy's path); frames of a
        video keep their order in it.
    """

    key: str
    source: str
    target: Target
    split: str = "train"
    name: str = ""

    def __post_init__(self):
        if self.split not in SPLITS:
            raise ValueError(f"{self.source}: split must be one of {', '.join(SPLITS)}, not {self.split!r}")

    @property
    def path(self) -> str:
        """The media file (image and sound samples): the same as ``source``."""
        return self.source

    @property
    def label(self) -> str | None:
        """The class label of a single-label sample (None for tags and boxes)."""
        return self.target if isinstance(self.target, str) or self.target is None else None

    def with_split(self, split: str) -> LabeledSample:
        return LabeledSample(self.key, self.source, self.target, split, self.name)
