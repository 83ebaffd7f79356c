"""What an import did: added, merged as duplicates, refused (with the reason for each file)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from PySide6.QtCore import Qt

from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QLabel, QTreeWidget, QTreeWidgetItem,
                               QVBoxLayout, QWidget)


def merge_reports(reports: list[dict]) -> dict:
    """Sum several import reports (one per dropped path) into one."""
    total = {"added": 0, "duplicates": 0, "boxes": 0, "failed": [], "warnings": [], "stopped": False}
    for report in reports:
        total["added"] += int(report.get("added", 0))
        total["duplicates"] += int(report.get("duplicates", 0))
        total["boxes"] += int(report.get("boxes", 0))
        total["failed"] += list(report.get("failed", []))
        total["warnings"] += list(report.get("warnings", []))
        total["stopped"] = total["stopped"] or bool(report.get("stopped"))
    return total


def summary_line(report: dict) -> str:
    """'120 images added, 3 already there, 2 refused.'"""
    parts = [f"{report['added']:,} image{'s' if report['added'] != 1 else ''} added"]
    if report["duplicates"]:
        parts.append(f"{report['duplicates']:,} already in the project (merged)")
    if report["failed"]:
        parts.append(f"{len(report['failed']):,} refused")
    line = ", ".join(parts) + "."
    if report.get("stopped"):
        line = "Stopped: " + line
    return line


def _wrap(text: str, width: int = 72) -> str:
    """Reasons are sentences: break them over lines rather than cut them off."""
    return "\n".join(textwrap.wrap(text, width)) or text


class ImportSummaryDialog(QDialog):
    """Shows :func:`summary_line` and a readable list of refused files and warnings."""

    def __init__(self, report: dict, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Import finished" if not report.get("stopped") else "Import stopped")
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
