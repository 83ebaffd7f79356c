"""The inspection folder layout: ``good/``, ``defect/<kind>/`` and optional ``masks/<photo stem>.png``.

Also spelled ``ok``/``normal`` for good parts and ``ng``/``bad``/``defects`` for defects. Photos
under ``good/`` get the label ``good``; those under ``defect/<kind>/`` the label ``<kind>`` (or
``defect`` when they lie directly in ``defect/``). Masks are not samples: :func:`mask_files` finds
them for the photos that have one.
"""

from __future__ import annotations

from pathlib import Path

from .detect import is_hidden, iter_files
from .folders import _ignored_note
from .items import ImportReport, Item
from .verify import media_kind

GOOD_DIRS = ("good", "ok", "normal")
DEFECT_DIRS = ("defect", "defects", "ng", "bad")
MASK_DIRS = ("masks", "mask", "ground_truth")
GOOD_LABEL, DEFECT_LABEL = "good", "defect"


def _subdirs(root: Path) -> dict[str, Path]:
    return {p.name.lower(): p for p in root.iterdir() if p.is_dir() and not is_hidden(p.name)}


def is_inspection_folder(root) -> bool:
    """Whether ``root`` holds a good-parts folder next to a masks folder or a defect folder of kinds
    (``defect/<kind>/``; a plain ``good/`` + ``bad/`` of photos stays a folder per class)."""
    root = Path(root)
    if not root.is_dir():
        return False
    dirs = _subdirs(root)
    if not set(dirs) & set(GOOD_DIRS):
        return False
    if set(dirs) & set(MASK_DIRS):
        return True
    return any(
        any(p.is_dir() and not is_hidden(p.name) for p in dirs[name].iterdir())
        for name in DEFECT_DIRS
        if name in dirs
    )


def read_inspection_folder(root: Path, report: ImportReport, kind: str) -> tuple[int, list[Item]]:
    """Items for every photo under the good and defect folders (masks and other folders are skipped)."""
    items, ignored = [], []
    dirs = _subdirs(root)
    for name, folder in sorted(dirs.items()):
        if name in MASK_DIRS:
            continue
        if name not in GOOD_DIRS + DEFECT_DIRS:
            ignored.append(f"{folder.name}/")
            continue
        for file in iter_files(folder):
            rel = file.relative_to(root)
            if media_kind(file.suffix.lower()) != kind:
                ignored.append(rel.as_posix())
                continue
            if name in GOOD_DIRS:
                label = GOOD_LABEL
            else:
                label = rel.parts[1] if len(rel.parts) > 2 else DEFECT_LABEL
            items.append(Item(source=rel.as_posix(), path=file, labels=[label]))
    _ignored_note(report, root, ignored, kind)
    return len(items), items


def mask_files(root, sources) -> dict:
    """``{source: mask path}`` for the photo sources (paths relative to ``root``) with a mask file
    ``masks/<stem>.png`` (white = defect)."""
    root = Path(root)
    folder = (
        next((p for name, p in _subdirs(root).items() if name in MASK_DIRS), None) if root.is_dir() else None
    )
    if folder is None:
        return {}
    by_stem = {p.stem: p for p in folder.iterdir() if p.is_file() and media_kind(p.suffix.lower()) == "image"}
    return {source: by_stem[Path(source).stem] for source in sources if Path(source).stem in by_stem}
