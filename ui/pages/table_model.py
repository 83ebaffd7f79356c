"""The rows of a table project as a Qt table model: sorted and filtered in Python over every row (a
QSortFilterProxyModel would call back into Python per comparison, seconds for 20,000 rows), the
target column editable (an edit is a label change, reported by :attr:`RowTableModel.label_edited`)
and, when labeling, the model's suggestion beside it."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal

NO_PARENT = QModelIndex()  # a table has no parent rows

#: how each column type is named in the header
TYPE_WORDS = {
    "number": "number",
    "category": "category",
    "text": "text",
    "date": "date",
    "identifier": "identifier, left out",
}


def cell_text(value) -> str:
    """A cell as shown: empty for a missing cell, numbers without trailing zeros."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _sort_key(value):
    """Numbers in numeric order, before texts in alphabetical order."""
    number = _number(value)
    return (0, number, "") if number is not None else (1, 0.0, str(value).lower())


class RowTableModel(QAbstractTableModel):
    """Every row of a table project; :meth:`set_filter` and :meth:`sort` choose which show, in what order.

    Columns: the project's columns in table order, the target column last, then (``labeling``) the
    model's suggestion."""

    label_edited = Signal(int, object)  # sample id, the new label (None: cleared)

    def __init__(self, labeling: bool = False, parent=None):
        super().__init__(parent)
        self.labeling = labeling
        self.columns: list[dict] = []
        self.rows: list[dict] = []
        self.suggestions: dict[int, tuple] = {}
        self._shown: list[int] = []
        self._search: list[str] = []
        self._text = ""
        self._only: set[int] | None = None
        self._sort: tuple[int, Qt.SortOrder] | None = None
        self._keys: dict[int, list] = {}  # column -> each row's sort key

    # -- contents --------------------------------------------------------------------------------

    def set_table(self, columns: list[dict], rows: list[dict], suggestions: dict | None = None) -> None:
        """New columns and rows (``ws.table_columns`` / ``ws.table_rows``); the sort and filter stay."""
        self.beginResetModel()
        self.columns, self.rows, self.suggestions = columns, rows, dict(suggestions or {})
        self._keys = {}
        self._search = [
            " ".join(cell_text(v) for v in (*row["cells"].values(), row["target"])).lower() for row in rows
        ]
        self._select()
        self.endResetModel()

    @property
    def target_column(self) -> int | None:
        """The index of the target column (None before one is chosen)."""
        for i, column in enumerate(self.columns):
            if column["target"]:
                return i
        return None

    @property
    def numeric_target(self) -> bool:
        column = self.target_column
        return column is not None and self.columns[column]["type"] == "number"

    def row_at(self, position: int) -> dict:
        """The row shown at ``position``."""
        return self.rows[self._shown[position]]

    def shown_count(self) -> int:
        return len(self._shown)

    # -- filter and order ------------------------------------------------------------------------

    def set_filter(self, text: str = "", only: set[int] | None = None) -> None:
        """Show the rows with ``text`` in a cell (any case) among the sample ids ``only`` (None: all)."""
        self.beginResetModel()
        self._text, self._only = text.strip().lower(), only
        self._select()
        self.endResetModel()

    def sort(self, column: int, order: Qt.SortOrder = Qt.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        self._sort = (column, order) if column >= 0 else None
        self._order()
        self.layoutChanged.emit()

    def _select(self) -> None:
        text, only = self._text, self._only
        self._shown = [
            i
            for i, row in enumerate(self.rows)
            if (only is None or row["id"] in only) and (not text or text in self._search[i])
        ]
        self._order()

    def _order(self) -> None:
        if self._sort is None or not self.columns:
            return
        column, order = self._sort
        if column >= self.columnCount():
            return
        keys = self._keys.get(column)
        if keys is None:  # computed once a column (a label edit forgets the target's)
            keys = self._keys[column] = [
                None if v is None or v == "" else _sort_key(v)
                for v in (self._value(r, column) for r in self.rows)
            ]
        present = [i for i in self._shown if keys[i] is not None]
        missing = [i for i in self._shown if keys[i] is None]
        present.sort(key=keys.__getitem__, reverse=order == Qt.DescendingOrder)
        self._shown = present + missing  # empty cells last either way

    def _value(self, row: dict, column: int):
        if column == len(self.columns):  # the suggestion
            suggestion = self.suggestions.get(row["id"])
            return suggestion[0] if suggestion else None
        spec = self.columns[column]
        return row["target"] if spec["target"] else row["cells"].get(spec["name"])

    # -- the Qt model ----------------------------------------------------------------------------

    def rowCount(self, parent=NO_PARENT) -> int:  # noqa: N802 (Qt name)
        return 0 if parent.isValid() else len(self._shown)

    def columnCount(self, parent=NO_PARENT) -> int:  # noqa: N802 (Qt name)
        if parent.isValid() or not self.columns:
            return 0
        return len(self.columns) + (1 if self.labeling and self.target_column is not None else 0)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row = self.row_at(index.row())
        value = self._value(row, index.column())
        if role == Qt.DisplayRole:
            if index.column() == len(self.columns) and value is not None:
                score = self.suggestions[row["id"]][1]
                return cell_text(value) if self.numeric_target else f"{value}  ({score:.0%})"
            return cell_text(value)
        if role == Qt.EditRole:
            return "" if value is None else str(value)
        if role == Qt.TextAlignmentRole:
            spec = self.columns[index.column()] if index.column() < len(self.columns) else None
            numeric = spec["type"] == "number" if spec else self.numeric_target
            return int((Qt.AlignRight if numeric else Qt.AlignLeft) | Qt.AlignVCenter)
        if role == Qt.ToolTipRole and index.column() == len(self.columns) and value is not None:
            return "The model's answer for this row. Double-click it to take it as the label."
        return None

    def headerData(self, section, orientation, role=Qt.DisplayRole):  # noqa: N802 (Qt name)
        if orientation == Qt.Vertical:
            return str(section + 1) if role == Qt.DisplayRole else None
        if section == len(self.columns):
            return "Model suggests" if role == Qt.DisplayRole else None
        spec = self.columns[section]
        kind = TYPE_WORDS.get(spec["type"], spec["type"])
        if role == Qt.DisplayRole:
            return f"{spec['name']}\n{'to predict · ' if spec['target'] else ''}{kind}"
        if role == Qt.ToolTipRole:
            if spec["target"]:
                return f"The column the model predicts ({kind}). Edit a cell to change a row's label."
            detected = "" if spec["type"] == spec["detected"] else f" (detected: {spec['detected']})"
            return f"{spec['name']}: {kind}{detected}. Right-click to correct the type or to predict it."
        return None

    def flags(self, index):
        flags = super().flags(index)
        if index.isValid() and index.column() == self.target_column:
            flags |= Qt.ItemIsEditable
        return flags

    def setData(self, index, value, role=Qt.EditRole) -> bool:  # noqa: N802 (Qt name)
        if role != Qt.EditRole or not index.isValid() or index.column() != self.target_column:
            return False
        return self.set_label(index.row(), value)

    def set_label(self, position: int, value) -> bool:
        """Label the row shown at ``position`` (empty: no label); says so through :attr:`label_edited`."""
        text = str(value).strip() if value is not None else ""
        if self.numeric_target and text and _number(text) is None:
            return False  # a value to predict must be a number
        row = self.row_at(position)
        label = text or None
        if label == row["target"]:
            return False
        row["target"] = label
        self._keys.pop(self.target_column, None)
        i = self._shown[position]
        self._search[i] = " ".join(cell_text(v) for v in (*row["cells"].values(), label)).lower()
        column = self.target_column
        self.dataChanged.emit(self.index(position, column), self.index(position, self.columnCount() - 1))
        self.label_edited.emit(int(row["id"]), label)
        return True
