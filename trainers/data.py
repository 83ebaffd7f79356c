"""The trainers' neutral input type, filled by the app from the dataset store."""

from __future__ import annotations

from dataclasses import dataclass

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class LabeledImage:
    """One image sample.

    Parameters
    ----------
    key : the media content hash (the feature cache key).
    path : where the image file is.
    label : class name, or None when not labeled yet (ignored for training).
    split : ``"train"``, ``"val"`` or ``"test"``.
    """

    key: str
    path: str
    label: str | None
    split: str = "train"

    def __post_init__(self):
        if self.split not in SPLITS:
            raise ValueError(f"{self.path}: split must be one of {', '.join(SPLITS)}, not {self.split!r}")
