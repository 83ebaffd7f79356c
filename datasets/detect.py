"""Recognising what a path holds: which importer reads it and whether it holds images or sounds."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .csvpaths import table_media
from .verify import media_kind

#: Formats import_path understands; "folder" is folder-per-class, "flat" is unlabeled media files.
FORMATS = ("folder", "flat", "voc", "coco", "yolo", "csv", "jsonl", "txt", "zip", "inspection")
_IGNORED_NAMES = {"thumbs.db", "desktop.ini", "__macosx"}
_TEXT_TABLE_EXTS = {".csv", ".tsv"}
_JSONL_EXTS = {".jsonl", ".ndjson"}


def is_hidden(name: str) -> bool:
    """Names the importers skip silently (dot files, OS metadata)."""
    return name.startswith(".") or name.lower() in _IGNORED_NAMES


def iter_files(root: Path) -> Iterator[Path]:
    """Every non-hidden regular file under ``root``, in sorted, deterministic order (no symlinks)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not is_hidden(d))
        for name in sorted(files):
            path = Path(folder, name)
            if not is_hidden(name) and not path.is_symlink():
                yield path


@dataclass
class Scan:
    """What a quick look at a path found."""

    format: str
    media: str | None  # "image", "audio", "text" (a folder of .txt files) or None (a table, or nothing)
    root: Path


def _is_coco(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 20)
        if path.stat().st_size > len(head):  # too big to parse just to look: trust the keys in the head
            return b'"images"' in head or b'"annotations"' in head
        data = json.loads(head)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "images" in data and "annotations" in data


def _is_voc(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b"<annotation" in head


def _is_yolo_txt(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            lines = handle.read(4096).decode("utf-8", "replace").splitlines()
    except OSError:
        return False
    for line in lines:
        parts = line.split()
        if parts:
            try:
                int(parts[0]), [float(v) for v in parts[1:5]]
            except ValueError:
                return False
            return len(parts) >= 5
    return True  # an empty label file: an image without objects


def _majority(kinds: dict) -> str | None:
    if not kinds:
        return None
    return max(sorted(kinds), key=lambda k: kinds[k])


def scan(path) -> Scan:
    """Look at ``path`` (a folder or a file) and say which importer fits.

    Raises ValueError("no supported files found in ...") when nothing importable is there.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if path.is_file():
        ext = path.suffix.lower()
        if ext == ".zip":
            return Scan("zip", None, path)
        if ext in _TEXT_TABLE_EXTS:
            return Scan("csv", table_media(path), path)
        if ext in _JSONL_EXTS:
            return Scan("jsonl", None, path)
        if ext == ".txt":
            return Scan("txt", None, path)
        if ext == ".json" and _is_coco(path):
            return Scan("coco", "image", path)
        if ext == ".xml" and _is_voc(path):
            return Scan("voc", "image", path)
        kind = media_kind(ext)
        if kind:
            return Scan("flat", kind, path)
        raise ValueError(
            f"no supported files found in {path} (unknown file type {ext or 'without extension'})"
        )
    root_media: dict[str, int] = {}
    sub_media: dict[str, int] = {}
    xml = json_files = txt = 0
    texts = {"root": 0, "sub": 0}
    tables, jsonl = [], []
    sub_files: list[Path] = []
    yolo_names = False
    coco = voc = False
    for file in iter_files(path):
        ext = file.suffix.lower()
        name = file.name.lower()
        at_root = file.parent == path
        kind = media_kind(ext)
        if kind and not at_root:
            sub_files.append(file)
        if kind:
            target = root_media if at_root else sub_media
            target[kind] = target.get(kind, 0) + 1
        elif ext == ".xml":
            xml += 1
            voc = voc or (xml <= 3 and _is_voc(file))
        elif ext == ".json":
            json_files += 1
            coco = coco or (json_files <= 5 and _is_coco(file))
        elif name in ("classes.txt", "obj.names", "data.yaml", "dataset.yaml") or ext == ".names":
            yolo_names = True
        elif ext == ".txt":
            txt += 1 if txt or _is_yolo_txt(file) else 0
            texts["root" if at_root else "sub"] += 1
        elif ext in _TEXT_TABLE_EXTS and at_root:
            tables.append(file)
        elif ext in _JSONL_EXTS and at_root:
            jsonl.append(file)
    media = _majority(
        {k: root_media.get(k, 0) + sub_media.get(k, 0) for k in set(root_media) | set(sub_media)}
    )
    if coco:
        return Scan("coco", "image", path)
    if voc:
        return Scan("voc", "image", path)
    if yolo_names and txt:
        return Scan("yolo", "image", path)
    class_dirs = {f.relative_to(path).parts[0] for f in sub_files}
    if sub_media and len(class_dirs) == 1:  # an exported "files/" folder listed by a table?
        for table in tables:
            listed = table_media(table)
            if listed:
                return Scan("csv", listed, path)
    if sub_media and media == "image":
        from .anomaly_folders import is_inspection_folder

        if is_inspection_folder(path):  # good/ + defect/<kind>/ (+ masks/): anomaly detection's layout
            return Scan("inspection", "image", path)
    if sub_media:
        return Scan("folder", media, path)
    if root_media:
        return Scan("flat", media, path)
    if tables:
        return Scan("csv", next((m for m in map(table_media, tables) if m), None), path)
    if jsonl:
        return Scan("jsonl", None, path)
    if texts["sub"]:  # a folder per class of .txt files, one text per file
        return Scan("folder", "text", path)
    if texts["root"]:
        return Scan("flat", "text", path)
    raise ValueError(f"no supported files found in {path}")


def detect_format(path) -> str:
    """The importer ``format="auto"`` would use for ``path``: one of :data:`FORMATS`."""
    return scan(path).format
