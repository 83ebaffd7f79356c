"""Photos with index masks in a sibling folder: CamVid's ``train/`` + ``trainannot/``, or ``images/`` +
``masks/`` (``labels/``, ``annotations/``), with an optional ``classes.txt``.

A mask is a PNG of the photo's size named like the photo (any image suffix), whose pixel value is the
class index (a palette PNG's indices count, so Pascal VOC's ``SegmentationClass`` reads the same way).
``classes.txt`` names the values, one per line as ``<value> <name>`` or just ``<name>`` (the line
number is the value); a class called Unlabelled, void, ignore (or the value 255) means "not labeled".
Without ``classes.txt`` the classes are called ``class <value>``. Folders named train/val/test (CamVid's)
give the photos that split. The photos import as any folder; :func:`attach_masks` then stores each
mask for its sample (``datasets/masks.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from PIL import Image

from .detect import is_hidden, iter_files
from .folders import _ignored_note
from .items import ImportReport, Item
from .masks import VOID, MaskError, write_mask
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
    if not pairs and "images" in dirs:
        masks = next((dirs[n] for n in MASK_DIRS if n in dirs), None)
        if masks is not None:
            pairs.append((dirs["images"], masks))
    return pairs


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


__all__ = ["attach_masks", "folder_pairs", "is_mask_folder", "read_classes", "read_mask_folders"]
