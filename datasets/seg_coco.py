"""COCO segmentation: polygons and run-length masks (RLE) of a COCO file as a project's class masks.

Each annotation paints its category over its photo's mask, in the file's order (a later one covers an
earlier one where they overlap). A polygon takes the pixels whose centre is inside it (pycocotools'
filling differs by at most a few pixels along an outline); RLE, compressed (COCO's
string) or not (a list of counts), is decoded here in numpy, exactly. Pixels no annotation covers are
the class ``background`` (added when the file has none), except in files ModelDesk wrote, whose
``info`` says they are "not labeled" (255), so that export and import give back every mask exactly.
The export writes one compressed RLE per class and photo.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import safejson
from .coco import _coco_files, _folders, _locate, _subset, load_coco
from .items import ImportReport
from .masks import VOID, MaskError, write_mask

BACKGROUND = "background"
#: what ModelDesk writes in ``info`` so that its own files keep "not labeled" pixels apart
UNANNOTATED_KEY = "modeldesk_unannotated"


def rle_decode(rle: dict) -> np.ndarray:
    """COCO RLE (``{"size": [h, w], "counts": str or list}``) -> (h, w) bool mask."""
    height, width = (int(v) for v in rle["size"])
    counts = rle["counts"]
    runs = _string_counts(counts) if isinstance(counts, str) else [int(c) for c in counts]
    if any(c < 0 for c in runs) or sum(runs) != height * width:
        raise ValueError(f"its RLE counts cover {sum(runs)} pixels, not {height} x {width}")
    values = np.zeros(len(runs), np.uint8)
    values[1::2] = 1  # runs alternate: not in the mask, in the mask, ...
    flat = np.repeat(values, runs)
    return flat.reshape(width, height).T.astype(bool)  # column-major, as COCO stores it


def rle_encode(mask: np.ndarray) -> dict:
    """(h, w) bool mask -> COCO's compressed RLE ``{"size": [h, w], "counts": str}``."""
    flat = np.asarray(mask, bool).T.ravel()
    changes = np.flatnonzero(np.diff(flat.astype(np.int8))) + 1
    edges = np.concatenate([[0], changes, [flat.size]])
    runs = np.diff(edges).tolist()
    if flat.size and flat[0]:
        runs = [0, *runs]
    return {"size": [int(mask.shape[0]), int(mask.shape[1])], "counts": _counts_string(runs)}


def _string_counts(text: str) -> list[int]:
    """COCO's compressed counts (pycocotools' ``rleFrString``): 5 bits a character, deltas after the third."""
    counts: list[int] = []
    position = 0
    while position < len(text):
        value, shift, more = 0, 0, True
        while more:
            if position >= len(text):
                raise ValueError("its RLE string ends in the middle of a number")
            c = ord(text[position]) - 48
            value |= (c & 0x1F) << shift
            more = bool(c & 0x20)
            position += 1
            shift += 5
            if not more and c & 0x10:
                value |= -1 << shift
        if len(counts) > 2:
            value += counts[-2]
        counts.append(value)
    return counts


def _counts_string(counts: list[int]) -> str:
    """Counts -> COCO's compressed string (pycocotools' ``rleToString``)."""
    out = []
    for i, count in enumerate(counts):
        value = count - counts[i - 2] if i > 2 else count
        more = True
        while more:
            c = value & 0x1F
            value >>= 5
            more = value != -1 if c & 0x10 else value != 0
            if more:
                c |= 0x20
            out.append(chr(c + 48))
    return "".join(out)


def polygon_mask(polygons, height: int, width: int) -> np.ndarray:
    """COCO polygons ``[[x1, y1, x2, y2, ...], ...]`` (pixel coordinates, pixel edges at integers) ->
    (h, w) bool mask: a pixel is in when its centre is inside a polygon (even-odd rule), parts unite."""
    mask = np.zeros((height, width), bool)
    centres = np.arange(width) + 0.5
    for polygon in polygons:
        points = np.asarray([float(v) for v in polygon], np.float64)
        if len(points) < 6 or len(points) % 2:
            continue
        x0, y0 = points[0::2], points[1::2]
        x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
        rows = range(max(0, int(np.floor(y0.min()))), min(height, int(np.ceil(y0.max())) + 1))
        for row in rows:
            middle = row + 0.5
            crossing = (y0 <= middle) != (y1 <= middle)
            if not crossing.any():
                continue
            xs = x0[crossing] + (middle - y0[crossing]) * (x1[crossing] - x0[crossing]) / (
                y1[crossing] - y0[crossing]
            )
            mask[row] |= (centres[None, :] > xs[:, None]).sum(axis=0) % 2 == 1
    return mask


