"""Photos with index masks in a sibling folder: CamVid's ``train/`` + ``trainannot/``, Pascal VOC's
``JPEGImages/`` + ``SegmentationClass/``, or ``images/`` + ``masks/`` (``labels/``, ``annotations/``),
with an optional ``classes.txt`` (VOC without one: its 21 classes).

A mask is a PNG of the photo's size named like the photo (any image suffix), whose pixel value is the
class index (a palette PNG's indices count, so Pascal VOC's ``SegmentationClass`` reads the same way).
``classes.txt`` names the values, one per line as ``<value> <name>`` or just ``<name>`` (the line
number is the value); a class called Unlabelled, void, ignore (or the value 255) means "not labeled".
Without ``classes.txt`` the classes are called ``class <value>``. Folders named train/val/test (CamVid's)
give the photos that split. The photos import as any folder; :func:`attach_masks` then stores each
mask for its sample (``datasets/masks.py``).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
from PIL import Image

from .detect import is_hidden, iter_files
from .folders import _ignored_note
from .items import ImportReport, Item
from .masks import VOID, MaskError, write_mask
from .media import atomic_write
from .verify import media_kind

#: mask folder names next to a photo folder ``images/``
MASK_DIRS = ("masks", "mask", "labels", "annotations", "annot", "segmentationclass")
#: a photo folder ``X`` with masks in ``X + suffix`` (CamVid: ``train`` + ``trainannot``)
MASK_SUFFIXES = ("annot", "_annot", "_masks", "_mask", "_labels")
SPLITS = {
    "train": "train",
    "training": "train",
    "val": "val",
    "valid": "val",
    "validation": "val",
    "test": "test",
}
VOID_NAMES = {"unlabelled", "unlabeled", "void", "ignore", "ignored", "none", "unknown"}
CLASS_FILES = ("classes.txt", "labels.txt", "class_names.txt")
_LINE = re.compile(r"^\s*(\d+)[\s:,]+(.+?)\s*$")


def _dirs(root: Path) -> dict[str, Path]:
    return {p.name.lower(): p for p in root.iterdir() if p.is_dir() and not is_hidden(p.name)}


def folder_pairs(root) -> list[tuple[Path, Path]]:
    """(photo folder, mask folder) pairs directly under ``root``; [] when it has none."""
    root = Path(root)
    if not root.is_dir():
        return []
    dirs = _dirs(root)
    pairs = []
    for name, folder in sorted(dirs.items()):
        for suffix in MASK_SUFFIXES:
            if name + suffix in dirs:
                pairs.append((folder, dirs[name + suffix]))
                break
    if not pairs and "jpegimages" in dirs and "segmentationclass" in dirs:  # Pascal VOC
        pairs.append((dirs["jpegimages"], dirs["segmentationclass"]))
    if not pairs and "images" in dirs:
        masks = next((dirs[n] for n in MASK_DIRS if n in dirs), None)
        if masks is not None:
            pairs.append((dirs["images"], masks))
    # a folder of label files (YOLO's labels/, VOC's Annotations/) holds no masks
    return [(photos, masks) for photos, masks in pairs if _has_image(masks)]


def _has_image(folder: Path) -> bool:
    return any(media_kind(p.suffix.lower()) == "image" for p in iter_files(folder))


def is_mask_folder(root) -> bool:
    """Whether ``root`` holds photos with a sibling folder of index masks."""
    return bool(folder_pairs(root))


def read_classes(root: Path) -> dict[int, str | None]:
    """Mask value -> class name (None: not labeled) from ``classes.txt``; {} when there is none."""
    for name in CLASS_FILES:
        path = Path(root) / name
        if path.is_file():
            break
    else:
        return {}
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the class names ({exc})") from None
    names: dict[int, str | None] = {}
    for number, line in enumerate(x for x in lines if x.strip()):
        found = _LINE.match(line)
        value, name = (int(found.group(1)), found.group(2)) if found else (number, line.strip())
        if value > 255:
            raise ValueError(f"{path}: class value {value} does not fit a mask (0-255)")
        names[value] = None if name.lower() in VOID_NAMES or value == VOID else name
    return names


def _masks_by_stem(folder: Path) -> dict[str, Path]:
    return {
        p.stem: p
        for p in iter_files(folder)
        if p.parent == folder and media_kind(p.suffix.lower()) == "image"
    }


def read_mask_folders(root: Path, report: ImportReport, kind: str) -> tuple[int, list[Item]]:
    """Items for the photos of every (photo folder, mask folder) pair (their masks come afterwards)."""
    items, ignored = [], []
    for photos, masks in folder_pairs(root):
        split = SPLITS.get(photos.name.lower())
        with_mask = _masks_by_stem(masks)
        for file in iter_files(photos):
            rel = file.relative_to(root).as_posix()
            if media_kind(file.suffix.lower()) != kind:
                ignored.append(rel)
                continue
            items.append(Item(source=rel, path=file, split=split))
        missing = sum(1 for f in iter_files(photos) if f.stem not in with_mask)
        if missing:
            report.warn(f"{photos}: {missing} photo(s) have no mask in {masks.name}/; they import unlabeled")
    _ignored_note(report, root, ignored, kind)
    return len(items), items


def _load_values(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        if image.mode not in ("L", "P", "I", "I;16", "1"):
            raise MaskError(
                f"{path}: a {image.mode} picture, not an index mask (one class number per pixel, "
                "grayscale or palette PNG)"
            )
        return np.asarray(image).astype(np.int64)


def attach_masks(store, project, root: Path, report: ImportReport) -> int:
    """Store the mask of every sample imported from ``root``'s photo folders; returns how many."""
    names = read_classes(root)
    if not names and any(m.name.lower() == "segmentationclass" for _, m in folder_pairs(root)):
        names = dict(enumerate(VOC_CLASSES))  # Pascal VOC without a class list: its own 21 classes
    numbered = not names
    for name in sorted({n for n in names.values() if n}):
        store.add_label(project, name)
    by_source = {}
    for photos, masks in folder_pairs(root):
        with_mask = _masks_by_stem(masks)
        for file in iter_files(photos):
            if file.stem in with_mask:
                by_source[file.relative_to(root).as_posix()] = with_mask[file.stem]
    unknown: set[int] = set()
    done = 0
    for sample in store.samples(project):
        path = by_source.get(sample.source)
        if path is None:
            continue
        try:
            values = _load_values(path)
            if numbered:  # no class list: every value found is a class of its own
                for value in sorted(set(np.unique(values).tolist()) - {VOID} - set(names)):
                    names[value] = f"class {value}"
                    store.add_label(project, f"class {value}")
            classes = store.labels(project)
            table = np.full(max(256, int(values.max(initial=0)) + 1), VOID, np.uint8)
            for value, class_name in names.items():
                if class_name is not None:
                    table[value] = classes.index(class_name)
            unknown |= set(np.unique(values).tolist()) - set(names) - {VOID}
            write_mask(store, sample.id, table[values])
            done += 1
        except (MaskError, OSError, ValueError) as exc:
            report.fail(str(path), str(exc).removeprefix(f"{path}: "))
    if unknown:
        report.warn(
            f"mask values {', '.join(map(str, sorted(unknown)))} are not in the class list; "
            "those pixels count as not labeled"
        )
    return done


