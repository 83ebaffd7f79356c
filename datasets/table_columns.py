"""The types of a table's columns: detected from the rows, corrected by the user, kept with the project.

A column is one of :data:`TYPES`:

- ``number``: nearly every filled cell reads as a number (``"22"``, ``7.25``);
- ``date``: nearly every filled cell is an ISO date or date-time (``"2024-05-01"``, ``"2024/05/01"``);
- ``identifier``: a different value in every row that names a row rather than describes it (an
  ``id``-like name, whole numbers counting up, or codes without spaces): left out of training;
- ``text``: free text (several words a cell, mostly different): read as word counts;
- ``category``: anything else (a few values that repeat).

The user's corrections are kept in the project's ``table_types`` setting and win over detection.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import Counter

TYPES = ("number", "category", "text", "date", "identifier")
SETTING = "table_types"
TARGET_SETTING = "table_target"
_SHARE = 0.95  # of the filled cells that must read as numbers (or dates) for the column to be one
_ID_NAME = re.compile(r"(^|[^a-z])(id|uuid|guid|key|index|row)$|^(id|uuid|guid)([^a-z]|$)", re.I)
_DATE = re.compile(r"^\d{4}[-/]\d{1,2}[-/]\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$")


def _number(value) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def _is_date(value) -> bool:
    if not isinstance(value, str) or not _DATE.match(value.strip()):
        return False
    try:
        _dt.datetime.fromisoformat(value.strip().replace("/", "-").replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def detect_type(name: str, values: list) -> str:
    """The type of one column from its cells (None for an empty cell)."""
    filled = [v for v in values if v is not None and str(v).strip() != ""]
    if not filled:
        return "category"
    distinct = len(set(map(str, filled)))
    unique = distinct == len(filled) and len(filled) >= 20
    numbers = [n for n in map(_number, filled) if n is not None]
    if len(numbers) >= _SHARE * len(filled):
        whole = all(n.is_integer() for n in numbers)
        if unique and whole and (_ID_NAME.search(name) or _counts_up(numbers)):
            return "identifier"
        return "number"
    if sum(map(_is_date, filled)) >= _SHARE * len(filled):
        return "date"
    words = sum(len(str(v).split()) for v in filled) / len(filled)
    if distinct > 0.5 * len(filled) and words >= 2.5:
        return "text"
    if (unique or distinct >= 0.9 * len(filled) >= 18) and (_ID_NAME.search(name) or words < 1.5):
        return "identifier"
    if distinct > 0.5 * len(filled) and words >= 1.5:
        return "text"
    return "category"


def _counts_up(numbers: list[float]) -> bool:
    """Whole numbers that, sorted, mostly step by one (row numbers, ids)."""
    ordered = sorted(numbers)
    steps = Counter(b - a for a, b in zip(ordered, ordered[1:]))
    return bool(steps) and steps.most_common(1)[0][0] == 1 and ordered[-1] - ordered[0] < 3 * len(ordered)


def detect_types(rows: list[dict], columns: list[str] | None = None) -> dict[str, str]:
    """column -> type for the rows' columns (in the order they first appear)."""
    if columns is None:
        columns = list(dict.fromkeys(c for row in rows for c in row))
    return {c: detect_type(c, [row.get(c) for row in rows]) for c in columns}


def column_types(rows: list[dict], corrections: dict | None = None) -> dict[str, str]:
    """Detected types with the user's ``corrections`` (column -> type) applied."""
    types = detect_types(rows)
    for column, kind in (corrections or {}).items():
        if column in types and kind in TYPES:
            types[column] = kind
    return types
