"""A readable error dialog with the log file one click away."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QVBoxLayout,
    QWidget,
)

log = logging.getLogger(__name__)


class ErrorDialog(QDialog):
    """Says what went wrong in one sentence, shows details on demand, opens the log file.

    Parameters
    ----------
    title : str
        What the user was doing ("Import failed").
    message : str
        The readable cause, naming the file where there is one.
    details : str, optional
        A traceback or longer text, hidden behind "Show details".
    log_file : Path, optional
        Enables the "Open log file" button.
    """

    def __init__(
        self,
        title: str,
        message: str,
        details: str | None = None,
        log_file: Path | None = None,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setMinimumWidth(460)
        self.log_file = Path(log_file) if log_file else None

        icon = QLabel()
        icon.setPixmap(self.style().standardIcon(QStyle.SP_MessageBoxCritical).pixmap(40, 40))
        heading = QLabel(f"<b>{title}</b>")
        body = QLabel(message)
        body.setWordWrap(True)
        body.setObjectName("ErrorMessage")
        text = QVBoxLayout()
        text.addWidget(heading)
        text.addWidget(body)
        top = QHBoxLayout()
        top.addWidget(icon)
        top.addLayout(text, 1)

        self.details = QPlainTextEdit(details or "")
        self.details.setReadOnly(True)
        self.details.setVisible(False)
        self.details.setMinimumHeight(160)

        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        self.details_button = None
        if details:
            self.details_button = QPushButton("Show details")
            self.details_button.setCheckable(True)
            self.details_button.toggled.connect(self._toggle_details)
            buttons.addButton(self.details_button, QDialogButtonBox.ActionRole)
        self.log_button = QPushButton("Open log file")
        self.log_button.setEnabled(self.log_file is not None)
        self.log_button.clicked.connect(self.open_log)
        buttons.addButton(self.log_button, QDialogButtonBox.ActionRole)

        self.log_note = QLabel()
        self.log_note.setObjectName("Muted")
        self.log_note.setWordWrap(True)
        self.log_note.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.log_note.hide()
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.log_note)
        layout.addWidget(self.details, 1)
        layout.addWidget(buttons)

    def _toggle_details(self, shown: bool) -> None:
        self.details.setVisible(shown)
        self.details_button.setText("Hide details" if shown else "Show details")
        self.adjustSize()

    def open_log(self) -> bool:
        """Open the log file with the system's viewer; False when it could not be opened."""
        if self.log_file is None:
            return False
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.log_file.touch(exist_ok=True)
        ok = QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.log_file)))
        if not ok:  # say so, with the path to open by hand, instead of doing nothing
            log.warning("could not open the log file %s", self.log_file)
            self.log_note.setText(f"No program could open the log file. It is at {self.log_file}")
            self.log_note.show()
        return ok


def show_error(
    parent: QWidget | None, title: str, message: str, details: str | None = None, log_file: Path | None = None
) -> ErrorDialog:
    """Log the error and show an :class:`ErrorDialog` (non-blocking); returns the dialog."""
    log.error("%s: %s", title, message)
    dialog = ErrorDialog(title, message, details, log_file, parent)
    dialog.setModal(True)
    dialog.show()
    return dialog