def annotation_mask(segmentation, height: int, width: int) -> np.ndarray:
    """One annotation's ``segmentation`` (polygons or RLE) as an (h, w) bool mask."""
    if isinstance(segmentation, list):
        return polygon_mask(segmentation, height, width)
    if isinstance(segmentation, dict):
        mask = rle_decode(segmentation)
        if mask.shape != (height, width):
            raise ValueError(f"its RLE is {mask.shape[1]}x{mask.shape[0]}, the photo {width}x{height}")
        return mask
    raise ValueError("its segmentation is neither polygons nor RLE")


def has_segmentation(root) -> bool:
    """Whether a COCO file under ``root`` outlines its objects (polygons or RLE), not only boxes."""
    report = ImportReport()
    for json_path in _coco_files(Path(root), report):
        try:
            _categories, _images, annotations = load_coco(json_path, json_path.name, report)
        except ValueError:
            continue
        if any(isinstance(a, dict) and a.get("segmentation") for a in annotations):
            return True
    return False


def attach_coco_masks(store, project, root: Path, report: ImportReport) -> int:
    """Store the masks the COCO file(s) under ``root`` draw for the samples imported from them."""
    base = root.parent if root.is_file() else root
    by_source = {s.source: s for s in store.samples(project)}
    done = 0
    for json_path in _coco_files(root, report):
        name = json_path.relative_to(base).as_posix()
        try:
            categories, images, annotations = load_coco(json_path, name, report)
            document = safejson.load_file(json_path)
            info = (document.get("info") if isinstance(document, dict) else None) or {}
        except (OSError, ValueError) as exc:  # safejson's limit error is a ValueError too
            report.warn(f"{name}: {exc}")
            continue
        unlabeled_is_void = isinstance(info, dict) and info.get(UNANNOTATED_KEY) == "void"
        names = sorted(set(categories.values()) | (set() if unlabeled_is_void else {BACKGROUND}))
        for class_name in names:
            store.add_label(project, class_name)
        classes = store.labels(project)
        index = {class_name: classes.index(class_name) for class_name in names}
        by_image: dict = {}
        for ann in annotations:
            if isinstance(ann, dict) and ann.get("segmentation") and ann.get("image_id") in images:
                by_image.setdefault(ann["image_id"], []).append(ann)
        folders = _folders(json_path, _subset(json_path))
        for image_id, image in images.items():
            path = _locate(folders, str(image.get("file_name", "")))
            if path is None:
                continue
            sample = by_source.get(
                path.relative_to(base).as_posix() if path.is_relative_to(base) else path.name
            )
            if sample is None:
                continue
            height, width = sample.height, sample.width
            fill = VOID if unlabeled_is_void else index[BACKGROUND]
            mask = np.full((height, width), fill, np.uint8)
            try:
                for ann in by_image.get(image_id, []):
                    category = categories.get(ann.get("category_id"))
                    if category is None:
                        raise ValueError(f"annotation {ann.get('id')} names no known category")
                    mask[annotation_mask(ann["segmentation"], height, width)] = index[category]
                write_mask(store, sample.id, mask)
                done += 1
            except (MaskError, ValueError, TypeError) as exc:
                report.fail(sample.source, f"{name}: {exc}")
    return done


def write_coco_masks(store, project, out: Path, samples) -> tuple[int, int]:
    """Export: the photos beside ``annotations.json`` with one compressed RLE per class and photo
    (``iscrowd`` 0); not labeled pixels are in no annotation, and ``info`` says so."""
    from .exporting import _copy, _Namer, _write_text
    from .masks import mask_ref

    classes = store.labels(project)
    namer = _Namer()
    images: list[dict] = []
    annotations: list[dict] = []
    (out / "images").mkdir(parents=True)
    for number, sample in enumerate(samples, 1):
        name = namer(sample)
        _copy(sample, out / "images" / name)
        images.append({"id": number, "file_name": name, "width": sample.width, "height": sample.height})
        ref = mask_ref(store, project, sample)
        if ref is None:
            continue
        values = ref.read()
        for k in np.unique(values):
            if k == VOID:
                continue
            region = values == k
            ys, xs = np.nonzero(region)
            x0, y0 = int(xs.min()), int(ys.min())
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": number,
                    "category_id": int(k) + 1,
                    "segmentation": rle_encode(region),
                    "area": int(region.sum()),
                    "bbox": [x0, y0, int(xs.max()) - x0 + 1, int(ys.max()) - y0 + 1],
                    "iscrowd": 0,
                }
            )
    document = {
        "info": {"description": "exported by ModelDesk", UNANNOTATED_KEY: "void"},
        "images": images,
        "annotations": annotations,
        "categories": [{"id": i + 1, "name": n, "supercategory": ""} for i, n in enumerate(classes)],
    }
    _write_text(out / "annotations.json", json.dumps(document, ensure_ascii=False))
    return len(images), len(images) + 1


__all__ = [
    "annotation_mask",
    "attach_coco_masks",
    "has_segmentation",
    "polygon_mask",
    "rle_decode",
    "rle_encode",
    "write_coco_masks",
]
