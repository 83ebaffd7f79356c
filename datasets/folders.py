"""Readers for plain folders: folder-per-class (``<label>/<file>``, or ImageNet's
``<split>/<label>/<file>``) and flat folders of unlabeled files."""

from __future__ import annotations

from pathlib import Path

from .detect import iter_files
from .items import ImportReport, Item
from .limits import split_from_name
from .verify import media_kind


def refuse_special(report: ImportReport, root: Path):
    """The ``on_special`` of :func:`~.detect.iter_files`: a failed entry naming the pipe or device."""
    return lambda path, problem: report.fail(path.relative_to(root).as_posix(), problem)


def _ignored_note(report: ImportReport, root: Path, ignored: list[str], kind: str) -> None:
    if ignored:
        shown = ", ".join(ignored[:5]) + (f" and {len(ignored) - 5} more" if len(ignored) > 5 else "")
        report.warn(f"ignored {len(ignored)} file(s) in {root} that are not {kind} files: {shown}")


def read_class_folders(root: Path, report: ImportReport, kind: str) -> tuple[int, list[Item]]:
    """``root/<label>/.../<file>``: the first folder level names the class.

    Media files directly in ``root`` are imported unlabeled; other files (``labels.csv``, notes) are
    ignored with one warning. Files of the other media kind (a sound in an image project) are too.
    """
    items, ignored = [], []
    by_split = _split_folders(root)
    if by_split:
        report.warn(
            f"{root}: the folders {', '.join(by_split)} are kept as the splits; the folders in them are the classes"
        )
    for file in iter_files(root, refuse_special(report, root)):
        rel = file.relative_to(root)
        if media_kind(file.suffix.lower()) != kind:
            ignored.append(rel.as_posix())
            continue
        parts = rel.parts[1:] if by_split and len(rel.parts) > 1 else rel.parts
        labels = [parts[0]] if len(parts) > 1 else []
        split = split_from_name(rel.parts[0]) if by_split and len(rel.parts) > 1 else None
        items.append(Item(source=rel.as_posix(), path=file, labels=labels, split=split))
    _ignored_note(report, root, ignored, kind)
    return len(items), items


def _split_folders(root: Path) -> list[str]:
    """The top folders when every one is a split (``train``, ``val``...) holding class folders (ImageNet's
    layout), else []."""
    if not root.is_dir():
        return []
    tops = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not tops or not all(split_from_name(name) for name in tops):
        return []
    nested = all(any(q.is_dir() for q in (root / name).iterdir()) for name in tops)
    return tops if nested else []


def read_flat(root: Path, report: ImportReport, kind: str) -> tuple[int, list[Item]]:
    """Unlabeled media: a single file, or every media file of ``kind`` under a folder."""
    if root.is_file():
        return 1, [Item(source=root.name, path=root)]
    items, ignored = [], []
    for file in iter_files(root, refuse_special(report, root)):
        rel = file.relative_to(root).as_posix()
        if media_kind(file.suffix.lower()) == kind:
            items.append(Item(source=rel, path=file))
        else:
            ignored.append(rel)
    _ignored_note(report, root, ignored, kind)
    return len(items), items