#: Pascal VOC's 21 classes in their mask values (255 is the "difficult" border, not labeled)
VOC_CLASSES = (
    "background",
    "aeroplane",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "bus",
    "car",
    "cat",
    "chair",
    "cow",
    "diningtable",
    "dog",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "sofa",
    "train",
    "tvmonitor",
)


def voc_palette() -> list[int]:
    """Pascal VOC's colour map (flat RGB, 256 entries): the bits of the class index spread over R, G, B."""
    flat = []
    for k in range(256):
        r = g = b = 0
        c = k
        for j in range(8):
            r |= ((c >> 0) & 1) << (7 - j)
            g |= ((c >> 1) & 1) << (7 - j)
            b |= ((c >> 2) & 1) << (7 - j)
            c >>= 3
        flat += [r, g, b]
    return flat


def write_masks(store, project, out: Path, samples, *, voc: bool = False) -> tuple[int, int]:
    """Export: the photos and their masks (values = the index in ``classes.txt``, 255 = not labeled).

    ``voc``: Pascal VOC's layout (``JPEGImages/``, ``SegmentationClass/`` palette PNGs in VOC's colours);
    else ``images/`` + ``masks/`` (grayscale PNGs). Both import back to the same masks.
    """
    from .exporting import _copy, _Namer
    from .masks import mask_ref

    photos, masks = (
        (out / "JPEGImages", out / "SegmentationClass") if voc else (out / "images", out / "masks")
    )
    photos.mkdir(parents=True)
    masks.mkdir()
    classes = store.labels(project)
    (out / "classes.txt").write_text(
        "".join(f"{k} {name}\n" for k, name in enumerate(classes)), encoding="utf-8"
    )
    namer, count, files = _Namer(), 0, 1
    palette = voc_palette() if voc else None
    for sample in samples:
        name = namer(sample)
        _copy(sample, photos / name)
        count += 1
        files += 1
        ref = mask_ref(store, project, sample)
        if ref is None:
            continue
        values = ref.read()
        image = Image.frombytes("P" if voc else "L", (values.shape[1], values.shape[0]), values.tobytes())
        if palette is not None:
            image.putpalette(palette)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        atomic_write(masks / f"{Path(name).stem}.png", buffer.getvalue())
        files += 1
    return count, files


__all__ = [
    "VOC_CLASSES",
    "attach_masks",
    "folder_pairs",
    "is_mask_folder",
    "read_classes",
    "read_mask_folders",
    "voc_palette",
    "write_masks",
]
