"""Text samples: the text lives in the sample's row; imported from text folders, CSV, JSONL or TXT."""

from __future__ import annotations

from pathlib import Path

from . import SampleKind


def _thumbnail(sample, dest: Path, size: int) -> Path:
    from ..thumbs import text_thumbnail

    if sample.text is None:
        raise ValueError(f"sample {sample.id} has no text: no thumbnail")
    return dest if dest.exists() else text_thumbnail(sample.text, dest, size)


def _read_folders(path: Path, report):
    from ..textfiles import read_text_folders

    return read_text_folders(path, report)


def _read_table(path: Path, report, text_column, label_column, multi: bool):
    from ..csvtext import read_csv

    return read_csv(path, report, text_column=text_column, label_column=label_column)


TEXT = SampleKind(
    "text",
    "text",
    "texts",
    "a text",
    inline=True,
    thumbnail=_thumbnail,
    read_folders=_read_folders,
    read_table=_read_table,
)
