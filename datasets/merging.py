"""Two sets of boxes for the same photo: merged, never one dropped without a word.

The same bytes can come twice in one import (a photo under two names, each with its annotations), or
again in a later import (a corrected annotation file). Within one import, or from a file of another
name, the boxes are merged: a box is dropped only when one of the same label already overlaps it
almost exactly (IoU above :data:`SAME_BOX_IOU`). From the same file name in a later import, the file's
boxes replace the old ones: that is a correction.
"""

from __future__ import annotations

from collections.abc import Iterable

from .items import ImportReport
from .records import Box

SAME_BOX_IOU = 0.95


def iou(a: Box, b: Box) -> float:
    """Intersection over union of two boxes (0 when either has no area)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a.x1 - a.x0) * (a.y1 - a.y0) + (b.x1 - b.x0) * (b.y1 - b.y0) - inter
    return inter / union if union > 0 else 0.0


def new_boxes(existing: Iterable[Box], incoming: Iterable[Box]) -> list[Box]:
    """The boxes of ``incoming`` that no box of the same label in ``existing`` already covers."""
    kept = list(existing)
    added = []
    for box in incoming:
        if not any(old.label == box.label and iou(old, box) > SAME_BOX_IOU for old in kept):
            kept.append(box)
            added.append(box)
    return added


def _same(a: list[Box], b: list[Box]) -> bool:
    key = lambda box: (box.label, round(box.x0, 3), round(box.y0, 3), round(box.x1, 3), round(box.y1, 3))
    return sorted(map(key, a)) == sorted(map(key, b))


def merge_duplicate(
    store, sample_id: int, source: str, boxes: list[Box], earlier: bool, report: ImportReport
) -> None:
    """Fold the boxes a duplicate item brought into the sample already stored.

    ``earlier`` is True when the sample was stored by an earlier import (not this one).
    """
    sample = store.get_sample(sample_id)
    if earlier and sample.source == source:
        if not _same(sample.boxes, boxes):
            store.set_boxes(sample_id, boxes)
            report.updated += 1
        return
    added = new_boxes(sample.boxes, boxes)
    if added:
        store.set_boxes(sample_id, list(sample.boxes) + added)
        report.merged += 1
        report.boxes += len(added)
        report.count_labels(b.label for b in added)


def summary(report: ImportReport) -> None:
    """One line each for merged and updated annotations and for the splits the source gave."""
    if report.splits_kept:
        others = "; the others are split 70/15/15" if report.splits_kept < report.added else ""
        report.warn(
            f"{report.splits_kept} item(s) kept the train/val/test split their source gives "
            f"(the Data page's split filter shows them){others}"
        )
    if report.merged:
        report.warn(
            f"{report.merged} photo(s) came twice with different boxes (same picture, another name): "
            f"their boxes were merged, leaving out boxes that repeat one already there (IoU > {SAME_BOX_IOU})"
        )
    if report.updated:
        report.warn(f"{report.updated} photo(s) already in the project got the corrected boxes of their file")
