"""A table project's rows on the Data and Label pages: a filter box over a real table, sorted by a
click on a column's title; right-click a title to correct its type or to predict that column; a cell
of the column to predict is edited in place (a label change). On the Label page the model's
suggestion sits beside it (double-click it to take it).

The rows are read off the UI thread by ``ws.table_rows`` in pages; the page that hosts the table gives
its own ``tasks`` and ``run`` (see :class:`~modeldesk.ui.page.Page`), so the table's work stops with it.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ..page import LatestTask
from .table_model import TYPE_WORDS, RowTableModel

log = logging.getLogger(__name__)

PAGE_ROWS = 2000  # rows read by one ws.table_rows call
FILTER_DELAY_MS = 150  # typing in the filter box filters once the typing pauses


def read_table(ws, project: str, labeling: bool, state) -> dict:
    """Worker thread: the project's columns, every row (read a page at a time) and, for labeling, the
    latest model's suggestions for the unlabeled rows."""
    columns = ws.table_columns(project)
    rows: list[dict] = []
    while True:
        state.check()
        chunk = ws.table_rows(project, offset=len(rows), limit=PAGE_ROWS)
        rows.extend(chunk)
        state.set_progress(len(rows), 0, f"{len(rows):,} rows read")
        if len(chunk) < PAGE_ROWS:
            break
    suggestions = {}
    if labeling:
        models = ws.list_models(project)
        if models:
            suggestions = ws.suggestions(project, models[-1]["id"])
    return {"project": project, "columns": columns, "rows": rows, "suggestions": suggestions}


