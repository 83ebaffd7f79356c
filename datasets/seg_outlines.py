"""LabelMe outlines as a segmentation project's masks: each photo's polygons, rectangles and circles
painted in their file's order (a later shape covers an earlier one), a pixel taken when its centre is
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


__all__ = ["attach_labelme_masks", "shape_mask"]
