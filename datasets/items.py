"""What readers hand to the import loop (:class:`Item`) and what an import returns (:class:`ImportReport`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from .records import Box

log = logging.getLogger(__name__)

MAX_WARNINGS = 50  # further warnings are counted, not listed


@dataclass
class Item:
    """One thing to import: a media file (``path``) or a text, with its annotations.

    ``boxes`` is None when the source says nothing about boxes; ``error`` marks an item the reader
    already knows is broken (it is reported as failed with that reason).
    """

    source: str
    path: Path | None = None
    text: str | None = None
    labels: list[str] = field(default_factory=list)
    boxes: list[Box] | None = None
    normalised: bool = False  # boxes are fractions of the image size (YOLO), not pixels
    error: str | None = None
    split: str | None = None  # "train", "val" or "test" when the source says which


@dataclass
class ImportReport:
    """What one import did. ``failed`` holds ``{"file", "reason"}`` dicts; ``labels`` counts added samples
    (for detection: added boxes) per label."""

    format: str = ""
    added: int = 0
    duplicates: int = 0
    failed: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    boxes: int = 0
    boxes_clipped: int = 0
    boxes_dropped: int = 0
    merged: int = 0  # duplicates whose annotations were merged into the copy already there
    updated: int = 0  # samples already in the project whose annotations a re-import corrected
    splits_kept: int = 0  # added samples that kept the train/val/test split their source gives
    labels: dict[str, int] = field(default_factory=dict)
    stopped: bool = False
    _extra_warnings: int = 0

    def fail(self, file: str, reason: str) -> None:
        """Record a file that was not imported."""
        log.warning("not imported: %s: %s", file, reason)
        self.failed.append({"file": str(file), "reason": str(reason)})

    def warn(self, message: str) -> None:
        """Record a warning (only the first :data:`MAX_WARNINGS` are kept verbatim)."""
        log.warning("%s", message)
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(message)
        else:
            self._extra_warnings += 1

    def count_labels(self, names) -> None:
        for name in names:
            self.labels[name] = self.labels.get(name, 0) + 1

    def to_dict(self) -> dict:
        """A JSON-ready dict (the CLI's ``import`` object)."""
        warnings = list(self.warnings)
        if self._extra_warnings:
            warnings.append(f"... and {self._extra_warnings} more warnings")
        return {
            "format": self.format,
            "added": self.added,
            "duplicates": self.duplicates,
            "failed": list(self.failed),
            "warnings": warnings,
            "boxes": self.boxes,
            "boxes_clipped": self.boxes_clipped,
            "boxes_dropped": self.boxes_dropped,
            "merged": self.merged,
            "updated": self.updated,
            "splits_kept": self.splits_kept,
            "labels": dict(sorted(self.labels.items())),
            "stopped": self.stopped,
        }
