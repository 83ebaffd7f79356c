"""LabelMe JSON: one file per photo, ``{"shapes": [{"label", "points", "shape_type"}], "imagePath",
"imageWidth", "imageHeight", "flags"}``.

Rectangles are boxes; polygons (and circles) become the boxes around them until segmentation lands,
said once per import; lines and points mark no object and are left out, said too. ``flags`` that are
true are the photo's tags.
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import safejson
from .detect import iter_files, looks_like_labelme
from .items import ImportReport, Item
from .limits import MAX_BOXES_PER_IMAGE, split_from_name
from .locate import ImageIndex
from .records import Box
from .safety import to_float

MAX_FILE_BYTES = 64 << 20  # a LabelMe file may embed its photo as base64 (imageData)


def _shape_box(shape: dict) -> tuple[Box | None, str]:
    """(the box of one shape or None, its kind: "box", "outline" or "skipped")."""
    kind = shape.get("shape_type") or "polygon"
    points = [(to_float(x), to_float(y)) for x, y in shape["points"]]
    label = str(shape["label"]).strip()
    if not label or not points:
        raise ValueError("a shape without a label or points")
    if kind == "circle":
        (cx, cy), (px, py) = points[:2]
        r = ((px - cx) ** 2 + (py - cy) ** 2) ** 0.5
        return Box(label, cx - r, cy - r, cx + r, cy + r), "outline"
    if kind in ("line", "linestrip", "point", "points"):
        return None, "skipped"
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    box = Box(label, min(xs), min(ys), max(xs), max(ys))
    return box, "box" if kind == "rectangle" else "outline"


def parse_labelme(data, name: str) -> tuple[str, list[Box], list[str], int, int]:
    """(imagePath, boxes, tags, outlines, skipped shapes) of one LabelMe document."""
    if not isinstance(data, dict) or not isinstance(data.get("shapes"), list):
        raise ValueError(f'{name} is not a LabelMe file: it has no "shapes" list')  # noqa: TRY004 - a file's content: the importers catch ValueError
    if len(data["shapes"]) > MAX_BOXES_PER_IMAGE:
        raise ValueError(f"{name} holds more than {MAX_BOXES_PER_IMAGE:,} shapes")
    boxes, outlines, skipped = [], 0, 0
    for shape in data["shapes"]:
        try:
            box, kind = _shape_box(shape)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"{name}: a shape is not LabelMe's {{label, points, shape_type}} ({exc})"
            ) from None
        outlines += kind == "outline"
        skipped += kind == "skipped"
        if box is not None:
            boxes.append(box)
    flags = data.get("flags") or {}
    tags = [str(k) for k, v in flags.items() if v is True] if isinstance(flags, dict) else []
    return str(data.get("imagePath") or ""), boxes, tags, outlines, skipped


def read_labelme(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every LabelMe JSON under ``root``; photos without one come unlabeled."""
    base = root.parent if root.is_file() else root
    files = [root] if root.is_file() else [p for p in iter_files(root) if p.suffix.lower() == ".json"]
    index = ImageIndex(base)
    items, used = [], set()
    outlines = skipped = 0
    for json_path in files:
        name = json_path.relative_to(base).as_posix()
        if root.is_dir() and not looks_like_labelme(json_path):
            continue
        try:
            image_ref, boxes, tags, out, skip = parse_labelme(
                safejson.load_file(json_path, max_bytes=MAX_FILE_BYTES), name
            )
        except (ValueError, OSError) as exc:
            items.append(Item(source=name, error=str(exc) if name in str(exc) else f"{name}: {exc}"))
            continue
        outlines, skipped = outlines + out, skipped + skip
        path = index.find(image_ref, near=json_path.parent) if image_ref else None
        if path is None:  # the photo beside its JSON, whatever imagePath says
            path = next((p for p in index.by_name.get(json_path.stem.lower() + ".jpg", [])), None)
            path = path or next((p for p in index.by_name.get(json_path.stem.lower() + ".png", [])), None)
        if path is None:
            items.append(
                Item(source=name, error=f"image {image_ref or json_path.stem} named in {name} was not found")
            )
            continue
        used.add(path)
        split = split_from_name(json_path.parent.name)  # LabelMe has no splits; the folder may say
        items.append(Item(source=index.source(path), path=path, boxes=boxes, labels=tags, split=split))
    for paths in index.by_name.values():
        for p in paths:
            if p not in used:
                items.append(
                    Item(source=index.source(p), path=p, boxes=[], split=split_from_name(p.parent.name))
                )
    if outlines:
        report.warn(
            f"{outlines} polygon(s) or circle(s) became the boxes around them (ModelDesk finds objects "
            "with boxes; outlines are kept once segmentation lands)"
        )
    if skipped:
        report.warn(f"{skipped} line(s) or point(s) mark no object and were left out")
    return len(items), items


def labelme_document(image_name: str, width: int, height: int, boxes, tags, outlines=()) -> str:
    """One LabelMe file: rectangles for the boxes, polygons for the ``outlines`` (``(label, [x1, y1, ...])``),
    true flags for the tags."""
    polygons = [
        {
            "label": label,
            "points": [[points[k], points[k + 1]] for k in range(0, len(points), 2)],
            "group_id": None,
            "description": "",
            "shape_type": "polygon",
            "flags": {},
        }
        for label, points in outlines
    ]
    shapes = [
        {
            "label": b.label,
            "points": [[b.x0, b.y0], [b.x1, b.y1]],
            "group_id": None,
            "description": "",
            "shape_type": "rectangle",
            "flags": {},
        }
        for b in boxes
    ] + polygons
    return json.dumps(
        {
            "version": "5.4.1",
            "flags": {t: True for t in tags},
            "shapes": shapes,
            "imagePath": image_name,
            "imageData": None,
            "imageHeight": height,
            "imageWidth": width,
        },
        ensure_ascii=False,
        indent=1,
    )
