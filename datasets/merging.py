"""Two sets of boxes for the same photo: merged, never one dropped without a word.

The same bytes can come twice in one import (a photo under two names, each with its annotations), or
again in a later import (a corrected annotation file). A photo already imported without boxes gets the
file's boxes (``updated``: the file was broken or empty the first time). Otherwise the boxes are
merged (``merged``): a box is dropped only when one of the same label already overlaps it almost
exactly (IoU above :data:`SAME_BOX_IOU`). Boxes already there are never replaced: they may be
corrections made in the app since the first import.
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


def merge_duplicate(store, sample_id: int, boxes: list[Box], earlier: bool, report: ImportReport) -> None:
    """Fold the boxes a duplicate item brought into the sample already stored.

    ``earlier`` is True when the sample was stored by an earlier import (not this one).
    """
    sample = store.get_sample(sample_id)
    if earlier and not sample.boxes:
        store.set_boxes(sample_id, boxes)
        report.updated += 1
    else:
        boxes = new_boxes(sample.boxes, boxes)
        if not boxes:
            return
        store.set_boxes(sample_id, list(sample.boxes) + boxes)
        report.merged += 1
    report.boxes += len(boxes)
    report.count_labels(b.label for b in boxes)


def summary(report: ImportReport) -> None:
    """One line each for merged and updated annotations and for the splits the source gave (or a
    numeric target's value ranges chose)."""
    if report.splits_kept and report.splits_by_value:
        report.warn(
            f"{report.splits_kept} rows were split into train/val/test by ranges of their "
            f"{report.splits_by_value!r} values, so each part spans the whole range of targets "
            "(the Data page's split filter shows them)"
        )
    elif report.splits_kept:
        others = "; the others are split 70/15/15" if report.splits_kept < report.added else ""
        report.warn(
            f"{report.splits_kept} item(s) kept the train/val/test split their source gives "
            f"(the Data page's split filter shows them){others}"
        )
    if report.merged:
        report.warn(
            f"{report.merged} photo(s) already imported (under this or another name) came with other "
            "boxes or tags: the new ones were added beside the old ones, leaving out tags already there "
            f"and boxes that repeat one (IoU > {SAME_BOX_IOU}); check them on the Label page"
        )
    if report.updated:
        report.warn(f"{report.updated} photo(s) imported earlier without boxes got the boxes of their file")
