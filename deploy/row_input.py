"""Table rows as model input: a row of named cells -> one graph input per column.

A tabular model's graph takes one tensor (N, 1) per column it reads, named by the card's
``preprocessing["columns"]`` (``{"name", "type", "input"}``): float32 for a ``number`` or ``date``
column, a string for a ``category`` or ``text`` column. The graph imputes, scales, one-hot encodes and
counts words itself, so what runs here is only reading a cell as its type, the same in training, the
app, the service and the bundle:

- number: a JSON number, or text that reads as one (``"22"``, ``"7.25"``); empty or unreadable: NaN.
- date: days since 1970-01-01 of an ISO date or date-time (``"2024-05-01"``); else NaN.
- category: the cell as text, a number in its shortest form (``3.0`` and ``"3"`` are one category);
  empty: ``""`` (the graph treats it as one more category, or as unseen).
- text: the cell as text; empty: ``""``.

Columns the row does not have read as empty; columns the model does not read are ignored.
"""

from __future__ import annotations

import datetime as _dt
import json
import math

import numpy as np

from .inputs import InputError, ModelInput

try:
    from modeldesk.safejson import JSONLimitError
    from modeldesk.safejson import loads as safe_loads
except ImportError:  # inside a deploy bundle, which ships safejson beside this module
    from .safejson import JSONLimitError  # type: ignore[no-redef]  # the same module, copied
    from .safejson import loads as safe_loads  # type: ignore[no-redef]

NUMERIC_TYPES = ("number", "date")
MAX_CELL_CHARS = 20_000  # a text cell is cut here (the graph's word counts need no more)
_EPOCH = _dt.datetime(1970, 1, 1)
_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "#n/a", "?"})


def read_number(value) -> float:
    """A cell as a number (NaN when empty or not a number)."""
    if value is None or isinstance(value, (dict, list)):
        return math.nan
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        try:
            number = float(str(value).strip())
        except ValueError:
            return math.nan
    return number if math.isfinite(number) else math.nan


def read_date(value) -> float:
    """A cell as days since 1970-01-01 (NaN when it is not an ISO date or date-time)."""
    if value is None:
        return math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if math.isfinite(float(value)) else math.nan
    text = str(value).strip().replace("/", "-")
    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return math.nan
    if moment.tzinfo is not None:
        moment = moment.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return (moment - _EPOCH).total_seconds() / 86400.0


def read_category(value) -> str:
    """A cell as a category: its text, a whole number without ``.0``; ``""`` when empty."""
    if value is None or isinstance(value, (dict, list)):
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        number = float(value)
        if not math.isfinite(number):
            return ""
        return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)
    text = str(value).strip()
    if text.lower() in _MISSING:
        return ""
    try:
        number = float(text)
    except ValueError:
        return text
    return read_category(number) if math.isfinite(number) else text


def read_text(value) -> str:
    """A cell as text (``""`` when empty), at most :data:`MAX_CELL_CHARS` characters."""
    if value is None or isinstance(value, (dict, list)):
        return ""
    text = " ".join(str(value).split())
    return "" if text.lower() in _MISSING else text[:MAX_CELL_CHARS]


READERS = {"number": read_number, "date": read_date, "category": read_category, "text": read_text}


def decode_row(source, where: str) -> dict:
    """A row (a dict, or JSON text or bytes of an object) -> a dict; InputError naming ``where``."""
    if isinstance(source, (bytes, bytearray)):
        try:
            source = bytes(source).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(f"{where} is not UTF-8 JSON") from None
    if isinstance(source, str):
        try:
            source = safe_loads(source)
        except (JSONLimitError, ValueError):
            raise InputError(f"{where} is not a JSON object of column values") from None
    if not isinstance(source, dict):
        raise InputError(f'{where} must be an object of column values, such as {{"age": 22, "sex": "male"}}')
    return source


class RowInput(ModelInput):
    """Rows (dicts of cells) -> one (N, 1) tensor per column the model reads."""

    kind = "row"
    batch_size = 256
    inline = True
    json_fields = ("row", "rows")
    upload_types = ("application/json",)
    noun = "row"
    json_encoding = "text"
    json_example = '{"age": 22, "sex": "male"}'
    example_file = "row.json"
    not_compressible = (
        "A table model is already small ({size_mb:.1f} MB) and answers in well under a millisecond a row: "
        "making it smaller has nothing to gain."
    )
    console = {"widget": "form", "record": False}  # describe() adds the columns the form asks for

    def __init__(self, card: dict, **options):
        options.pop("max_pixels", None)
        super().__init__(card, **options)
        pre = card.get("preprocessing") or {}
        self.columns = [dict(c) for c in pre.get("columns", [])]

    @classmethod
    def check_preprocessing(cls, preprocessing: dict) -> str | None:
        columns = preprocessing.get("columns")
        if not isinstance(columns, list) or not columns:
            return "the card names no columns"
        for column in columns:
            if not isinstance(column, dict) or column.get("type") not in READERS or not column.get("input"):
                return f"the card's column {column!r} has no known type or input name"
        return None

    def words(self) -> str:
        return f"a row of {len(self.columns)} columns"

    def readme_text(self) -> str:
        names = ", ".join(f"`{c['name']}` ({c['type']})" for c in self.columns[:12])
        more = ", ..." if len(self.columns) > 12 else ""
        return (
            "a row of a table as a JSON object of column values "
            f"(columns: {names}{more}); a missing column or an empty cell counts as missing, and columns "
            "the model does not read are ignored. `modeldesk_server/row_input.py` reads each cell as its "
            "column's type; the ONNX graph imputes, scales and encodes the cells itself."
        )

    def example(self):
        return self.load({})  # every cell missing: the graph fills them in

    def load(self, source) -> dict:
        row = decode_row(source, "the row")
        return {c["input"]: READERS[c["type"]](row.get(c["name"])) for c in self.columns}

    def cost(self, source) -> int:
        return (
            4 * len(source) if isinstance(source, (bytes, bytearray, str)) else 64 * max(len(self.columns), 1)
        )

    def from_json_value(self, value, where: str):
        return decode_row(value, where)

    def collate(self, items: list) -> np.ndarray:
        return np.array(list(items), dtype=object).reshape(len(items))

    def feeds(self, items: list, input_name: str) -> dict:
        """One (N, 1) tensor per column: float32 for numbers and dates, strings for the others."""
        feeds = {}
        for column in self.columns:
            values = [item[column["input"]] for item in items]
            if column["type"] in NUMERIC_TYPES:
                feeds[column["input"]] = np.array(values, dtype=np.float32).reshape(-1, 1)
            else:
                feeds[column["input"]] = np.array(values, dtype=object).reshape(-1, 1)
        return feeds

    def describe(self) -> dict:
        columns = [
            {"name": c["name"], "type": c["type"], "values": list(c.get("values") or [])}
            for c in self.columns
        ]
        console = {
            "widget": "form",
            "hint": "Fill in a row, or upload a CSV of many rows to get their answers as a CSV.",
            "columns": columns,
            "record": False,
        }
        return {**super().describe(), "console": console, "columns": columns}


def rows_json(rows: list[dict]) -> str:
    """A request body for rows (for clients and tests): ``{"rows": [...]}``."""
    return json.dumps({"rows": rows}, ensure_ascii=False)
