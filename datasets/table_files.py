"""Tables of rows (CSV, TSV, Excel ``.xlsx``, Parquet) read as rows of named cells, one sample a row.

A row is stored as a compact JSON object of its cells (``{"age": "22", "sex": "male"}``, a missing
cell as null; CSV cells stay the text they were, Excel and Parquet numbers stay numbers) without the
target column, whose value becomes the sample's label (a number written canonically, so ``"1.0"`` and
``"1"`` are one class). Encodings of CSV/TSV files are found as for texts (``csvtext.sniff_encoding``).
Excel files are read with openpyxl, Parquet files with pyarrow, each only when it is installed.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from .csvtext import sniff_encoding, sniff_header
from .items import ImportReport, Item
from .safety import unescape_cell
from .splits import SPLIT_TARGETS

TABLE_EXTS = (".csv", ".tsv", ".xlsx", ".parquet")
MAX_COLUMNS = 1000
#: cells that mean "no value" in the tables people export (R's NA, pandas' NaN, Excel's #N/A)
MISSING = frozenset({"na", "n/a", "nan", "null", "none", "#n/a", "?"})
#: a numeric target with more different values than this is split by value range, not by class
MANY_VALUES = 20


def canonical(value) -> str | None:
    """A cell as a label: a number in its shortest form ("1.0" -> "1"), other text trimmed; None when empty."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = str(value).strip()
        if not text or text.lower() in MISSING:
            return None
        try:
            number = float(text)
        except ValueError:
            return text
    if not math.isfinite(number):
        return None
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)


def cell(value):
    """A cell as JSON keeps it: numbers stay numbers, dates become ISO text, empty text becomes None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value if math.isfinite(float(value)) else None
    if isinstance(value, _dt.datetime) and value.time() == _dt.time() and value.tzinfo is None:
        return value.date().isoformat()  # Excel keeps a date as a date-time at midnight
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    text = str(value).strip()
    return None if not text or text.lower() in MISSING else text


def row_text(row: dict) -> str:
    """The stored form of a row: compact JSON, columns in the table's order."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def parse_row(text: str) -> dict:
    """A stored row back as a dict (ValueError when it is not a JSON object)."""
    row = json.loads(text)
    if not isinstance(row, dict):
        raise ValueError("a stored row must be a JSON object")
    return row


def _header(columns, name: str) -> list[str]:
    columns = [str(c if c is not None else "").strip() for c in columns]
    if not any(columns):
        raise ValueError(f"{name} has no header row: its first row must name the columns")
    if len(columns) > MAX_COLUMNS:
        raise ValueError(f"{name} has {len(columns)} columns; at most {MAX_COLUMNS} can be imported")
    seen: dict[str, int] = {}
    out = []
    for i, column in enumerate(columns):
        column = column or f"column {i + 1}"
        if column in seen:
            seen[column] += 1
            column = f"{column} ({seen[column]})"
        seen.setdefault(column, 1)
        out.append(column)
    return out


def _csv_rows(path: Path, report: ImportReport) -> tuple[list[str], Iterator[list]]:
    encoding = sniff_encoding(path, report)
    delimiter, _columns, best = sniff_header(path, encoding, lambda cols: len(cols) > 1)
    columns = _header(best, path.name)

    def rows():
        with path.open("r", encoding=encoding, newline="") as handle:
            reader = csv.reader(handle, delimiter=delimiter)
            next(reader, None)
            for row in reader:
                if any(c.strip() for c in row):
                    yield [unescape_cell(c) for c in row]

    return columns, rows()


def _xlsx_rows(path: Path) -> tuple[list[str], Iterator[list]]:
    try:
        import openpyxl
    except ImportError:
        raise ValueError(f"{path.name}: reading Excel files needs openpyxl (pip install openpyxl)") from None
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a file that is not a workbook
        raise ValueError(f"{path.name} is not a readable Excel .xlsx workbook ({exc})") from None
    sheet = book.worksheets[0]
    values = sheet.iter_rows(values_only=True)
    first = next(values, None)
    if first is None:
        book.close()
        raise ValueError(f"{path.name} is empty: its first sheet holds no header row and no rows")
    columns = _header(first, path.name)

    def rows():
        try:
            for row in values:
                if any(v is not None and str(v).strip() for v in row):
                    yield list(row)
        finally:
            book.close()

    return columns, rows()


