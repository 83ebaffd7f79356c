"""Readers for plain folders: folder-per-class (``<label>/<file>``) and flat folders of unlabeled files."""

from __future__ import annotations

from pathlib import Path

from .detect import iter_files
from .items import ImportReport, Item
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
    for file in iter_files(root, refuse_special(report, root)):
        rel = file.relative_to(root)
        if media_kind(file.suffix.lower()) != kind:
            ignored.append(rel.as_posix())
            continue
        labels = [rel.parts[0]] if len(rel.parts) > 1 else []
        items.append(Item(source=rel.as_posix(), path=file, labels=labels))
    _ignored_note(report, root, ignored, kind)
    return len(items), items


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
