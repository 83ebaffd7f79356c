"""The importers of other labeling tools' formats, one module each, behind one entry point that fits
what they read to the project: boxes for a project that finds objects, tags or a class otherwise."""

from __future__ import annotations

from pathlib import Path

from . import createml, cvat, labelme, labelstudio, multiclass
from .items import ImportReport, Item

READERS = {
    "cvat": cvat.read_cvat,
    "labelme": labelme.read_labelme,
    "labelstudio": labelstudio.read_labelstudio,
    "createml": createml.read_createml,
    "multiclass": multiclass.read_multiclass,
}
NAMES = {
    "cvat": "CVAT for images",
    "labelme": "LabelMe",
    "labelstudio": "Label Studio",
    "createml": "Create ML",
    "multiclass": "Roboflow multiclass CSV",
}
BOXES_ONLY = {"createml"}
TAGS_ONLY = {"multiclass"}


def check_target(fmt: str, target: str, path: Path, project_name: str) -> None:
    """ValueError when ``fmt`` cannot hold what a project of ``target`` learns."""
    if target == "mask" and fmt in READERS and fmt != "labelme":
        raise ValueError(
            f"{path} holds {NAMES[fmt]} annotations, which draw no masks; project {project_name!r} learns "
            "a class per pixel: import photos with masks (mask folders, Pascal VOC, COCO or LabelMe)"
        )
    if fmt in TAGS_ONLY and target == "boxes":
        raise ValueError(
            f"{path} holds {NAMES[fmt]} tags, which have no boxes; project {project_name!r} finds objects "
            "with boxes: import it into a project that tags or classifies photos"
        )


def read(fmt: str, path: Path, report: ImportReport, target: str) -> tuple[int, list[Item]]:
    """(count, items) of ``path`` read as ``fmt``, fitted to a project of ``target``."""
    total, items = READERS[fmt](path, report)
    if target == "mask":  # LabelMe's outlines become masks, not the boxes around them
        report.warnings[:] = [w for w in report.warnings if "became the boxes around them" not in w]
    dropped = {"tags": 0, "boxes": 0}
    fitted = [_fit(item, target, dropped) for item in items]
    if dropped["tags"]:
        report.warn(f"{dropped['tags']} photo(s) had tags, which a project that finds objects does not use")
    if dropped["boxes"]:
        report.warn(f"{dropped['boxes']} photo(s) had boxes, which a project without boxes does not use")
    return total, fitted


def _fit(item: Item, target: str, dropped: dict) -> Item:
    if item.error or item.path is None:
        return item
    if target == "boxes":
        dropped["tags"] += bool(item.labels)
        item.labels = []
        return item
    if target == "mask":  # the outlines become masks after the photos are stored (``seg_outlines``)
        item.boxes, item.labels, item.normalised = [], [], False
        return item
    dropped["boxes"] += bool(item.boxes)
    item.boxes, item.normalised = [], False
    if target == "label" and len(item.labels) > 1:
        item.error = (
            f"it has {len(item.labels)} labels ({', '.join(item.labels[:4])}) and the project takes one "
            "per photo: import it into a project that tags photos"
        )
    return item
