"""The Help menu: the guide to the current page (F1), the keyboard shortcuts (Ctrl+/), "Report a
problem…" (a zip of the logs and the environment, saved where the user picks, written off the UI
thread, then what to do with it) and "About ModelDesk"."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject, QStandardPaths, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox

from ..workers import run_task
from .error_dialog import show_error

log = logging.getLogger(__name__)


class HelpMenu(QObject):
    """Adds the Help menu to ``window`` (a QMainWindow with ``ws``, the Workspace) and runs its actions.

    Attributes
    ----------
    report_action, about_action : QAction
    task : TaskHandle or None
        The report being written, if any.
    """

    def __init__(self, window, workspace):
        super().__init__(window)
        self.window = window
        self.ws = workspace
        self.task = None
        self.about_dialog = None  # AboutDialog, made on first use (keeps start-up lean)
        self.file_dialog: QFileDialog | None = None
        self.last_report: Path | None = None
        menu = window.menuBar().addMenu("&Help")
        self.guide_dialog = None  # GuideDialog, made on first use
        self.guide_action = QAction("Guide to this page", self)
        self.guide_action.setShortcut(QKeySequence.HelpContents)  # F1
        self.guide_action.triggered.connect(
            lambda: self.show_guide(getattr(self.window, "current_page", None))
        )
        self.shortcuts_action = QAction("Keyboard shortcuts", self)
        self.shortcuts_action.setShortcut(QKeySequence("Ctrl+/"))
        self.shortcuts_action.triggered.connect(lambda: self.show_guide("shortcuts"))
        self.report_action = QAction("Report a problem…", self)
        self.report_action.setStatusTip("Save a zip of the logs and a description of this computer (no data)")
        self.report_action.triggered.connect(self.ask_report_path)
        self.about_action = QAction("About ModelDesk", self)
        self.about_action.triggered.connect(self.show_about)
        menu.addAction(self.guide_action)
        menu.addAction(self.shortcuts_action)
        menu.addSeparator()
        menu.addAction(self.report_action)
        menu.addSeparator()
        menu.addAction(self.about_action)

    def show_guide(self, page: str | None):
        """Show the guide (non-modal) on ``page``'s tab ("shortcuts": the shortcut sheet)."""
        from .guide import GuideDialog

        if self.guide_dialog is None:
            self.guide_dialog = GuideDialog(page, self.window)
        else:
            self.guide_dialog.show_page(page)
        self.guide_dialog.show()
        self.guide_dialog.raise_()
        return self.guide_dialog

    def show_about(self):
        """Show the About dialog (non-modal), creating it the first time."""
        from .about_dialog import AboutDialog

        if self.about_dialog is None:
            self.about_dialog = AboutDialog(self.window)
        self.about_dialog.show()
        self.about_dialog.raise_()
        return self.about_dialog

    def ask_report_path(self) -> QFileDialog:
        """Open the save dialog (non-blocking); the report is written once a file is chosen."""
        from modeldesk.app.problem_report import default_report_name

        folder = QStandardPaths.writableLocation(QStandardPaths.DesktopLocation) or str(Path.home())
        dialog = QFileDialog(
            self.window,
            "Save the problem report",
            str(Path(folder) / default_report_name()),
            "Zip archives (*.zip)",
        )
        dialog.setAcceptMode(QFileDialog.AcceptSave)
        dialog.setDefaultSuffix("zip")
        dialog.fileSelected.connect(self.write_report)
        self.file_dialog = dialog
        dialog.open()
        return dialog

    def write_report(self, path: str) -> None:
        """Write the report to ``path`` in the background; says where it went when done."""
        if not path or self.task is not None:
            return
        from modeldesk.app.problem_report import write_problem_report

        self.report_action.setEnabled(False)
        paths = self.ws.paths
        self.task = run_task(lambda _state: write_problem_report(paths, path), parent=self)
        self.task.finished.connect(self._written)
        self.task.failed.connect(self._failed)
        self.task.ended.connect(self._ended)

    def _written(self, path) -> None:
        self.last_report = Path(path)
        log.info("problem report written to %s", path)
        box = QMessageBox(
            QMessageBox.Information,
            "Problem report saved",
            f"The report is in {path}.\n\nWhat to do with it: send it to whoever helps you with ModelDesk "
            "(your IT contact, or the project's issue tracker), with a few sentences on what you did, what "
            "you expected and what happened instead.\n\nIt holds the app's logs and a description of this "
            "computer (your home folder written as ~), no images, labels or models.",
            QMessageBox.Ok,
            self.window,
        )
        show = box.addButton("Show in folder", QMessageBox.ActionRole)
        show.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(path).parent))))
        box.open()

    def _failed(self, message: str, details: str) -> None:
        show_error(
            self.window,
            "Could not save the problem report",
            message,
            details=details,
            log_file=self.ws.paths.log,
        )

    def _ended(self) -> None:
        self.task = None
        self.report_action.setEnabled(True)
