"""Recognising what a path holds: which importer reads it and whether it holds images or sounds."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .csvpaths import table_media
from .safety import special_file_problem
from .verify import media_kind

#: Formats import_path understands; "folder" is folder-per-class, "flat" is unlabeled media files.
FORMATS = (
    "folder",
    "flat",
    "voc",
    "coco",
    "yolo",
    "cvat",
    "labelme",
    "labelstudio",
    "createml",
    "multiclass",
    "csv",
    "jsonl",
    "txt",
    "zip",
    "inspection",
    "masks",
)
_IGNORED_NAMES = {"thumbs.db", "desktop.ini", "__macosx"}
_TEXT_TABLE_EXTS = {".csv", ".tsv"}
_JSONL_EXTS = {".jsonl", ".ndjson"}


def is_hidden(name: str) -> bool:
    """Names the importers skip silently (dot files, OS metadata)."""
    return name.startswith(".") or name.lower() in _IGNORED_NAMES


def iter_files(root: Path, on_special: Callable[[Path, str], None] | None = None) -> Iterator[Path]:
    """Every non-hidden regular file under ``root``, in sorted, deterministic order (no symlinks).

    Named pipes, devices and sockets are never yielded (opening one can block for good);
    ``on_special(path, reason)`` hears of each.
    """
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not is_hidden(d))
        for name in sorted(files):
            path = Path(folder, name)
            if is_hidden(name) or path.is_symlink():
                continue
            problem = special_file_problem(path)
            if problem is None:
                yield path
            elif on_special is not None:
                on_special(path, problem)


@dataclass
class Scan:
    """What a quick look at a path found."""

    format: str
    media: str | None  # "image", "audio", "text" (a folder of .txt files) or None (a table, or nothing)
    root: Path


def looks_like_coco(path: Path) -> bool:
    """Whether ``path`` starts like a COCO file: a JSON object naming an ``images`` list.

    Only the first MiB is looked at and nothing is parsed, so a COCO file the reader must refuse (a
    5,000-digit number, nesting 100,000 deep) is still taken for COCO and refused with a reason,
    never mistaken for a plain folder with its boxes dropped.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        return False
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    return start == b"{" and b'"images"' in head and (b'"annotations"' in head or len(head) == 1 << 20)


def _head(path: Path, size: int = 1 << 20) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def sniff_json(path: Path) -> str | None:
    """Which labeling tool's JSON ``path`` looks like, from its first MiB (nothing is parsed):
    "coco", "labelme", "labelstudio", "createml" or None."""
    head = _head(path)
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if start == b"{":
        if looks_like_coco(path):
            return "coco"
        if b'"shapes"' in head and b'"imagePath"' in head:
            return "labelme"
    elif start == b"[":
        if any(key in head for key in (b'"result"', b'"annotation_id"', b'"annotator"', b'"data"')):
            return "labelstudio"
        if b'"image"' in head and b'"annotations"' in head:  # Create ML; a photo without boxes too
            return "createml"
    return None


def looks_like_labelme(path: Path) -> bool:
    """Whether ``path`` starts like a LabelMe file (an object with ``shapes`` and ``imagePath``)."""
    return sniff_json(path) == "labelme"


def _xml_kind(path: Path) -> str | None:
    """ "cvat" (``<annotations>``), "voc" (``<annotation>``) or None."""
    head = _head(path, 4096)
    if re.search(rb"<annotations[\s>]", head):
        return "cvat"
    if re.search(rb"<annotation[\s>]", head):
        return "voc"
    return None


def _is_voc(path: Path) -> bool:
    return _xml_kind(path) == "voc"


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
    problem = None if path.is_dir() else special_file_problem(path)
    if problem:
        raise ValueError(f"{path}: {problem}")
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
        if ext == ".json" and sniff_json(path):
            return Scan(sniff_json(path), _json_media(path), path)  # type: ignore[arg-type]
        if ext == ".xml" and _xml_kind(path):
            return Scan(_xml_kind(path), "image", path)  # type: ignore[arg-type]
        if path.name.lower() == "_classes.csv":
            return Scan("multiclass", "image", path)
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
    found: set[str] = set()
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
            found.add((xml <= 3 and _xml_kind(file)) or "")
        elif ext == ".json":
            json_files += 1
            found.add((json_files <= 5 and sniff_json(file)) or "")
        elif name == "_classes.csv":
            found.add("multiclass")
        elif name in ("classes.txt", "obj.names", "obj.data", "data.yaml", "dataset.yaml") or ext == ".names":
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
    for fmt in ("coco", "cvat", "voc", "labelstudio", "createml", "labelme", "multiclass"):
        if fmt in found:
            return Scan(fmt, _json_media(path) if fmt == "labelstudio" else "image", path)
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
        from .seg_folders import is_mask_folder

        if is_mask_folder(path):  # train/ + trainannot/, images/ + masks/: segmentation's layout
            return Scan("masks", "image", path)
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


def _json_media(path: Path) -> str:
    """ "text" for a Label Studio export of texts, else "image"."""
    if path.is_dir():
        path = next((f for f in iter_files(path) if f.suffix.lower() == ".json" and sniff_json(f)), path)
    head = _head(path) if path.is_file() else b""
    return "text" if b'"text"' in head and b'"image"' not in head else "image"


def detect_format(path) -> str:
    """The importer ``format="auto"`` would use for ``path``: one of :data:`FORMATS`."""
    return scan(path).format
