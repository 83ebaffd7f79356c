"""Sample kinds (what one sample is: an image, a sound clip, a text), as a registry.

Each kind is one module of this package holding a :class:`SampleKind`: how its files are verified and
stored, how its samples are imported from a folder or a CSV table, how a thumbnail is drawn, what a
trainer gets as a sample's source. The importer, the store, the exporter and the app ask this registry;
none of them tests a kind's name. The deploy side has its own registry (``deploy/inputs.py``) and the
UI its own (``ui/kinds.py``), keyed by the same names.

A new kind is one module here and one line in ``SAMPLE_KINDS``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: kind name -> ".module:attribute" (relative to this package); loaded on first use
SAMPLE_KINDS = {
    "image": ".image:IMAGE",
    "audio": ".audio:AUDIO",
    "text": ".text:TEXT",
    "row": ".row:ROW",
}


@dataclass(frozen=True)
class SampleKind:
    """What the data layer needs to know about one kind of sample.

    Attributes
    ----------
    name : the kind's name (the project's ``kind`` column, the card's ``preprocessing["kind"]``).
    one, many : what one sample and several are called in messages ("image", "images").
    article : the noun with its article, for "not an image file".
    inline : True when the sample lives in its database row (a text), False when it is a media file.
    pictures : True when a sample is a picture (the photo-only export formats take it).
    extensions : the lower-case file name endings of this kind's media files (".jpg"); a file with
        one of them is this kind's, also when it is then refused (an MP3 is a sound, not supported).
    verify : (bytes or path, extension) -> (stored extension, width, height, duration); raises
        MediaError when the file cannot be used. None for inline kinds.
    thumbnail : (sample, destination, size) -> the thumbnail's path.
    read_folders : (folder, report) -> (count, items), for a folder of class folders of this kind;
        None when the generic media reader (``datasets/folders.py``) does it.
    read_table : (path, report, text_column, label_column, multi) -> (count, items), for a CSV of this
        kind; None when the generic table of file paths (``datasets/csvpaths.py``) does it.
    columns : True when a sample is a row of named columns and its label one of them: the project
        remembers which column it predicts (``app/tables.py``).
    write_table : (store, project, folder, samples) -> count, writing ``folder/data.csv`` for the csv
        and folder exports of an inline kind; None: a ``text,label`` table.
    """

    name: str
    one: str
    many: str
    article: str
    inline: bool = False
    pictures: bool = False
    extensions: frozenset = frozenset()
    verify: Callable | None = None
    thumbnail: Callable | None = None
    read_folders: Callable | None = None
    read_table: Callable | None = None
    columns: bool = False
    write_table: Callable | None = None

    def source(self, sample) -> str | None:
        """What a trainer or a predictor reads for ``sample``: its text, or its media file's path."""
        if self.inline:
            return sample.text
        return str(sample.path) if sample.path is not None else None


_loaded: dict[str, SampleKind] = {}


def sample_kind(name: str | None) -> SampleKind:
    """The registered kind called ``name`` (``"image"`` when None); ValueError for an unknown one."""
    name = name or "image"
    if name not in _loaded:
        if name not in SAMPLE_KINDS:
            raise ValueError(f"unknown kind of sample {name!r}; choose one of: {', '.join(SAMPLE_KINDS)}")
        module, _, attribute = SAMPLE_KINDS[name].partition(":")
        _loaded[name] = getattr(importlib.import_module(module, __name__), attribute)
    return _loaded[name]


def thumbnail(sample, dest: Path, size: int) -> Path:
    """The kind's thumbnail of ``sample`` at ``dest`` (made once: an existing file is kept)."""
    kind = sample_kind(sample.kind)
    if kind.thumbnail is None:
        raise ValueError(f"sample {sample.id} is {sample.kind}: no thumbnail")
    return kind.thumbnail(sample, dest, size)
