"""COCO object detection: a JSON file with ``images``, ``annotations`` and ``categories``.

Layouts read: the official one (``annotations/instances_val2017.json`` with the photos in a sibling
``val2017/`` or in ``images/val2017/``), photos beside the JSON or in ``images/`` beside it, and
Roboflow's ``<split>/_annotations.coco.json``. The split comes from the subset name (``val2017``)
or the split folder (``valid``). Crowd regions (``iscrowd: 1``) are left out, with a warning.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from .. import safejson
from .detect import iter_files, looks_like_coco
from .items import ImportReport, Item
from .limits import MAX_BOXES_PER_IMAGE, split_from_name
from .records import Box
from .safety import to_float

# Official COCO annotation files that repeat the photos of ``instances_<subset>.json`` without boxes
# of their own (captions) or with the person boxes only (keypoints): read once, through instances.
_COMPANION_PREFIXES = ("captions_", "person_keypoints_", "image_info_")


def _coco_files(root: Path, report: ImportReport) -> list[Path]:
    if root.is_file():
        return [root]
    found = [p for p in iter_files(root) if p.suffix.lower() == ".json" and looks_like_coco(p)]
    instances = {p.parent / p.name[len("instances_") :] for p in found if p.name.startswith("instances_")}
    kept = []
    for path in found:
        prefix = next((x for x in _COMPANION_PREFIXES if path.name.startswith(x)), None)
        if prefix and path.parent / path.name[len(prefix) :] in instances:
            report.warn(
                f"{path.name}: skipped, it lists the photos of instances_{path.name[len(prefix) :]} again "
                "(its boxes, if any, are read from that file)"
            )
            continue
        kept.append(path)
    return kept


def _subset(json_path: Path) -> str:
    """``instances_val2017.json`` -> ``val2017``; ``_annotations.coco.json`` -> its folder's name."""
    stem = json_path.name.split(".")[0]
    for prefix in ("instances_",) + _COMPANION_PREFIXES:
        if stem.startswith(prefix):
            return stem[len(prefix) :]
    return json_path.parent.name if stem in ("_annotations", "annotations") else stem


def _folders(json_path: Path, subset: str) -> list[Path]:
    """Where the photos of ``json_path`` may be, most specific first (only those that exist)."""
    here = json_path.parent
    places = []
    for base in (here, here.parent):
        places += [base / subset, base / "images" / subset, base, base / "images"]
    seen, folders = set(), []
    for folder in places:
        if folder not in seen and folder.is_dir():
            seen.add(folder)
            folders.append(folder)
    return folders


def _locate(folders: list[Path], file_name: str) -> Path | None:
    """The photo ``file_name`` in the first of ``folders`` that has it; the folder that had the last
    photo is tried first (a COCO file keeps its photos in one folder: one stat per photo, not eight)."""
    rel = Path(file_name.replace("\\", "/"))
    if rel.is_absolute() or ".." in rel.parts:
        rel = Path(rel.name)
    names = [rel] if len(rel.parts) == 1 else [rel, Path(rel.name)]
    for folder in folders:
        for name in names:
            candidate = folder / name
            if candidate.is_file():
                if folder is not folders[0]:
                    folders.remove(folder)
                    folders.insert(0, folder)
                return candidate
    return None


def _list_of(data: dict, key: str, name: str, required: bool = True) -> list:
    value = data.get(key, None if required else [])
    if value is None:
        raise ValueError(f'{name} is not a COCO file: it has no "{key}" list')
    if not isinstance(value, list):
        raise ValueError(  # noqa: TRY004 - a file's content: the importers catch ValueError
            f'{name} is not a valid COCO file: "{key}" is {json.dumps(value)[:40]}, where COCO has a '
            f"list of {key}"
        )
    return value


def _long_number(text: str) -> float:
    """A number past safejson's length limit, read as +-infinity: its box then fails its image alone."""
    if len(text) > safejson.MAX_NUMBER_CHARS:
        return float("-inf") if text.startswith("-") else float("inf")
    return float(text) if any(c in text for c in ".eE") else int(text)


def _read_json(json_path: Path, name: str, report: ImportReport):
    """The document, read with safejson's limits; a document that breaks only the number limits (NaN,
    a number of thousands of digits) is read again with those numbers as infinities, with a warning
    naming the file, so that only the images whose boxes hold them fail (not the whole file)."""
    try:
        return safejson.load_file(json_path)
    except safejson.JSONLimitError as exc:
        reason = str(exc).split(": ", 1)[-1]
        if "number" not in reason and "NaN" not in reason and "Infinity" not in reason:
            raise ValueError(f"cannot read COCO file {name}: {reason}") from None
    try:
        data = json.loads(
            json_path.read_bytes(), parse_int=_long_number, parse_float=_long_number, parse_constant=float
        )
    except (RecursionError, ValueError):
        raise ValueError(f"cannot read COCO file {name}: {reason}") from None
    report.warn(f"{name}: {reason}; the boxes holding such numbers fail their images")
    return data


