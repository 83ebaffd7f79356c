"""``export_project``: write a project's data in a standard format another tool (or ModelDesk) reads.

Formats: ``folder`` (media in one folder per class, unlabeled media at the top; text as ``data.csv``),
``csv`` (``text,label`` for text, ``path,label`` for media, one row per box for detection), ``voc``,
``coco`` and ``yolo`` (detection). Media files are copied byte for byte; names come from the original
file names, made unique with a piece of the content hash where two collide.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from .coco import coco_document
from .kinds import sample_kind
from modeldesk.fileio import atomic_open, atomic_write
from .records import Sample
from .safety import escape_cell
from .store import Store
from .voc import voc_xml
from .yolo import yolo_line

EXPORT_FORMATS = ("folder", "csv", "voc", "coco", "yolo")
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
    if format in ("voc", "coco", "yolo") and not detection:
        raise ValueError(
            f"{format.upper()} export is for projects with boxes; project "
            f"{project.name!r} is {project.task}: use folder or csv"
        )
    if format == "folder" and detection:
        raise ValueError(
            f"project {project.name!r} has boxes, which a folder per class cannot hold; "
            "use voc, coco, yolo or csv"
        )
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty; export into a new or empty folder")
    total = store.stats(project)["samples"]
    writer = {"folder": _folder, "csv": _csv, "voc": _voc, "coco": _coco, "yolo": _yolo}[format]
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
    with atomic_open(dest, "wb") as handle, open(sample.path, "rb") as source:
        shutil.copyfileobj(source, handle)


def _write_text(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


def _atomic_open(path: Path):
    """A text file written under a temporary name and renamed into place when complete."""
    return atomic_open(path, "w", encoding="utf-8", newline="")


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
        return _write_text_csv(out, samples)
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
        return _write_text_csv(out, samples)
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


def _voc(store, project, out: Path, samples) -> tuple[int, int]:
    namer, count = _Namer(), 0
    for sample in samples:
        name = namer(sample)
        _copy(sample, out / "JPEGImages" / name)
        xml = voc_xml(name, sample.width, sample.height, sample.boxes)
        _write_text(out / "Annotations" / f"{Path(name).stem}.xml", xml)
        count += 1
    return count, 2 * count


def _coco(store, project, out: Path, samples) -> tuple[int, int]:
    labels = store.labels(project)
    category = {name: i + 1 for i, name in enumerate(labels)}
    namer, images, annotations = _Namer(), [], []
    for sample in samples:
        name = namer(sample)
        _copy(sample, out / "images" / name)
        image_id = len(images) + 1
        images.append({"id": image_id, "file_name": name, "width": sample.width, "height": sample.height})
        for b in sample.boxes:
            w, h = b.x1 - b.x0, b.y1 - b.y0
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image_id,
                    "category_id": category[b.label],
                    "bbox": [b.x0, b.y0, w, h],
                    "area": w * h,
                    "iscrowd": 0,
                }
            )
    _write_text(out / "annotations.json", coco_document(images, annotations, labels))
    return len(images), len(images) + 1


def _yolo(store, project, out: Path, samples) -> tuple[int, int]:
    labels = store.labels(project)
    index = {name: i for i, name in enumerate(labels)}
    (out / "labels").mkdir()
    namer, count = _Namer(), 0
    for sample in samples:
        name = namer(sample)
        _copy(sample, out / "images" / name)
        lines = [yolo_line(index[b.label], b, sample.width, sample.height) for b in sample.boxes]
        _write_text(out / "labels" / f"{Path(name).stem}.txt", "".join(f"{line}\n" for line in lines))
        count += 1
    _write_text(out / "classes.txt", "".join(f"{n}\n" for n in labels))
    names = "".join(f"  {i}: {json.dumps(n, ensure_ascii=False)}\n" for i, n in enumerate(labels))
    _write_text(out / "data.yaml", f"path: .\ntrain: images\nval: images\nnc: {len(labels)}\nnames:\n{names}")
    return count, 2 * count + 2
