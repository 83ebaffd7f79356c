"""What readers hand to the import loop (:class:`Item`) and what an import returns (:class:`ImportReport`)."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .records import Box

log = logging.getLogger(__name__)

MAX_WARNINGS = 50  # further warnings are counted, not listed
MAX_FAILED_LISTED = 50  # further failures are counted by reason, not listed one by one
MAX_REASONS = 20  # distinct reasons counted for the unlisted failures; the rest are "other reasons"
OTHER_REASONS = "other reasons"


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
    # hashed with ``text`` into the sample's identity, for texts that alone do not tell two samples
    # apart (a table row: its target and which copy of an identical row it is)
    identity: str = ""


@dataclass
class ImportReport:
    """What one import did. ``labels`` counts added samples (for detection: added boxes) per label.

    ``failed`` holds ``{"file", "reason"}`` dicts for the first :data:`MAX_FAILED_LISTED` files that were
    not imported; ``failed_total`` counts them all, and the ones beyond the list are counted by reason
    (a zip of 100,000 empty files gives one line, not 100,000).
    """

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
    splits_by_value: str | None = None  # the numeric target column whose value ranges chose the splits
    labels: dict[str, int] = field(default_factory=dict)
    stopped: bool = False
    failed_total: int = 0
    _extra_warnings: int = 0
    _unlisted: Counter = field(default_factory=Counter)

    def fail(self, file: str, reason: str) -> None:
        """Record a file that was not imported."""
        if len(self.failed) < MAX_FAILED_LISTED:
            log.warning("not imported: %s: %s", file, reason)
        else:
            log.debug("not imported: %s: %s", file, reason)
        self._record({"file": str(file), "reason": str(reason)})

    def _record(self, entry: dict) -> None:
        self.failed_total += 1
        if len(self.failed) < MAX_FAILED_LISTED:
            self.failed.append(entry)
            return
        reason = entry["reason"]
        if reason not in self._unlisted and len(self._unlisted) >= MAX_REASONS:
            reason = OTHER_REASONS
        self._unlisted[reason] += 1

    def name_failures(self, prefix: str) -> None:
        """Put ``prefix`` before the file name of every listed failure (``archive.zip/``)."""
        for entry in self.failed:
            entry["file"] = f"{prefix}{entry['file']}"

    def fail_first(self, entries: list[dict]) -> None:
        """Record ``{"file", "reason"}`` failures found before the rest (members an archive refused)."""
        listed, unlisted, total = self.failed, self._unlisted, self.failed_total
        self.failed, self._unlisted, self.failed_total = [], Counter(), 0
        for entry in entries:
            self.fail(entry["file"], entry["reason"])
        for entry in listed:
            self._record(entry)
        self.failed_total += total - len(listed)
        self._unlisted.update(unlisted)

    def failed_summary(self) -> list[dict]:
        """``{"reason", "count"}`` for the failures not listed in ``failed``, most common first."""
        common = [(r, n) for r, n in self._unlisted.most_common() if r != OTHER_REASONS]
        if self._unlisted.get(OTHER_REASONS):
            common.append((OTHER_REASONS, self._unlisted[OTHER_REASONS]))
        return [{"reason": reason, "count": count} for reason, count in common]

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
            "failed_total": self.failed_total,
            "failed_summary": self.failed_summary(),
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
