"""CSV text tables (``text,label``): encoding and delimiter are found, rows are streamed.

Encodings tried: UTF-16 when the file starts with its byte order mark (Excel's "Unicode text", tab
separated), UTF-8 (with or without BOM), then GB18030 (a superset of GBK and GB2312, common for Chinese
files saved by Excel) with a warning naming it; anything else is refused with a clear error.

A cell may hold up to :data:`MAX_CELL_CHARS` characters (the csv module's default limit, 128 KB, would
refuse the row of a long document).
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Iterator
from pathlib import Path

from .items import ImportReport, Item
from .safety import unescape_cell
from .textchecks import check_labels, warn_one_class

TEXT_COLUMNS = (
    "text",
    "sentence",
    "content",
    "review",
    "message",
    "comment",
    "document",
    "body",
    "文本",
    "内容",
    "评论",
    "句子",
)
LABEL_COLUMNS = ("label", "class", "category", "target", "sentiment", "tag", "y", "标签", "类别", "分类")
_DELIMITERS = ",\t;|"
MAX_CELL_CHARS = 16 << 20
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_CHUNK = 1 << 16
_PEEK = 200  # rows read ahead to check the label column


def _decodes(path: Path, encoding: str) -> bool:
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def allow_long_cells() -> None:
    """Let the csv module read cells of up to :data:`MAX_CELL_CHARS` (its limit is process-wide, so it is
    raised when a table is read rather than when this module is imported)."""
    if csv.field_size_limit() < MAX_CELL_CHARS:
        csv.field_size_limit(MAX_CELL_CHARS)


def sniff_encoding(path: Path, report: ImportReport) -> str:
    """``"utf-16"`` (with a byte order mark), ``"utf-8-sig"`` or ``"gb18030"`` (with a warning);
    ValueError for binary or other encodings."""
    allow_long_cells()
    with path.open("rb") as handle:
        head = handle.read(8192)
    if head.startswith(_UTF16_BOMS) and _decodes(path, "utf-16"):  # Excel's "Unicode text"
        return "utf-16"
    if b"\x00" in head:
        raise ValueError(f"{path.name} is not a text file (it holds binary data); save it as CSV text")
    if _decodes(path, "utf-8-sig"):
        return "utf-8-sig"
    if _decodes(path, "gb18030"):
        report.warn(
            f"{path.name} is not UTF-8; read it as GB18030/GBK (Chinese). Check that the text "
            "looks right, or save the file as UTF-8"
        )
        return "gb18030"
    raise ValueError(f"{path.name} is neither UTF-8 nor GBK/GB18030 text; save it as UTF-8 CSV")


def _pick(columns: list[str], wanted: str | None, defaults: tuple[str, ...]) -> int | None:
    folded = [c.strip().lower() for c in columns]
    for name in [wanted] if wanted else defaults:
        if name.strip().lower() in folded:
            return folded.index(name.strip().lower())
    return None


def sniff_header(path: Path, encoding: str, accept) -> tuple[str, list[str] | None, list[str]]:
    """Find the delimiter: the first candidate whose header row ``accept(columns)`` likes.

    Returns (delimiter, columns, best_guess_columns); columns is None when no delimiter was accepted.
    """
    with path.open("r", encoding=encoding, newline="") as handle:
        sample = handle.read(_CHUNK)
    first_line = sample.splitlines()[0] if sample.strip() else ""
    if not first_line:
        raise ValueError(
            f"{path.name} is empty: it holds no header row and no texts; save it with a header "
            "(text,label) and one text a row"
        )
    order = list("\t" if path.suffix.lower() == ".tsv" else "")
    try:
        order.append(csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter)
    except csv.Error:
        pass
    order += [d for d in _DELIMITERS if d not in order]
    best = None
    for delimiter in order:
        columns = next(csv.reader([first_line], delimiter=delimiter))
        if best is None or (len(columns) > 1 and len(best) <= 1):
            best = columns
        if accept(columns):
            return delimiter, columns, columns
    assert best is not None  # order always holds the _DELIMITERS, so the loop ran
    return order[0], None, best


def find_column(columns: list[str], wanted: str | None, defaults: tuple[str, ...]) -> int | None:
    """Index of the ``wanted`` column (or the first of ``defaults``), ignoring case and spaces."""
    return _pick(columns, wanted, defaults)


def table_columns(path: Path) -> list[str] | None:
    """The header row of a CSV/TSV file (or of the one table in a folder); None when it cannot be read."""
    path = Path(path)
    if path.is_dir():
        tables = [p for p in path.iterdir() if p.suffix.lower() in (".csv", ".tsv")]
        if len(tables) != 1:
            return None
        path = tables[0]
    try:
        encoding = sniff_encoding(path, ImportReport())
        _delimiter, _columns, best = sniff_header(path, encoding, lambda cols: len(cols) > 1)
    except (ValueError, OSError):
        return None
    return [c.strip() for c in best]


def _header(path: Path, encoding: str, text_column, label_column):
    delimiter, columns, best = sniff_header(
        path, encoding, lambda cols: _pick(cols, text_column, TEXT_COLUMNS) is not None
    )
    if columns is None:
        found = ", ".join(repr(c) for c in best)
        wanted = (
            repr(text_column) if text_column else "a text column (" + ", ".join(TEXT_COLUMNS[:4]) + ", ...)"
        )
        raise ValueError(
            f"{path.name}: no {wanted} found; the columns are: {found}. "
            "Name the text column (text_column / --text-column)"
        )
    text_i = _pick(columns, text_column, TEXT_COLUMNS)
    return delimiter, columns, text_i, _pick(columns, label_column, LABEL_COLUMNS)


def read_table(path: Path, report: ImportReport, text_column=None, label_column=None) -> Iterator[Item]:
    """Items, one per row of one CSV/TSV file. Problems with the whole file raise ValueError."""
    encoding = sniff_encoding(path, report)
    delimiter, columns, text_i, label_i = _header(path, encoding, text_column, label_column)
    if label_i is None:
        if label_column:
            raise ValueError(
                f"{path.name}: no column {label_column!r}; the columns are: "
                + ", ".join(repr(c) for c in columns)
            )
        report.warn(f"{path.name}: no label column among {', '.join(columns)}; rows import unlabeled")
    else:
        peek = []
        for item in _rows(path, encoding, delimiter, text_i, label_i):
            if item.error is None:
                peek.append((item.text or "", item.labels[0] if item.labels else ""))
            if len(peek) >= _PEEK:
                break
        check_labels(path.name, peek, repr(columns[label_i].strip()))
    return _checked(path.name, _rows(path, encoding, delimiter, text_i, label_i), report)


def _checked(name: str, rows: Iterator[Item], report: ImportReport) -> Iterator[Item]:
    """The rows, then a warning when they all had the same label."""
    labels: set = set()
    for item in rows:
        if item.labels and len(labels) < 2:
            labels.add(item.labels[0])
        yield item
    warn_one_class(report, name, labels)


def _rows(path: Path, encoding: str, delimiter: str, text_i: int, label_i: int | None) -> Iterator[Item]:
    with path.open("r", encoding=encoding, newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        next(reader, None)
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield Item(source=f"{path.name} line {reader.line_num}", error=f"malformed CSV row ({exc})")
                continue
            source = f"{path.name} line {reader.line_num}"
            if not any(cell.strip() for cell in row):
                continue
            if text_i >= len(row):
                yield Item(source=source, error=f"row has {len(row)} fields, no text")
                continue
            label = unescape_cell(row[label_i].strip()) if label_i is not None and label_i < len(row) else ""
            yield Item(source=source, text=unescape_cell(row[text_i]), labels=[label] if label else [])


def read_csv(path: Path, report: ImportReport, *, text_column=None, label_column=None):
    """Items from one CSV file or every CSV/TSV file at the top of a folder; total is unknown (None)."""
    tables = (
        [path]
        if path.is_file()
        else sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".csv", ".tsv"))
    )
    if not tables:
        raise ValueError(f"no supported files found in {path}")
    readers = [read_table(t, report, text_column, label_column) for t in tables]  # fail early

    def chain():
        for rows in readers:
            yield from rows

    return None, chain()
