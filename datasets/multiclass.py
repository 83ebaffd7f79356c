"""Roboflow's "multiclass classification" CSV: ``_classes.csv`` in each split folder, a ``filename``
column then one 0/1 column per class (``filename, cat, dog``)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from .detect import iter_files
from .items import ImportReport, Item
from .limits import MAX_CLASSES, check_count, split_from_name
from .locate import ImageIndex

TABLE_NAME = "_classes.csv"


def read_multiclass(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every row of the ``_classes.csv`` table(s) under ``root``, tagged with their 1 columns."""
    base = root.parent if root.is_file() else root
    tables = [root] if root.is_file() else [p for p in iter_files(root) if p.name.lower() == TABLE_NAME]
    index = ImageIndex(base)
    items: list[Item] = []
    for table in tables:
        name = table.relative_to(base).as_posix()
        split = split_from_name(table.parent.name)
        with table.open(encoding="utf-8-sig", newline="") as handle:
            rows = csv.reader(handle)
            header = [h.strip() for h in next(rows, [])]
            try:
                check_count(len(header) - 1, MAX_CLASSES, "class columns")
            except ValueError as exc:
                items.append(Item(source=name, error=f"{name}: {exc}"))
                continue
            if len(header) < 2 or header[0].lower() not in ("filename", "file", "image", "path"):
                items.append(
                    Item(
                        source=name,
                        error=f"{name} is not a Roboflow multiclass table: its first "
                        "column is not filename, or it has no class columns",
                    )
                )
                continue
            classes = header[1:]
            for number, row in enumerate(rows, 2):
                if not row or not row[0].strip():
                    continue
                values = [v.strip() for v in row[1:]]
                if len(values) != len(classes) or any(v not in ("0", "1") for v in values):
                    items.append(
                        Item(
                            source=row[0],
                            error=f"{name} line {number}: expected a 0 or 1 for each of "
                            f"the {len(classes)} classes",
                        )
                    )
                    continue
                path = index.find(row[0], near=table.parent)
                if path is None:
                    items.append(Item(source=row[0].strip(), error=f"image listed in {name} was not found"))
                    continue
                tags = [c for c, v in zip(classes, values) if v == "1"]
                items.append(Item(source=index.source(path), path=path, labels=tags, split=split))
    return len(items), items


def multiclass_table(rows, classes: list[str]) -> str:
    """A ``_classes.csv``: ``rows`` are (file name, tags); one 0/1 column per class."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["filename", *classes])
    for name, tags in rows:
        writer.writerow([name, *(int(c in tags) for c in classes)])
    return buffer.getvalue()
