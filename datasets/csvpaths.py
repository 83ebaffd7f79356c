"""CSV tables that list media files: ``path,label`` (classification; ``a;b`` for several tags) or one
row per box with ``xmin,ymin,xmax,ymax`` (detection), paths relative to the table's folder.

This is what ``export_project(..., "csv")`` writes for image and sound projects, so it reads back.
"""

from __future__ import annotations

import csv
from collections import OrderedDict
from pathlib import Path, PurePosixPath

from .csvtext import LABEL_COLUMNS, find_column, sniff_encoding, sniff_header
from .items import ImportReport, Item
from .records import Box
from .safety import special_file_problem, unescape_cell
from .verify import media_kind

PATH_COLUMNS = ("path", "file", "filename", "file_name", "image", "image_path", "audio", "filepath")
_BOX_COLUMNS = ("xmin", "ymin", "xmax", "ymax")


def table_media(path: Path) -> str | None:
    """``"image"``/``"audio"`` when ``path`` is a table whose first row names such a file, else None."""
    try:
        encoding = sniff_encoding(path, ImportReport())
        delimiter, columns, _ = sniff_header(
            path, encoding, lambda cols: find_column(cols, None, PATH_COLUMNS) is not None
        )
        if columns is None:
            return None
        with path.open("r", encoding=encoding, newline="") as handle:
            reader = csv.reader(handle, delimiter=delimiter)
            next(reader, None)
            row = next(reader, None)
    except (ValueError, OSError, csv.Error):
        return None
    index = find_column(columns, None, PATH_COLUMNS)
    assert index is not None  # sniff_header accepted these columns for having it
    if not row or index >= len(row):
        return None
    return media_kind(PurePosixPath(row[index].strip()).suffix.lower())


def _resolve(table: Path, value: str) -> Path | None:
    """The file a row names, inside the table's folder; None for a path (or a link) that leads out."""
    rel = PurePosixPath(value.strip().replace("\\", "/"))
    if not value.strip() or rel.is_absolute() or ".." in rel.parts:
        return None
    target = table.parent.joinpath(*rel.parts)
    folder = table.parent.resolve()
    if not target.resolve().is_relative_to(folder):  # a symlink (of the file or a folder) pointing out
        return None
    return target


def read_path_table(
    table: Path, report: ImportReport, *, label_column: str | None = None, multi: bool = False
) -> tuple[int, list[Item]]:
    """Items for the files a table lists; rows of the same file are merged (tags or boxes).

    With ``multi`` a label cell ``a;b`` gives two tags (multi-label projects).
    """
    encoding = sniff_encoding(table, report)
    delimiter, columns, best = sniff_header(
        table, encoding, lambda cols: find_column(cols, None, PATH_COLUMNS) is not None
    )
    if columns is None:
        raise ValueError(
            f"{table.name}: no file path column ({', '.join(PATH_COLUMNS[:4])}, ...) found; "
            f"the columns are: {', '.join(repr(c) for c in best)}"
        )
    path_i = find_column(columns, None, PATH_COLUMNS)
    assert path_i is not None  # sniff_header accepted these columns for having it
    label_i = find_column(columns, label_column, LABEL_COLUMNS)
    box_i = [i for i in (find_column(columns, None, (name,)) for name in _BOX_COLUMNS) if i is not None]
    has_boxes = len(box_i) == len(_BOX_COLUMNS)
    entries: OrderedDict[str, Item] = OrderedDict()
    with table.open("r", encoding=encoding, newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        next(reader, None)
        for row in reader:
            if not any(cell.strip() for cell in row) or path_i >= len(row):
                continue
            value = row[path_i].strip()
            item = entries.get(value)
            if item is None:
                target = _resolve(table, value)
                problem = (
                    f"unsafe path in {table.name} (it leads outside the table's folder)"
                    if target is None
                    else f"listed in {table.name} but not found"
                    if not target.exists()
                    else special_file_problem(target)
                )
                if problem:
                    entries[value] = Item(source=value, error=problem)
                    continue
                item = entries[value] = Item(source=value, path=target, boxes=[] if has_boxes else None)
            if item.error:
                continue
            label = unescape_cell(row[label_i].strip()) if label_i is not None and label_i < len(row) else ""
            if has_boxes:
                cells = [row[i].strip() if i < len(row) else "" for i in box_i]
                if label and all(cells):
                    assert item.boxes is not None  # items of a table with box columns start with boxes=[]
                    try:
                        item.boxes.append(Box(label, *(float(c) for c in cells)))
                    except ValueError:
                        report.warn(f"{table.name} line {reader.line_num}: box coordinates are not numbers")
            elif label:
                for tag in (x.strip() for x in label.split(";")) if multi else [label]:
                    if tag and tag not in item.labels:
                        item.labels.append(tag)
    items = list(entries.values())
    return len(items), items