def load_coco(json_path: Path, name: str, report: ImportReport) -> tuple[dict, dict, list]:
    """(categories id -> name, images id -> entry, annotations) of one COCO file.

    ValueError, with a message naming the file, for a file that is not JSON, breaks a limit (depth,
    size) or does not have COCO's structure.
    """
    try:
        data = _read_json(json_path, name, report)
    except OSError as exc:
        raise ValueError(f"cannot read COCO file {name} ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{name} is not a COCO file: it holds a JSON {type(data).__name__}, not an object")  # noqa: TRY004 - a file's content: the importers catch ValueError
    categories, images = {}, {}
    for entry in _list_of(data, "categories", name, required=False):
        if not isinstance(entry, dict) or "id" not in entry or "name" not in entry:
            raise ValueError(f'{name}: a category without "id" and "name": {json.dumps(entry)[:60]}')
        categories[entry["id"]] = str(entry["name"])
    for entry in _list_of(data, "images", name):
        if not isinstance(entry, dict) or "id" not in entry:
            raise ValueError(f'{name}: an image entry without "id": {json.dumps(entry)[:60]}')
        images[entry["id"]] = entry
    return categories, images, _list_of(data, "annotations", name)


def _boxes(annotations: list, categories: dict, images: dict, name: str, report: ImportReport) -> dict:
    boxes: dict = {image_id: [] for image_id in images}
    bad = crowd = 0
    for ann in annotations:
        try:
            if ann.get("iscrowd") in (1, True):
                crowd += 1
                continue
            x, y, w, h = (to_float(v) for v in ann["bbox"])  # a huge integer gives inf: refused later
            boxes[ann["image_id"]].append(Box(categories[ann["category_id"]], x, y, x + w, y + h))
        except (AttributeError, KeyError, TypeError, ValueError):
            bad += 1
    if bad:
        report.warn(f"{name}: skipped {bad} annotation(s) without a valid bbox, category or image id")
    if crowd:
        report.warn(
            f"{name}: {crowd} crowd region(s) (iscrowd=1) left out of training: they outline a group "
            "of objects, not one, and would teach wrong boxes"
        )
    return boxes


def read_coco(root: Path, report: ImportReport) -> tuple[int, Iterator[Item]]:
    """Items for every image listed in the COCO JSON file(s) under ``root``.

    The files are read first (their image count is the total); the items are then made one by one as
    the import asks for them, so the first photos are stored while later ones are still looked up.
    """
    base = root.parent if root.is_file() else root
    loaded: list[tuple[Path, str, tuple | str]] = []
    for json_path in _coco_files(root, report):
        name = json_path.relative_to(base).as_posix()
        try:
            loaded.append((json_path, name, load_coco(json_path, name, report)))
        except ValueError as exc:
            loaded.append((json_path, name, str(exc)))
    total = sum(1 if isinstance(doc, str) else len(doc[1]) for _path, _name, doc in loaded)
    return total, _coco_items(base, loaded, report)


def _coco_items(base: Path, loaded: list, report: ImportReport) -> Iterator[Item]:
    for json_path, name, document in loaded:
        if isinstance(document, str):
            yield Item(source=name, error=document)
            continue
        categories, images, annotations = document
        subset = _subset(json_path)
        split = split_from_name(subset)
        folders = _folders(json_path, subset)
        where = ", ".join(f.relative_to(base).as_posix() or "." for f in folders if f.is_relative_to(base))
        boxes = _boxes(annotations, categories, images, name, report)
        for image_id, image in images.items():
            file_name = str(image.get("file_name", ""))
            path = _locate(folders, file_name) if file_name else None
            if path is None:
                error = f"image listed in {name} was not found (looked in {where or 'its folder'})"
                yield Item(source=file_name or f"image id {image_id}", error=error)
                continue
            source = path.relative_to(base).as_posix() if path.is_relative_to(base) else path.name
            count = len(boxes[image_id])
            if count > MAX_BOXES_PER_IMAGE:
                error = f"{name} gives it {count:,} boxes, more than the {MAX_BOXES_PER_IMAGE:,} read"
                yield Item(source=source, error=error)
                continue
            yield Item(source=source, path=path, boxes=boxes[image_id], split=split)


def coco_document(images: list[dict], annotations: list[dict], labels: list[str]) -> str:
    """A COCO JSON document (categories are numbered from 1 in ``labels`` order)."""
    return json.dumps(
        {
            "info": {"description": "exported by ModelDesk"},
            "images": images,
            "annotations": annotations,
            "categories": [{"id": i + 1, "name": n, "supercategory": ""} for i, n in enumerate(labels)],
        },
        ensure_ascii=False,
        indent=1,
    )
