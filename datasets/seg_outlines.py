"""LabelMe and YOLO-seg outlines as a segmentation project's masks: each photo's polygons (LabelMe's
rectangles and circles too; a YOLO line of 4 numbers is a box) painted in their file's order (a later shape covers an earlier one), a pixel taken when its centre is
inside the shape (``seg_coco.polygon_mask``). Pixels no shape covers are ``_background_`` in LabelMe's
own convention (``labelme2voc``); here they are the class ``background``. Lines and points outline
nothing and are left out.

The exports (``write_labelme_masks``, ``write_yolo_masks``) trace every region of a mask along its
pixels' edges (``modeldesk.outlines``), largest first, so that importing them back paints every labeled
pixel as it was (0 pixels differ). Neither format can say "not labeled": such pixels come back as
``background`` (a class the import adds), and a photo without a mask gets no annotation file.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import safejson
from ..outlines import mask_polygons
from .detect import iter_files, looks_like_labelme
from .items import ImportReport
from .labelme import MAX_FILE_BYTES
from .locate import ImageIndex
from .masks import VOID, MaskError, mask_ref, write_mask
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


def mask_outlines(store, project, sample, classes: list[str]) -> list[tuple[str, list[float]]] | None:
    """(class, polygon in pixels) of every region of ``sample``'s mask, in painting order (None: no mask).
    Not labeled pixels count as ``background``; a background region gets a polygon only inside another
    region (an import starts from background everywhere else)."""
    ref = mask_ref(store, project, sample)
    if ref is None:
        return None
    values = ref.read()
    background = classes.index(BACKGROUND) if BACKGROUND in classes else VOID
    values[values == VOID] = background
    names = {**dict(enumerate(classes)), VOID: BACKGROUND}
    return [
        (names[value], points)
        for value, points in mask_polygons(values, skip=(), skip_on_border=(background,))
    ]


def write_labelme_masks(store, project, out: Path, samples) -> tuple[int, int]:
    """Export: one LabelMe JSON of polygons beside each photo, in ``<split>/`` folders."""
    from .exporting import _by_split_folder, _write_text
    from .labelme import labelme_document

    classes = store.labels(project)
    files = 0

    def write_folder(folder: Path, entries) -> None:
        nonlocal files
        for name, sample in entries:
            outlines = mask_outlines(store, project, sample, classes)
            if outlines is not None:
                document = labelme_document(name, sample.width, sample.height, [], [], outlines)
                _write_text(folder / f"{Path(name).stem}.json", document)
                files += 1

    count, _files = _by_split_folder(out, samples, write_folder)
    return count, count + files


def write_yolo_masks(store, project, out: Path, samples) -> tuple[int, int]:
    """Export: Ultralytics YOLO-seg, ``images/<split>/``, ``labels/<split>/`` (one polygon a line,
    normalised to the photo's size), ``data.yaml`` and ``classes.txt``."""
    from .exporting import _copy, _Namer, _split_of, _write_text

    classes = store.labels(project)
    names = list(classes)
    namer, count, files, splits = _Namer(), 0, 0, set()
    for sample in samples:
        split = _split_of(sample)
        splits.add(split)
        name = namer(sample)
        _copy(sample, out / "images" / split / name)
        count += 1
        outlines = mask_outlines(store, project, sample, classes)
        if outlines is None:
            continue
        lines = []
        for label, points in outlines:
            if label not in names:  # not labeled pixels inside a region, in a project with no background
                names.append(label)
            size = (sample.width, sample.height)
            coords = " ".join(f"{v / size[k % 2]:.6f}" for k, v in enumerate(points))
            lines.append(f"{names.index(label)} {coords}\n")
        _write_text(out / "labels" / split / f"{Path(name).stem}.txt", "".join(lines))
        files += 1
    _write_text(out / "classes.txt", "".join(f"{n}\n" for n in names))
    listed = "".join(f"  {i}: {json.dumps(n, ensure_ascii=False)}\n" for i, n in enumerate(names))
    lists = "".join(f"{s}: images/{s}\n" for s in ("train", "val", "test") if s in splits)
    _write_text(out / "data.yaml", f"path: .\n{lists}nc: {len(names)}\nnames:\n{listed}")
    return count, count + files + 2


__all__ = [
    "attach_labelme_masks",
    "attach_yolo_masks",
    "mask_outlines",
    "shape_mask",
    "write_labelme_masks",
    "write_yolo_masks",
    "yolo_polygons",
]
