"""LabelMe and YOLO-seg outlines as a segmentation project's masks: each photo's polygons (LabelMe's
rectangles and circles too; a YOLO line of 4 numbers is a box) painted in their file's order (a later shape covers an earlier one), a pixel taken when its centre is
inside the shape (``seg_coco.polygon_mask``). Pixels no shape covers are ``_background_`` in LabelMe's
own convention (``labelme2voc``); here they are the class ``background``. Lines and points outline
nothing and are left out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import safejson
from .detect import iter_files, looks_like_labelme
from .items import ImportReport
from .labelme import MAX_FILE_BYTES
from .locate import ImageIndex
from .masks import MaskError, write_mask
from .safety import to_float
from .seg_coco import BACKGROUND, polygon_mask

_BACKGROUND_NAMES = {"_background_", "background", "__background__"}


def shape_mask(shape: dict, height: int, width: int) -> np.ndarray | None:
    """One LabelMe shape as an (h, w) bool mask (None for a line or a point)."""
    kind = shape.get("shape_type") or "polygon"
    points = [(to_float(x), to_float(y)) for x, y in shape["points"]]
    if kind in ("line", "linestrip", "point", "points") or not points:
        return None
    if kind == "rectangle":
        (x0, y0), (x1, y1) = points[:2]
        points = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    elif kind == "circle":
        (cx, cy), (px, py) = points[:2]
        r = ((px - cx) ** 2 + (py - cy) ** 2) ** 0.5
        yy, xx = np.mgrid[:height, :width]
        return np.hypot(xx + 0.5 - cx, yy + 0.5 - cy) <= r
    return polygon_mask([[v for point in points for v in point]], height, width)


def attach_labelme_masks(store, project, root: Path, report: ImportReport) -> int:
    """Store the masks the LabelMe files under ``root`` outline for the samples imported with them."""
    base = root.parent if root.is_file() else root
    files = [root] if root.is_file() else [p for p in iter_files(root) if p.suffix.lower() == ".json"]
    index = ImageIndex(base)
    by_source = {s.source: s for s in store.samples(project)}
    store.add_label(project, BACKGROUND)
    done = 0
    for json_path in files:
        if root.is_dir() and not looks_like_labelme(json_path):
            continue
        name = json_path.relative_to(base).as_posix()
        try:
            data = safejson.load_file(json_path, max_bytes=MAX_FILE_BYTES)
            image_ref = str(data.get("imagePath") or "")
            path = index.find(image_ref, near=json_path.parent) if image_ref else None
            if path is None:
                path = next(iter(index.by_name.get(json_path.stem.lower() + ".jpg", [])), None)
                path = path or next(iter(index.by_name.get(json_path.stem.lower() + ".png", [])), None)
            sample = by_source.get(index.source(path)) if path is not None else None
            if sample is None:
                continue
            painted = []  # (class, region) of every shape that outlines an area
            for shape in data["shapes"]:
                label = str(shape["label"]).strip()
                region = shape_mask(shape, sample.height, sample.width)
                if region is not None and label:
                    painted.append((BACKGROUND if label.lower() in _BACKGROUND_NAMES else label, region))
            for label in {label for label, _ in painted}:
                store.add_label(project, label)
            classes = store.labels(project)
            mask = np.full((sample.height, sample.width), classes.index(BACKGROUND), np.uint8)
            for label, region in painted:
                mask[region] = classes.index(label)
            write_mask(store, sample.id, mask)
            done += 1
        except (KeyError, TypeError, ValueError, AttributeError, OSError, MaskError) as exc:
            report.fail(name, f"its shapes cannot be drawn ({exc})")
    return done


def yolo_polygons(path: Path, names: dict, width: int, height: int) -> list[tuple[str, list[float]]]:
    """(class, polygon in pixels) of every line of a YOLO-seg label file (``class x1 y1 x2 y2 ...``,
    normalised; a line of 4 numbers is a box ``cx cy w h``, painted as its rectangle)."""
    shapes = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            cls, values = int(parts[0]), [float(v) for v in parts[1:]]
        except ValueError:
            raise ValueError(f"line {number} is not 'class x1 y1 x2 y2 ...'") from None
        if cls not in names:
            raise ValueError(f"line {number}: class {cls} is not in the {len(names)} class names")
        if len(values) == 4:
            cx, cy, w, h = values
            values = [
                cx - w / 2,
                cy - h / 2,
                cx + w / 2,
                cy - h / 2,
                cx + w / 2,
                cy + h / 2,
                cx - w / 2,
                cy + h / 2,
            ]
        if len(values) < 6 or len(values) % 2:
            raise ValueError(f"line {number} has {len(values)} coordinates: a polygon needs 3 points or more")
        pixels = [v * (width if k % 2 == 0 else height) for k, v in enumerate(values)]
        shapes.append((names[cls], pixels))
    return shapes


def attach_yolo_masks(store, project, root: Path, report: ImportReport) -> int:
    """Store the masks the YOLO-seg label files under ``root`` outline for the samples imported with them."""
    from .yolo import _label_file, _Layout

    names = _Layout(root).names or {}
    store.add_label(project, BACKGROUND)
    for name in names.values():
        store.add_label(project, name)
    classes = store.labels(project)
    done = 0
    for sample in store.samples(project):
        image = root / sample.source
        label_path = _label_file(image, root) if image.is_file() else None
        if label_path is None:
            continue
        try:
            mask = np.full((sample.height, sample.width), classes.index(BACKGROUND), np.uint8)
            for label, polygon in yolo_polygons(label_path, names, sample.width, sample.height):
                mask[polygon_mask([polygon], sample.height, sample.width)] = classes.index(label)
            write_mask(store, sample.id, mask)
            done += 1
        except (OSError, ValueError, MaskError) as exc:
            report.fail(sample.source, f"label file {label_path.name}: {exc}")
    return done


__all__ = ["attach_labelme_masks", "attach_yolo_masks", "shape_mask", "yolo_polygons"]
