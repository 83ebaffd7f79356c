"""The "Local service" card: start and stop the model's HTTP service, its address and console."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSpinBox

from ...page import card


class ServiceCard(QObject):
    """Runs at most one service; ``run(fn, on_done, on_failed)`` is the page's background runner.

    Signals
    -------
    changed() : the service started or stopped.
    """

    changed = Signal()

    def __init__(self, workspace, run, report_error, parent=None):
        super().__init__(parent)
        self.ws, self.run, self.report_error = workspace, run, report_error
        self.service = None
        self.service_model: str | None = None
        self.service_project: str | None = None
        self.project: str | None = None
        self.model_id: str | None = None
        self.frame, layout = card(
            "Local service", "Other programs on this computer can ask the model for answers over HTTP."
        )
        self.state = QLabel("Not running")
        self.url = QLabel()
        self.url.setTextInteractionFlags(Qt.TextBrowserInteraction)
        self.url.setOpenExternalLinks(True)
        self.url.setMinimumWidth(10)
        self.button = QPushButton("Start service")
        self.button.setObjectName("Primary")
        self.button.clicked.connect(self.toggle)
        self.console_button = QPushButton("Open console")
        self.console_button.setToolTip("The service's page in your browser: try it and read how to call it.")
        self.console_button.clicked.connect(self.open_console)
        self.copy_button = QPushButton("Copy address")
        self.copy_button.clicked.connect(self.copy_address)
        self.port_label = QLabel("Port")
        self.port = QSpinBox()
        self.port.setRange(1024, 65535)
        self.port.setToolTip("The address's port; the model keeps it the next time it is served.")
        top = QHBoxLayout()
        top.addWidget(self.state)
        top.addWidget(self.url, 1)
        top.addWidget(self.port_label)
        top.addWidget(self.port)
        top.addWidget(self.button)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.copy_button)
        buttons.addWidget(self.console_button)
        layout.addLayout(top)
        layout.addLayout(buttons)
        self.hint = QLabel()
        self.hint.setObjectName("Muted")
        self.hint.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)
        self.show_state()

    def set_model(self, project: str | None, model_id: str | None) -> None:
        self.project, self.model_id = project, model_id
        self.show_state()
        if model_id is not None:  # the port it will be served on (read off the UI thread)
            ws = self.ws
            self.run(lambda state: ws.service_port(model_id), lambda port: self._show_port(model_id, port))

    def _show_port(self, model_id: str, port: int) -> None:
        if model_id == self.model_id and self.service is None:
            self.port.setValue(int(port))

    def show_state(self, starting: bool = False) -> None:
        running = self.service is not None
        self.button.setText("Stop service" if running else "Start service")
        self.button.setEnabled(not starting and (running or self.model_id is not None))
        self.console_button.setEnabled(running)
        self.copy_button.setEnabled(running)
        self.port.setEnabled(not running and not starting)
        self.port_label.setEnabled(not running and not starting)
        if starting:
            self.state.setText("Starting…")
            self.url.setText("")
        elif running:
            other = f" for '{self.service_project}'" if self.service_project != self.project else ""
            self.state.setText(f"<span style='color:#1e9e5a'>●</span> Running{other} at")
            self.url.setText(f"<a href='{self.service.url}'>{self.service.url}</a>")
            note = getattr(self.service, "note", "")
            self.hint.setText(
                (f"<span style='color:#c27c0e'>{note[:1].upper() + note[1:]}.</span> " if note else "")
                + f"From a program: <code>curl -F file=@photo.jpg {self.service.url}v1/predict"
                "</code>. It stops when you close ModelDesk."
            )
        else:
            self.state.setText("<span style='color:#9aa4b5'>●</span> Not running")
            self.url.setText("")
        self.hint.setVisible(running and not starting)

    def toggle(self) -> None:
        """Start the service on the current model, or stop the running one."""
        if self.service is not None:
            self.stop()
        elif self.model_id is not None:
            self.start()

    def start(self) -> None:
        """Start the local service for the current model (off the UI thread)."""
        model_id, project, ws, port = self.model_id, self.project, self.ws, self.port.value()
        self.show_state(starting=True)

        def done(handle):
            self.service, self.service_model, self.service_project = handle, model_id, project
            self.port.setValue(int(handle.url.rstrip("/").rsplit(":", 1)[1]))  # the one it got
            self.show_state()
            self.changed.emit()

        def failed(message, details):
            self.show_state()
            self.report_error("The service did not start", message, details)

        self.run(lambda state: ws.serve_model(model_id, port=port), done, on_failed=failed)

    def stop(self) -> None:
        """Stop the running service (off the UI thread)."""
        handle, self.service = self.service, None
        self.show_state(starting=True)
        self.state.setText("Stopping…")

        def done(_):
            self.show_state()
            self.changed.emit()

        self.run(lambda state: handle.stop(), done, title="The service did not stop cleanly")

    def copy_address(self) -> None:
        if self.service is not None:
            QGuiApplication.clipboard().setText(self.service.url)

    def open_console(self) -> None:
        if self.service is not None and not QDesktopServices.openUrl(QUrl(self.service.url)):
            self.report_error(
                "Could not open the console",
                f"No browser opened {self.service.url}. Open the address yourself.",
            )

    def shutdown(self) -> None:
        """Stop the service now (the app is closing)."""
        if self.service is not None:
            handle, self.service = self.service, None
            handle.stop(timeout=3.0)
