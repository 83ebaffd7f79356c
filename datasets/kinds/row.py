"""Table rows: one sample is a row of named cells, kept in its database row as JSON; imported from CSV,
TSV, Excel ``.xlsx`` or Parquet tables (``datasets/table_files.py``), the target column as its label."""

from __future__ import annotations

from pathlib import Path

from . import SampleKind


def _words(text: str) -> str:
    from ..table_files import parse_row

    return "; ".join(
        f"{column}: {'' if value is None else value}" for column, value in parse_row(text).items()
    )


def _thumbnail(sample, dest: Path, size: int) -> Path:
    from ..thumbs import text_thumbnail

    if sample.text is None:
        raise ValueError(f"sample {sample.id} has no row: no thumbnail")
    return dest if dest.exists() else text_thumbnail(_words(sample.text), dest, size)


def _read_table(path: Path, report, text_column, label_column, multi: bool):
    from ..table_files import read_tables

    return read_tables(path, report, label_column)


def _write_table(store, project, folder: Path, samples) -> int:
    from ..table_files import write_rows

    return write_rows(store, project, folder / "data.csv", samples)


def _read_folder(path: Path, report):
    from ..table_files import read_tables

    return read_tables(path, report, None)


ROW = SampleKind(
    "row",
    "row",
    "rows",
    "a table row",
    inline=True,
    thumbnail=_thumbnail,
    read_folders=_read_folder,
    read_table=_read_table,
    columns=True,
    write_table=_write_table,
)
