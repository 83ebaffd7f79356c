"""A progress bar with a message, an ETA and a Cancel button, bound to a background task."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout

from ..wording import format_eta
from ..workers import TaskHandle


class ProgressPanel(QFrame):
    """Shows the progress of one :class:`TaskHandle`; hidden when idle.

    Signals
    -------
    cancel_requested()
        The user pressed Cancel (the attached handle is cancelled too).
    """

    cancel_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("Banner")
        self.title = QLabel()
        self.title.setStyleSheet("font-weight: 600;")
        self.detail = QLabel()
        self.detail.setObjectName("Muted")
        self.detail.setMinimumWidth(10)
        self.eta = QLabel()
        self.eta.setObjectName("Muted")
        self.bar = QProgressBar()
        self.bar.setTextVisible(True)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self._cancel)
        top = QHBoxLayout()
        top.addWidget(self.title)
        top.addWidget(self.detail, 1)
        top.addWidget(self.eta)
        row = QHBoxLayout()
        row.addWidget(self.bar, 1)
        row.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.addLayout(top)
        layout.addLayout(row)
        self._handle: TaskHandle | None = None
        self.hide()

    def attach(self, handle: TaskHandle, title: str) -> None:
        """Show the panel for ``handle`` until it ends."""
        self._handle = handle
        self.title.setText(title)
        self.detail.setText("")
        self.eta.setText("")
        self.bar.setRange(0, 0)
        self.cancel_button.setEnabled(True)
        self.cancel_button.setText("Cancel")
        handle.progress.connect(self.set_progress)
        handle.ended.connect(self._ended)
        self.show()

    def set_progress(self, done: int, total: int, message: str = "", eta_s: float = -1.0) -> None:
        """Update the bar (busy indicator while ``total`` is 0), the message and the ETA."""
        if total > 0:
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))
            self.bar.setFormat(f"{done:,} / {total:,}")
        else:
            self.bar.setRange(0, 0)
        metrics = self.detail.fontMetrics()
        self.detail.setText(
            metrics.elidedText(message, Qt.TextElideMode.ElideMiddle, max(60, self.detail.width()))
        )
        self.eta.setText(format_eta(eta_s))

    def _cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self.cancel_button.setEnabled(False)
        self.cancel_button.setText("Stopping…")
        self.cancel_requested.emit()

    def _ended(self) -> None:
        self._handle = None
        self.hide()
