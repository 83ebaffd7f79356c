"""Create ML object detection JSON: ``[{"image": "a.jpg", "annotations": [{"label", "coordinates":
{"x", "y", "width", "height"}}]}]``, where x and y are the box's centre, in pixels."""

from __future__ import annotations

import json
from pathlib import Path

from .. import safejson
from .detect import iter_files, sniff_json
from .items import ImportReport, Item
from .limits import MAX_BOXES_PER_IMAGE, split_from_name
from .locate import ImageIndex
from .records import Box
from .safety import to_float


def _boxes(entry: dict, name: str) -> list[Box]:
    annotations = entry.get("annotations") or []
    if not isinstance(annotations, list):
        raise ValueError(f'"annotations" is not a list in {name}')  # noqa: TRY004 - a file's content: the importers catch ValueError
    if len(annotations) > MAX_BOXES_PER_IMAGE:
        raise ValueError(f"more than {MAX_BOXES_PER_IMAGE:,} boxes in {name}")
    boxes = []
    for ann in annotations:
        try:
            c = ann["coordinates"]
            x, y, w, h = (to_float(c[k]) for k in ("x", "y", "width", "height"))
            boxes.append(Box(str(ann["label"]), x - w / 2, y - h / 2, x + w / 2, y + h / 2))
        except (KeyError, TypeError) as exc:
            raise ValueError(
                f"{name}: an annotation is not Create ML's {{label, coordinates}} ({exc})"
            ) from None
    return boxes


def read_createml(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every photo listed in the Create ML JSON file(s) under ``root``."""
    base = root.parent if root.is_file() else root
    files = [root] if root.is_file() else [p for p in iter_files(root) if sniff_json(p) == "createml"]
    index = ImageIndex(base)
    items: list[Item] = []
    for json_path in files:
        name = json_path.relative_to(base).as_posix()
        try:
            data = safejson.load_file(json_path)
            if not isinstance(data, list):
                raise ValueError("it is not a list of {image, annotations}")  # noqa: TRY004 - a file's content: the importers catch ValueError
        except (ValueError, OSError) as exc:
            items.append(Item(source=name, error=f"cannot read Create ML file {name}: {exc}"))
            continue
        split = split_from_name(json_path.parent.name)
        for entry in data:
            reference = str(entry.get("image") or "") if isinstance(entry, dict) else ""
            try:
                if not reference:
                    raise ValueError(f'an entry of {name} has no "image"')
                boxes = _boxes(entry, name)
            except ValueError as exc:
                items.append(Item(source=reference or name, error=str(exc)))
                continue
            path = index.find(reference, near=json_path.parent)
            if path is None:
                items.append(Item(source=reference, error=f"image listed in {name} was not found"))
                continue
            items.append(Item(source=index.source(path), path=path, boxes=boxes, split=split))
    return len(items), items


def createml_document(entries) -> str:
    """A Create ML annotations file; ``entries`` are (image name, boxes in pixels)."""
    return json.dumps(
        [
            {
                "image": name,
                "annotations": [
                    {
                        "label": b.label,
                        "coordinates": {
                            "x": (b.x0 + b.x1) / 2,
                            "y": (b.y0 + b.y1) / 2,
                            "width": b.x1 - b.x0,
                            "height": b.y1 - b.y0,
                        },
                    }
                    for b in boxes
                ],
            }
            for name, boxes in entries
        ],
        ensure_ascii=False,
        indent=1,
    )