def _parquet_rows(path: Path) -> tuple[list[str], Iterator[list]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(
            f"{path.name}: reading Parquet files needs pyarrow, which is not installed "
            "(pip install pyarrow), or save the table as CSV or .xlsx"
        ) from None
    try:
        table = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow's errors for a damaged file vary by version
        raise ValueError(f"{path.name} is not a readable Parquet file ({exc})") from None
    columns = _header(table.schema_arrow.names, path.name)

    def rows():
        for batch in table.iter_batches(batch_size=4096):
            names = batch.schema.names
            data = [batch.column(n).to_pylist() for n in names]
            yield from (list(values) for values in zip(*data))

    return columns, rows()


def table_rows(path: Path, report: ImportReport) -> tuple[list[str], Iterator[dict]]:
    """(column names, rows as dicts of cells) of one table file; ValueError naming the file when the
    whole file cannot be read (no header, not a table, a reader not installed)."""
    ext = path.suffix.lower()
    if ext == ".xlsx":
        columns, raw = _xlsx_rows(path)
    elif ext == ".parquet":
        columns, raw = _parquet_rows(path)
    else:
        columns, raw = _csv_rows(path, report)

    def rows():
        for values in raw:
            yield {c: cell(v) for c, v in zip(columns, list(values) + [None] * (len(columns) - len(values)))}

    return columns, rows()


def find_target(columns: list[str], wanted: str | None, name: str) -> str | None:
    """The column called ``wanted`` (case and spaces ignored); ValueError naming the file when absent."""
    if not wanted:
        return None
    folded = {c.strip().lower(): c for c in columns}
    if wanted.strip().lower() not in folded:
        shown = ", ".join(repr(c) for c in columns[:12]) + (", ..." if len(columns) > 12 else "")
        raise ValueError(f"{name}: no column {wanted!r} to predict; the columns are: {shown}")
    return folded[wanted.strip().lower()]


#: column names taken as the one to predict when none was chosen
TARGET_NAMES = ("label", "target", "class", "y")


def default_target(path) -> str | None:
    """The column of the table at ``path`` (a file, or the first table file of a folder) named like a
    column to predict (:data:`TARGET_NAMES`), or None (also when the file cannot be read)."""
    path = Path(path)
    if path.is_dir():
        tables = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in TABLE_EXTS)
        if not tables:
            return None
        path = tables[0]
    if path.suffix.lower() not in TABLE_EXTS:
        return None
    try:
        columns, _rows = table_rows(path, ImportReport())
    except (ValueError, OSError):
        return None
    folded = {c.strip().lower(): c for c in columns}
    return next((folded[name] for name in TARGET_NAMES if name in folded), None)


