"""What an import did: added, merged as duplicates, refused (with the reason for each file)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..wording import summary_line


def _wrap(text: str, width: int = 72) -> str:
    """Reasons are sentences: break them over lines rather than cut them off."""
    return "\n".join(textwrap.wrap(text, width)) or text


class ImportSummaryDialog(QDialog):
    """Shows :func:`summary_line` and a readable list of refused files and warnings."""

    def __init__(self, report: dict, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("What the import left out")
        self.setMinimumSize(560, 200)
        self.report = report
        self.headline = QLabel(summary_line(report))
        self.headline.setStyleSheet("font-size: 15px; font-weight: 600;")
        self.headline.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.headline)
        self.problems = QTreeWidget()
        self.problems.setHeaderLabels(["File", "Why it was not imported"])
        self.problems.setRootIsDecorated(False)
        self.problems.setAlternatingRowColors(True)
        self.problems.setTextElideMode(Qt.ElideMiddle)
        for failure in report.get("failed", []):
            item = QTreeWidgetItem([Path(failure["file"]).name or failure["file"], _wrap(failure["reason"])])
            item.setToolTip(0, failure["file"])
            item.setToolTip(1, failure["reason"])
            self.problems.addTopLevelItem(item)
        for entry in report.get("failed_summary", []):  # failures beyond the listed ones, by reason
            item = QTreeWidgetItem([f"{entry['count']:,} more files", _wrap(entry["reason"])])
            item.setToolTip(1, entry["reason"])
            self.problems.addTopLevelItem(item)
        for warning in report.get("warnings", []):
            item = QTreeWidgetItem(["(note)", _wrap(warning)])
            item.setToolTip(1, warning)
            self.problems.addTopLevelItem(item)
        self.problems.setColumnWidth(0, 200)
        if self.problems.topLevelItemCount():
            layout.addWidget(QLabel("Not imported, and notes:"))
            layout.addWidget(self.problems, 1)
            self.resize(720, 420)
        else:
            self.problems.hide()
        buttons = QDialogButtonBox(QDialogButtonBox.Ok)
        buttons.accepted.connect(self.accept)
        layout.addWidget(buttons)
