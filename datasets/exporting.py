"""``export_project``: write a project's data in a standard format another tool (or ModelDesk) reads.

Formats: ``folder`` (media in one folder per class, unlabeled media at the top; text as ``data.csv``),
``csv`` (``text,label`` for text, ``path,label`` for media, one row per box for detection), ``voc``,
``coco`` and ``yolo`` (detection, each with the train/val/test split in that format's own way; for
segmentation ``masks``, ``voc``, ``coco``, ``labelme`` and ``yolo``: polygons, see ``seg_outlines``). Media files are copied byte for byte; names come from the original
file names, made unique with a piece of the content hash where two collide.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from modeldesk.fileio import atomic_open, atomic_write

from . import defect_masks, seg_coco, seg_folders, seg_outlines
from .coco import coco_document
from .createml import createml_document
from .cvat import cvat_document
from .kinds import sample_kind
from .labelme import labelme_document
from .labelstudio import labelstudio_document
from .multiclass import TABLE_NAME, multiclass_table
from .records import Sample
from .safety import escape_cell
from .store import Store
from .voc import voc_xml
from .yolo import yolo_line

EXPORT_FORMATS = (
    "folder",
    "csv",
    "voc",
    "coco",
    "yolo",
    "cvat",
    "labelme",
    "labelstudio",
    "createml",
    "multiclass",
    "masks",
    "inspection",
)
_BOX_FORMATS = ("voc", "coco", "yolo", "createml")
_MASK_FORMATS = ("masks", "voc", "coco", "labelme", "yolo")
log = logging.getLogger(__name__)
_PAGE = 500


def _pages(store: Store, project) -> Iterator[Sample]:
    offset = 0
    while True:
        page = store.samples(project, offset=offset, limit=_PAGE)
        if not page:
            return
        yield from page
        offset += len(page)


class _Namer:
    """Unique file names in one folder, from the original names."""

    def __init__(self):
        self.used: set[str] = set()

    def __call__(self, sample: Sample) -> str:
        stem = Path(sample.source.replace("\\", "/")).stem or "item"
        stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)
        ext = sample.path.suffix if sample.path else ""
        name = f"{stem}{ext}"
        if name.lower() in self.used:
            name = f"{stem}_{sample.content_hash[:10]}{ext}"
        self.used.add(name.lower())
        return name


def export_project(
    store: Store,
    project,
    out_dir,
    format: str,
    *,
    progress: Callable[[int, int | None, str], None] | None = None,
) -> dict:
    """Write ``project`` to ``out_dir`` (created; must be empty) in ``format``.

    Everything is written into a temporary folder beside ``out_dir`` that is renamed into place at
    the end, so a failed or killed export leaves no partial folder. A sample whose media file is
    missing from the workspace is skipped and listed in ``skipped``. Text cells of CSV files are
    escaped against spreadsheet formulas (:func:`~.safety.escape_cell`).

    Returns
    -------
    dict
        ``{"path", "format", "samples", "files", "skipped"}``: the folder, the format, how many samples
        and how many files were written, and the samples left out as ``{"file", "reason"}``.
    """
    project = store.get_project(project)
    if format not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {format!r}; use one of: {', '.join(EXPORT_FORMATS)}")
    detection = project.target == "boxes"
    if format in ("cvat", "labelme", "labelstudio", "multiclass") and not sample_kind(project.kind).pictures:
        raise ValueError(
            f"{format} export is for photos; project {project.name!r} holds {project.kind}: use folder or csv"
        )
    masks = project.target == "mask"
    if format == "masks" and not masks:
        raise ValueError(f"masks export is for segmentation projects; {project.name!r} is {project.task}")
    if masks and format not in _MASK_FORMATS:
        raise ValueError(
            f"{format} export cannot hold masks; project {project.name!r} is {project.task}: "
            f"use {', '.join(_MASK_FORMATS[:-1])} or {_MASK_FORMATS[-1]}"
        )
    if format in _BOX_FORMATS and not detection and not masks:
        raise ValueError(
            f"{format.upper()} export is for projects with boxes; project "
            f"{project.name!r} is {project.task}: use folder or csv"
        )
    if format in ("folder", "multiclass") and detection:
        raise ValueError(
            f"project {project.name!r} has boxes, which a folder per class cannot hold; "
            "use voc, coco, yolo or csv"
        )
    if format == "inspection" and (project.target != "label" or not sample_kind(project.kind).pictures):
        raise ValueError(
            f"inspection export (good/, defect/<kind>/, masks/) is for photo projects with one label each; "
            f"{project.name!r} is {project.task}"
        )
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty; export into a new or empty folder")
    total = store.stats(project)["samples"]
    writer = {
        "folder": _folder,
        "csv": _csv,
        "voc": _voc,
        "coco": _coco,
        "yolo": _yolo,
        "cvat": _cvat,
        "labelme": _labelme,
        "labelstudio": _labelstudio,
        "createml": _createml,
        "multiclass": _multiclass,
        "masks": seg_folders.write_masks,
        "inspection": defect_masks.write_inspection,
    }[format]
    if format == "voc" and masks:  # Pascal VOC's segmentation layout
        writer = partial(seg_folders.write_masks, voc=True)
    if format == "coco" and masks:  # one compressed RLE per class and photo
        writer = seg_coco.write_coco_masks
    if format == "labelme" and masks:  # a polygon per region, painted in order
        writer = seg_outlines.write_labelme_masks
    if format == "yolo" and masks:  # YOLO-seg: a polygon per region and line
        writer = seg_outlines.write_yolo_masks
    skipped: list[dict] = []
    with _staging(out) as staging:
        samples, files = writer(
            store, project, staging, _present(_counted(_pages(store, project), total, progress), skipped)
        )
    for entry in skipped:
        log.warning("export skipped %s: %s", entry["file"], entry["reason"])
    return {"path": str(out), "format": format, "samples": samples, "files": files, "skipped": skipped}


@contextmanager
def _staging(out: Path) -> Iterator[Path]:
    """A new folder beside ``out`` (its mode follows the umask) that replaces ``out`` when the block ends
    cleanly; removed otherwise."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.export-{uuid.uuid4().hex[:8]}")
    staging.mkdir()
    try:
        yield staging
        if out.exists():
            out.rmdir()  # checked empty above
        os.replace(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _present(samples: Iterator[Sample], skipped: list[dict]) -> Iterator[Sample]:
    """The samples whose media file is there; the others go to ``skipped`` with a reason."""
    for sample in samples:
        if sample.path is not None and not sample.path.is_file():
            skipped.append(
                {
                    "file": sample.source,
                    "reason": f"its media file {sample.path.name} is missing from "
                    "the workspace's media folder",
                }
            )
            continue
        yield sample


def _counted(samples: Iterator[Sample], total: int, progress) -> Iterator[Sample]:
    for done, sample in enumerate(samples, 1):
        yield sample
        if progress is not None and (done % 50 == 0 or done == total):
            progress(done, total, sample.source)


def _copy(sample: Sample, dest: Path) -> None:
    """Copy a media file under a temporary name, then rename: a killed export leaves no torn file."""
    assert sample.path is not None  # only media samples, which all have a file, are copied
    with atomic_open(dest, "wb") as handle, open(sample.path, "rb") as source:
        shutil.copyfileobj(source, handle)


def _write_text(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


def _atomic_open(path: Path):
    """A text file written under a temporary name and renamed into place when complete."""
    return atomic_open(path, "w", encoding="utf-8", newline="")


def _write_inline(store, project, out: Path, samples) -> tuple[int, int]:
    write = sample_kind(project.kind).write_table
    if write is not None:
        return write(store, project, out, samples), 1
    return _write_text_csv(out, samples)


def _write_text_csv(out: Path, samples) -> tuple[int, int]:
    count = 0
    with _atomic_open(out / "data.csv") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for sample in samples:
            writer.writerow([escape_cell(sample.text), escape_cell(";".join(sample.labels))])
            count += 1
    return count, 1


def _folder(store, project, out: Path, samples) -> tuple[int, int]:
    if sample_kind(project.kind).inline:
        return _write_inline(store, project, out, samples)
    namers: dict[str, _Namer] = {}
    count = files = 0
    for sample in samples:
        count += 1
        for label in sample.labels or [""]:
            namer = namers.setdefault(label, _Namer())
            _copy(sample, (out / label if label else out) / namer(sample))
            files += 1
    return count, files


def _csv(store, project, out: Path, samples) -> tuple[int, int]:
    if sample_kind(project.kind).inline:
        return _write_inline(store, project, out, samples)
    namer, count, files = _Namer(), 0, 1
    detection = project.target == "boxes"
    with _atomic_open(out / "data.csv") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["path", "width", "height", "label", "xmin", "ymin", "xmax", "ymax"]
            if detection
            else ["path", "label"]
        )
        for sample in samples:
            name = f"files/{namer(sample)}"
            _copy(sample, out / name)
            count, files = count + 1, files + 1
            if detection:
                for b in sample.boxes or []:
                    writer.writerow(
                        [name, sample.width, sample.height, escape_cell(b.label), b.x0, b.y0, b.x1, b.y1]
                    )
                if not sample.boxes:
                    writer.writerow([name, sample.width, sample.height, "", "", "", "", ""])
            else:
                writer.writerow([name, escape_cell(";".join(sample.labels))])
    return count, files


def _split_of(sample: Sample) -> str:
    return sample.split or "unassigned"


def _voc(store, project, out: Path, samples) -> tuple[int, int]:
    """``JPEGImages/``, ``Annotations/`` and ``ImageSets/Main/<split>.txt`` (VOC's own split lists)."""
    namer, count = _Namer(), 0
    splits: dict[str, list[str]] = {}
    for sample in samples:
        name = namer(sample)
        _copy(sample, out / "JPEGImages" / name)
        xml = voc_xml(name, sample.width, sample.height, sample.boxes)
        _write_text(out / "Annotations" / f"{Path(name).stem}.xml", xml)
        splits.setdefault(_split_of(sample), []).append(Path(name).stem)
        count += 1
    for split, stems in splits.items():
        if split != "unassigned":
            _write_text(out / "ImageSets" / "Main" / f"{split}.txt", "".join(f"{s}\n" for s in stems))
    return count, 2 * count + len(set(splits) - {"unassigned"})


def _coco(store, project, out: Path, samples) -> tuple[int, int]:
    """The official layout: ``annotations/instances_<split>.json`` and ``images/<split>/``."""
    labels = store.labels(project)
    category = {name: i + 1 for i, name in enumerate(labels)}
    namer, count = _Namer(), 0
    parts: dict[str, tuple[list, list]] = {}
    next_box = 1
    for sample in samples:
        split = _split_of(sample)
        images, annotations = parts.setdefault(split, ([], []))
        name = namer(sample)
        _copy(sample, out / "images" / split / name)
        count += 1
        image_id = count  # unique across the split files, as in the official sets
        images.append({"id": image_id, "file_name": name, "width": sample.width, "height": sample.height})
        for b in sample.boxes:
            w, h = b.x1 - b.x0, b.y1 - b.y0
            annotations.append(
                {
                    "id": next_box,
                    "image_id": image_id,
                    "category_id": category[b.label],
                    "bbox": [b.x0, b.y0, w, h],
                    "area": w * h,
                    "iscrowd": 0,
                }
            )
            next_box += 1
    for split, (images, annotations) in parts.items():
        _write_text(
            out / "annotations" / f"instances_{split}.json", coco_document(images, annotations, labels)
        )
    return count, count + len(parts)


def _yolo(store, project, out: Path, samples) -> tuple[int, int]:
    """Ultralytics: ``images/<split>/``, ``labels/<split>/`` and a ``data.yaml`` naming the splits."""
    labels = store.labels(project)
    index = {name: i for i, name in enumerate(labels)}
    (out / "labels").mkdir()
    namer, count, splits = _Namer(), 0, set()
    for sample in samples:
        split = _split_of(sample)
        splits.add(split)
        name = namer(sample)
        _copy(sample, out / "images" / split / name)
        lines = [yolo_line(index[b.label], b, sample.width, sample.height) for b in sample.boxes]
        _write_text(out / "labels" / split / f"{Path(name).stem}.txt", "".join(f"{line}\n" for line in lines))
        count += 1
    _write_text(out / "classes.txt", "".join(f"{n}\n" for n in labels))
    names = "".join(f"  {i}: {json.dumps(n, ensure_ascii=False)}\n" for i, n in enumerate(labels))
    lists = "".join(f"{s}: images/{s}\n" for s in ("train", "val", "test") if s in splits)
    _write_text(out / "data.yaml", f"path: .\n{lists}nc: {len(labels)}\nnames:\n{names}")
    return count, 2 * count + 2


def _cvat(store, project, out: Path, samples) -> tuple[int, int]:
    """``annotations.xml`` (CVAT for images 1.1, the split as each image's subset) and ``images/``."""
    namer, entries = _Namer(), []
    for sample in samples:
        name = f"images/{namer(sample)}"
        _copy(sample, out / name)
        tags = [] if project.target == "boxes" else sample.labels
        entries.append((name, sample.width, sample.height, sample.split, sample.boxes, tags))
    _write_text(out / "annotations.xml", cvat_document(entries, store.labels(project)))
    return len(entries), len(entries) + 1


def _by_split_folder(out: Path, samples, write_folder) -> tuple[int, int]:
    """Photos copied into ``<split>/`` folders (``valid`` for val, as Roboflow and Create ML name it),
    then ``write_folder(folder, [(name, sample)])`` writes each folder's annotation file."""
    folders: dict[str, list] = {}
    namer, count = _Namer(), 0
    for sample in samples:
        folder = {"val": "valid", None: "unassigned"}.get(sample.split, sample.split)
        name = namer(sample)
        _copy(sample, out / folder / name)
        folders.setdefault(folder, []).append((name, sample))
        count += 1
    for folder, entries in folders.items():
        write_folder(out / folder, entries)
    return count, count + len(folders)


def _createml(store, project, out: Path, samples) -> tuple[int, int]:
    """``<split>/annotations.json`` (Create ML, centre-based boxes) beside each split's photos."""
    return _by_split_folder(
        out,
        samples,
        lambda folder, entries: _write_text(
            folder / "annotations.json", createml_document([(n, s.boxes) for n, s in entries])
        ),
    )


def _multiclass(store, project, out: Path, samples) -> tuple[int, int]:
    """``<split>/_classes.csv`` (Roboflow multiclass: one 0/1 column per class) beside the photos."""
    labels = store.labels(project)
    return _by_split_folder(
        out,
        samples,
        lambda folder, entries: _write_text(
            folder / TABLE_NAME, multiclass_table([(n, s.labels) for n, s in entries], labels)
        ),
    )


def _labelme(store, project, out: Path, samples) -> tuple[int, int]:
    """One LabelMe JSON beside each photo, in ``<split>/`` folders (LabelMe itself has no splits)."""

    def write_folder(folder: Path, entries) -> None:
        for name, s in entries:
            tags = [] if project.target == "boxes" else s.labels
            document = labelme_document(name, s.width, s.height, s.boxes, tags)
            _write_text(folder / f"{Path(name).stem}.json", document)

    count, _files = _by_split_folder(out, samples, write_folder)
    return count, 2 * count


def _labelstudio(store, project, out: Path, samples) -> tuple[int, int]:
    """Label Studio JSON, one file per split (``train.json``...) over ``images/``."""
    namer, count = _Namer(), 0
    parts: dict[str, list[tuple]] = {}
    for sample in samples:
        name = f"images/{namer(sample)}"
        _copy(sample, out / name)
        tags = [] if project.target == "boxes" else sample.labels
        entry = (name, sample.width, sample.height, sample.boxes, tags)
        parts.setdefault(_split_of(sample), []).append(entry)
        count += 1
    for split, entries in parts.items():
        _write_text(out / f"{split}.json", labelstudio_document(entries, project.target))
    return count, count + len(parts)
