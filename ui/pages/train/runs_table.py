"""The table of a project's training runs: when, which recipe, how it ended, and Resume."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QPushButton, QTableWidget, QTableWidgetItem

from modeldesk.app.keep_up import is_auto_job

from ...job_watcher import CANCELLED_STATES, DONE_STATES, FAILED_STATES
from ...wording import STATE_WORDS, score_words, short_time


class RunsTable(QTableWidget):
    """Runs newest first; a failed or cancelled run has a Resume button.

    Signals
    -------
    resume_requested(int) : Resume was pressed for this job id.
    run_selected(int) : a row was selected (its job id).
    """

    resume_requested = Signal(int)
    run_selected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(0, 5, parent)
        self.setHorizontalHeaderLabels(["Run", "Recipe", "State", "Started", ""])
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.Stretch)
        self.itemSelectionChanged.connect(self._selected)

    def set_runs(self, jobs: list[dict], title=str) -> None:
        """Show ``jobs`` (dicts from ``Workspace.training_runs``); ``title(template)`` names a recipe."""
        self.setRowCount(len(jobs))
        self.setColumnHidden(4, not any(j.get("state") in FAILED_STATES | CANCELLED_STATES for j in jobs))
        for row, job in enumerate(jobs):
            template = (job.get("params") or {}).get("template", "")
            state = job.get("state", "")
            words = STATE_WORDS.get(state, state.capitalize())
            if state in DONE_STATES:
                score = score_words((job.get("result") or {}).get("metrics") or {})
                if score != "Latest model":
                    words += f": {score[:1].lower()}{score[1:]}"
            elif state in FAILED_STATES and job.get("error"):
                words += f": {job['error']}"
            started = job.get("created_at") or job.get("started_at") or ""
            items = [
                QTableWidgetItem(f"#{job['id']}"),
                QTableWidgetItem(
                    title(template) + (" (updated while you label)" if is_auto_job(job) else "")
                ),
                QTableWidgetItem(words),
                QTableWidgetItem(short_time(started)),
            ]
            items[2].setToolTip(words)
            for col, item in enumerate(items):
                item.setData(Qt.UserRole, job["id"])
                self.setItem(row, col, item)
            if state in FAILED_STATES | CANCELLED_STATES:
                button = QPushButton("Resume")
                button.setToolTip("Continue this run; finished work is reused.")
                button.clicked.connect(lambda _=False, job_id=job["id"]: self.resume_requested.emit(job_id))
                self.setCellWidget(row, 4, button)
            else:
                self.removeCellWidget(row, 4)
        rows = min(max(len(jobs), 1), 6)
        self.setFixedHeight(
            self.horizontalHeader().height() + 4 + sum(self.rowHeight(r) for r in range(rows))
        )

    def _selected(self) -> None:
        items = self.selectedItems()
        if items:
            self.run_selected.emit(int(items[0].data(Qt.UserRole)))
