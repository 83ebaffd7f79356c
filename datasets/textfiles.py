"""Texts that are not in a CSV table: JSON Lines, plain text files, and a folder per class of .txt files.

- ``.jsonl`` (or ``.ndjson``): one JSON object a line, with a text field (``text``, ``content``,
  ``review``, ... as in CSV) and optionally a label field (``label``, ``class``, ...; a number is
  read as its text, ``1`` -> ``"1"``).
- ``.txt``: one text a line, unlabeled; lines written as fastText does (``__label__spam Win a
  prize``) carry their label.
- a folder: ``<label>/<name>.txt`` is one text of class ``label`` per file (as the IMDB and 20
  newsgroups sets are laid out); ``.txt`` files at the top are unlabeled texts.

Every file is read as UTF-8, or as GB18030/GBK with a warning (``csvtext.sniff_encoding``). Problems
with a whole file raise ValueError naming it; a bad line or file is reported as failed and the rest
goes on; ``textchecks`` refuses a label column that holds long texts and warns about one class.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path

from modeldesk import safejson

from .csvtext import LABEL_COLUMNS, TEXT_COLUMNS, find_column, sniff_encoding
from .detect import iter_files
from .folders import refuse_special
from .items import ImportReport, Item
from .safety import special_file_problem
from .textchecks import check_labels, warn_one_class

TEXT_FILE_EXTS = (".txt",)
JSONL_EXTS = (".jsonl", ".ndjson")
MAX_TEXT_BYTES = 1 << 20  # a .txt file above this is not one text
FASTTEXT_PREFIX = "__label__"
_PEEK = 200


def each_file(path: Path, exts, read):
    """(total, items) of one file, or of every file with one of ``exts`` at the top of a folder.

    Every file is read before any item is handed out, so a problem with a whole file (ValueError)
    stops the import before anything is added.
    """
    files = (
        [path]
        if path.is_file()
        else sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in exts)
    )
    if not files:
        raise ValueError(f"no supported files found in {path}")
    read_files = [read(f) for f in files]
    return sum(n for n, _ in read_files), [item for _, items in read_files for item in items]


def _lines(path: Path, report: ImportReport) -> Iterator[tuple[int, str]]:
    encoding = sniff_encoding(path, report)
    with path.open("r", encoding=encoding, newline=None) as handle:
        for number, line in enumerate(handle, 1):
            yield number, line.rstrip("\n")


def _json_label(value) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, (int, float, str)):
        return str(value).strip()
    return ""


def read_jsonl(path: Path, report: ImportReport, *, text_column=None, label_column=None):
    """Items from one JSON Lines file: (None, items); ValueError when no line has the text field."""
    rows = []
    text_key = label_key = None
    for number, line in _lines(path, report):
        if not line.strip():
            continue
        source = f"{path.name} line {number}"
        try:
            value = safejson.loads(line)
        except ValueError as exc:  # not JSON, nested too deep, a number too long: this line only
            rows.append(Item(source=source, error=f"this line {str(exc).removeprefix('it ')}"))
            continue
        if not isinstance(value, dict):
            rows.append(Item(source=source, error="not a JSON object ({...})"))
            continue
        if text_key is None:
            keys = list(value)
            found = find_column(keys, text_column, TEXT_COLUMNS)
            if found is None:
                wanted = (
                    repr(text_column)
                    if text_column
                    else "a text field (" + ", ".join(TEXT_COLUMNS[:4]) + ", ...)"
                )
                raise ValueError(
                    f"{path.name}: no {wanted} in its first object; its fields are: "
                    + ", ".join(repr(k) for k in keys)
                    + ". Name the text field (--text-column)"
                )
            text_key = keys[found]
            at = find_column(keys, label_column, LABEL_COLUMNS)
            if at is None and label_column:
                raise ValueError(
                    f"{path.name}: no field {label_column!r} in its first object; its fields are: "
                    + ", ".join(repr(k) for k in keys)
                )
            label_key = None if at is None else keys[at]
            if label_key is None:
                report.warn(f"{path.name}: no label field among {', '.join(keys)}; texts import unlabeled")
        text = value.get(text_key)
        if not isinstance(text, str):
            rows.append(Item(source=source, error=f"field {text_key!r} is missing or not a string"))
            continue
        label = _json_label(value.get(label_key)) if label_key else ""
        rows.append(Item(source=source, text=text, labels=[label] if label else []))
    if text_key is None and not rows:
        raise ValueError(
            f"{path.name} is empty: it holds no JSON lines; write one object a line, "
            'such as {"text": "...", "label": "..."}'
        )
    check_labels(
        path.name,
        [(r.text or "", r.labels[0] if r.labels else "") for r in rows[:_PEEK]],
        repr(label_key) if label_key else "label",
    )
    warn_one_class(report, path.name, {r.labels[0] for r in rows if r.labels})
    return len(rows), rows


def read_txt(path: Path, report: ImportReport):
    """Items from one plain text file: one text a line (fastText ``__label__x`` prefixes are labels)."""
    rows = []
    for number, line in _lines(path, report):
        text = line.strip()
        if not text:
            continue
        labels = []
        while text.startswith(FASTTEXT_PREFIX):
            label, _, text = text[len(FASTTEXT_PREFIX) :].partition(" ")
            if label:
                labels.append(label)
            text = text.strip()
        rows.append(Item(source=f"{path.name} line {number}", text=text, labels=labels[:1]))
    if not rows:
        raise ValueError(f"{path.name} is empty: it holds no lines of text; write one text a line")
    warn_one_class(report, path.name, {r.labels[0] for r in rows if r.labels})
    return len(rows), rows


def _read_text_file(file: Path, rel: str, labels: list, report: ImportReport) -> Item:
    problem = special_file_problem(file)
    if problem:
        return Item(source=rel, error=problem)
    try:
        size = file.stat().st_size
        if size > MAX_TEXT_BYTES:
            return Item(
                source=rel,
                error=f"{size / (1 << 20):.1f} MB is more than one text "
                f"({MAX_TEXT_BYTES >> 20} MB at most): split it into files",
            )
        data = file.read_bytes()
    except OSError as exc:
        return Item(source=rel, error=f"cannot read the file ({exc.strerror or exc})")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # Notepad's and Excel's "Unicode"
        try:
            return Item(source=rel, text=data.decode("utf-16"), labels=labels)
        except UnicodeDecodeError:
            pass  # not UTF-16 after all: the checks below say what it is
    if b"\x00" in data[:8192]:
        return Item(source=rel, error="not a text file (it holds binary data)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            text = data.decode("gb18030")
        except UnicodeDecodeError:
            return Item(source=rel, error="neither UTF-8 nor GBK/GB18030 text; save it as UTF-8")
        report.warn(
            f"{rel} is not UTF-8; read it as GB18030/GBK (Chinese). Check that the text looks right, "
            "or save the file as UTF-8"
        )
    return Item(source=rel, text=text, labels=labels)


def read_text_folders(root: Path, report: ImportReport):
    """``root/<label>/.../<name>.txt``: one text per file, the first folder level names the class.

    A single ``.txt`` file (or ``.txt`` files at the top of ``root``) import unlabeled; other files
    are ignored with one warning.
    """
    if root.is_file():
        return 1, [_read_text_file(root, root.name, [], report)]
    items, ignored, labels = [], [], set()
    for file in iter_files(root, refuse_special(report, root)):
        rel = file.relative_to(root)
        if file.suffix.lower() not in TEXT_FILE_EXTS:
            ignored.append(rel.as_posix())
            continue
        label = [rel.parts[0]] if len(rel.parts) > 1 else []
        labels.update(label)
        items.append(_read_text_file(file, rel.as_posix(), label, report))
    if ignored:
        shown = ", ".join(ignored[:5]) + (f" and {len(ignored) - 5} more" if len(ignored) > 5 else "")
        report.warn(f"ignored {len(ignored)} file(s) in {root} that are not .txt texts: {shown}")
    warn_one_class(report, root.name, labels)
    return len(items), items