class RowTable(QWidget):
    """The rows of a table project, hosted by ``page`` (its ``ws``, ``tasks``, ``run`` and ``project``).

    ``changed`` is emitted after a label, a column type or the target column changed, ``loaded`` when
    the rows read are shown."""

    changed = Signal()
    loaded = Signal()

    def __init__(self, page, labeling: bool = False, parent=None):
        super().__init__(parent)
        self.page = page
        self.labeling = labeling
        self.loaded_key = None
        self.reader = LatestTask(page.tasks, self)
        self.model = RowTableModel(labeling, self)
        self.model.label_edited.connect(self._save_label)

        self.filter_box = QLineEdit()
        self.filter_box.setPlaceholderText("Filter: show the rows with this in a cell")
        self.filter_box.setClearButtonEnabled(True)
        self._filter_timer = QTimer(self, singleShot=True, interval=FILTER_DELAY_MS)
        self._filter_timer.timeout.connect(self._apply_filter)
        self.filter_box.textChanged.connect(lambda _t: self._filter_timer.start())
        self.hint = QLabel()
        self.hint.setObjectName("Muted")
        self.hint.setWordWrap(True)
        self._only: set[int] | None = None

        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)  # table order until a click
        self.view.setSortingEnabled(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setEditTriggers(
            QAbstractItemView.DoubleClicked
            | QAbstractItemView.EditKeyPressed
            | QAbstractItemView.AnyKeyPressed
        )
        self.view.setWordWrap(False)
        self.view.verticalHeader().setDefaultSectionSize(26)
        self.view.verticalHeader().setSectionResizeMode(QHeaderView.Fixed)  # no per-row measuring
        header = self.view.horizontalHeader()
        header.setContextMenuPolicy(Qt.CustomContextMenu)
        header.customContextMenuRequested.connect(self._header_menu)
        header.setDefaultAlignment(Qt.AlignLeft | Qt.AlignVCenter)
        self.view.doubleClicked.connect(self._double_clicked)

        top = QHBoxLayout()
        top.addWidget(self.filter_box, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.hint)
        layout.addWidget(self.view, 1)
        self._set_hint()

    # -- loading ---------------------------------------------------------------------------------

    def show_project(self, project: str, version=None) -> None:
        """Read the project's rows again unless ``(project, version)`` is what is shown already
        (``version``: anything that changes when rows come or go, e.g. the number of samples)."""
        if (project, version) == self.loaded_key:
            return
        self.loaded_key = (project, version)
        self.reload()

    def reload(self) -> None:
        """Read the columns and rows again (worker thread); the sort and filter stay."""
        if self.loaded_key is None:
            return
        ws, project, labeling = self.page.ws, self.loaded_key[0], self.labeling
        self.reader.start(
            lambda state: read_table(ws, project, labeling, state),
            self._show,
            title="Could not read the table",
        )

    def _show(self, data: dict) -> None:
        if self.loaded_key is None or data["project"] != self.loaded_key[0]:
            return
        first = not self.model.columns
        self.model.set_table(data["columns"], data["rows"], data["suggestions"])
        if first or self.view.horizontalHeader().count() != len(data["columns"]):
            self._fit_columns()
        self._place_target()
        if self.labeling:  # no suggestion to show (no model, or every row labeled): no empty column
            self.view.setColumnHidden(len(self.model.columns), not self.model.suggestions)
        self._set_hint()
        self.loaded.emit()

    def _fit_columns(self) -> None:
        header = self.view.horizontalHeader()
        for column in range(self.model.columnCount()):
            wanted = max(self.view.sizeHintForColumn(column), header.sectionSizeHint(column))
            header.resizeSection(column, max(70, min(200, wanted)))
        header.setStretchLastSection(True)

    def _place_target(self) -> None:
        header = self.view.horizontalHeader()
        target = self.model.target_column
        if target is not None:  # what is labeled first, then (labeling) the model's suggestion
            header.moveSection(header.visualIndex(target), 0)
            if self.model.columnCount() > len(self.model.columns):
                header.moveSection(header.visualIndex(len(self.model.columns)), 1)

    def _set_hint(self) -> None:
        target = self.model.target_column
        if target is None:
            self.hint.setText(
                "Right-click the title of the column to predict and choose “Predict this column”."
            )
            return
        name = self.model.columns[target]["name"]
        what = "a number" if self.model.numeric_target else "its class"
        text = f"Double-click a cell of “{name}” to type {what}. Right-click a column's title to correct its type."
        if self.labeling and self.model.suggestions:
            text = (
                f"Label a row by typing {what} in “{name}”; double-click the model's suggestion to take it."
            )
        elif self.labeling:
            text = (
                f"Label a row by typing {what} in “{name}”. After training, the model's suggestion for the "
                "rows without one shows beside it."
            )
        self.hint.setText(text)

    # -- filters ---------------------------------------------------------------------------------

    def show_only(self, ids) -> None:
        """Show only the rows of these sample ids (the Data page's class, split and mistake filters)."""
        only = None if ids is None else set(ids)
        if only != self._only:  # a refresh with the same filters keeps the view where it is
            self._only = only
            self._apply_filter()

    def _apply_filter(self) -> None:
        self.model.set_filter(self.filter_box.text(), self._only)

    # -- editing ---------------------------------------------------------------------------------

    def _double_clicked(self, index) -> None:
        if index.column() == len(self.model.columns):  # the suggestion column: take it
            suggestion = self.model.suggestions.get(self.model.row_at(index.row())["id"])
            if suggestion:
                self.model.set_label(index.row(), suggestion[0])

    def _save_label(self, sample_id: int, label) -> None:
        ws = self.page.ws
        self.page.run(
            lambda _state: ws.annotate(sample_id, "label", label),
            lambda _result: self.changed.emit(),
            title="The label was not saved",
        )

    def _header_menu(self, pos) -> None:
        section = self.view.horizontalHeader().logicalIndexAt(pos)
        if section < 0 or section >= len(self.model.columns):
            return
        spec = self.model.columns[section]
        menu = QMenu(self)
        if spec["target"]:
            menu.addAction("This is the column the model predicts").setEnabled(False)
        else:
            group = QActionGroup(menu)
            for kind, word in TYPE_WORDS.items():
                action = QAction(f"Type: {word}", menu, checkable=True, checked=kind == spec["type"])
                action.triggered.connect(lambda _c=False, k=kind: self.set_type(spec["name"], k))
                group.addAction(action)
                menu.addAction(action)
            if spec["type"] != spec["detected"]:
                menu.addAction(
                    f"Back to the detected type ({TYPE_WORDS.get(spec['detected'])})",
                    lambda: self.set_type(spec["name"], None),
                )
            menu.addSeparator()
            menu.addAction("Predict this column", lambda: self.set_target(spec["name"]))
        menu.popup(self.view.horizontalHeader().mapToGlobal(pos))
        self.menu = menu  # kept for tests

    def set_type(self, column: str, kind: str | None) -> None:
        """Correct a column's type (None: the detected one) for the next training."""
        ws, project = self.page.ws, self.loaded_key[0]
        self.page.run(
            lambda _state: ws.set_column_type(project, column, kind),
            lambda _result: (self.reload(), self.changed.emit()),
            title="The column type was not changed",
        )

    def set_target(self, column: str) -> None:
        """Predict ``column`` from now on: its cells become the labels (worker thread)."""
        ws, project = self.page.ws, self.loaded_key[0]
        self.page.run(
            lambda _state: ws.set_table_target(project, column),
            lambda _result: (self.reload(), self.changed.emit()),
            title="The column to predict was not changed",
        )