def value_splits(keyed: list[tuple[str, float]], targets=SPLIT_TARGETS) -> dict[str, str]:
    """key -> split for rows with a numeric target: stratified by value (rows sorted by value, each run
    of 20 spread over train/val/test in the split shares), so every split sees the whole range."""
    from .splits import assign

    ordered = sorted(keyed, key=lambda kv: (kv[1], kv[0]))
    bins = max(1, len(ordered) // 20)
    new = [(i, key, str(i * bins // max(len(ordered), 1))) for i, (key, _value) in enumerate(ordered)]
    chosen = assign(new, None, targets)
    return {ordered[i][0]: split for i, split in chosen.items()}


def as_number(label) -> float | None:
    """The label as a number, None when it is not one."""
    try:
        return float(label)
    except (TypeError, ValueError):
        return None


def numeric_target(labels) -> bool:
    """Whether labels are the values of a numeric target: more than :data:`MANY_VALUES` distinct numbers,
    most labels numbers (a few words among them are mistakes to point out, not classes)."""
    labels = [label for label in labels if label is not None]
    numbers = [v for v in map(as_number, labels) if v is not None]
    return len(set(numbers)) > MANY_VALUES and 2 * len(numbers) > len(labels)


def _identity(text: str, label: str | None, copies: Counter) -> str:
    """What tells a row apart beside its cells: its target and which copy of the same cells and target
    in its file it is. Rows alike but for their target are distinct rows (two passengers with the same
    facts, one survived), and so are two identical lines; importing the file again, in any row order,
    gives every row the same identity again, so it adds nothing."""
    from .importing import normalise_text

    key = (normalise_text(text), label)
    copy = copies[key]
    copies[key] += 1
    # normalised text holds no newline, so this cannot be mistaken for part of a row
    return "\n" + json.dumps([label, copy])


def _warn_words(report: ImportReport, name: str, target: str, items: list[Item]) -> None:
    """One warning for the rows of a numeric target whose value is not a number."""
    words = [it for it in items if it.labels and as_number(it.labels[0]) is None]
    if words:
        line = words[0].source.rsplit(":", 1)[1]
        report.warn(
            f"{name}: {len(words)} of {len(items)} rows have a {target!r} value that is not a number "
            f"(the first: {words[0].labels[0]!r} on line {line}); a regression needs numbers there, so "
            f"correct or empty those cells, or predict {target!r} as classes in a tabular-classification "
            "project"
        )


def read_rows(path: Path, report: ImportReport, target: str | None) -> list[Item]:
    """The rows of one table file as items; the ``target`` column's value is the label (rows without one
    import unlabeled, left out of training, and the report says how many)."""
    columns, rows = table_rows(path, report)
    target = find_target(columns, target, path.name)
    items: list[Item] = []
    missing = 0
    copies: Counter = Counter()
    for number, row in enumerate(rows, 2):
        label = canonical(row.pop(target, None)) if target else None
        missing += target is not None and label is None
        text = row_text(row)
        items.append(
            Item(
                f"{path.name}:{number}",
                text=text,
                labels=[label] if label else [],
                identity=_identity(text, label, copies),
            )
        )
    if not items:
        raise ValueError(f"{path.name} holds a header row but no rows: add rows below the header")
    if target is None:
        report.warn(f"{path.name}: no column to predict was chosen; rows import unlabeled (choose one later)")
        return items
    if missing:
        report.warn(
            f"{path.name}: {missing} of {len(items)} rows have no {target!r} value; they are imported "
            "but left out of training until they get one"
        )
    labels = [item.labels[0] for item in items if item.labels]
    if len(set(labels)) == 1:
        report.warn(
            f"{path.name}: every row has {labels[0]!r} in column {target!r}; a model needs at least two "
            "classes to learn, so import rows of another class too or choose another column to predict"
        )
    if numeric_target(labels):
        from .media import sha256_bytes

        _warn_words(report, path.name, target, items)
        keys = {
            id(it): sha256_bytes((it.text + it.identity).encode())
            for it in items
            if it.labels and it.text and as_number(it.labels[0]) is not None
        }
        splits = value_splits([(keys[id(it)], float(it.labels[0])) for it in items if id(it) in keys])
        report.splits_by_value = target
        for item in items:
            if id(item) in keys:
                item.split = splits[keys[id(item)]]
    return items


def write_rows(store, project, path: Path, samples) -> int:
    """The rows as a CSV table (their columns in first-seen order, then the target column with each
    row's label), as an import reads it back; returns how many rows were written."""
    from modeldesk.fileio import atomic_open

    from .safety import escape_cell
    from .table_columns import TARGET_SETTING

    target = store.setting(project, TARGET_SETTING) or "label"
    rows = [(parse_row(s.text) if s.text else {}, s.labels[0] if s.labels else None) for s in samples]
    columns = [c for c in dict.fromkeys(c for row, _ in rows for c in row) if c != target] + [target]
    with atomic_open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([escape_cell(c) for c in columns])
        for row, label in rows:
            cells = [row.get(c) for c in columns[:-1]] + [label]
            writer.writerow([_exported(v, escape_cell) for v in cells])
    return len(rows)


def _exported(value, escape) -> str:
    """A cell as written: empty for None, a number as it is (``-1.5`` stays a number), text escaped
    against spreadsheet formulas (read back by :func:`table_rows`)."""
    if value is None:
        return ""
    text = str(value)
    try:
        float(text)
    except ValueError:
        return escape(text)
    return text


def read_tables(path: Path, report: ImportReport, target: str | None) -> tuple[int, list[Item]]:
    """(count, items) of one table file or of every table file at the top of a folder."""
    files = (
        [path]
        if path.is_file()
        else sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in TABLE_EXTS)
    )
    if not files:
        raise ValueError(f"no table files (.csv, .tsv, .xlsx, .parquet) found in {path}")
    items = [item for f in files for item in read_rows(f, report, target)]
    return len(items), items
