"""Start the desktop app: QApplication setup (high-DPI, identity, theme, settings) and the main window."""

from __future__ import annotations

import logging
import sys

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from . import theme
from .settings import APPLICATION, ORGANIZATION, settings
from .ui_thread_gc import UiThreadCollector

log = logging.getLogger(__name__)


def create_application(argv: list[str] | None = None) -> QApplication:
    """Return the QApplication, creating and configuring it if needed.

    High-DPI: Qt 6 scales by the screen's device pixel ratio; fractional factors are passed
    through (no rounding) so 125 % and 150 % screens look right. The theme follows the
    system's light/dark scheme unless the user picked one (setting ``ui/theme``).
    """
    app = QApplication.instance()
    if app is None:
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        app = QApplication(list(argv) if argv is not None else sys.argv[:1])
    if not QCoreApplication.organizationName():
        QCoreApplication.setOrganizationName(ORGANIZATION)
    if not QCoreApplication.applicationName() or QCoreApplication.applicationName() == "python3":
        QCoreApplication.setApplicationName(APPLICATION)
    QGuiApplication.setApplicationDisplayName(APPLICATION)
    QGuiApplication.setDesktopFileName("modeldesk")
    theme.apply_theme(app, str(settings().value("ui/theme", "system")))
    return app


def run(workspace=None) -> int:
    """Open the desktop app on ``workspace`` (a Workspace, a folder, or None for the default).

    Returns the exit code of the Qt event loop.
    """
    from modeldesk.app.workspace import Workspace

    from .main_window import MainWindow
    from .platform_check import check_window_libraries

    if QApplication.instance() is None and (missing := check_window_libraries()):
        print(missing, file=sys.stderr)  # before Qt, which would abort the process (exit 134)
        log.error("window libraries missing: %s", missing.splitlines()[0])
        return 1
    app = create_application()
    collector = UiThreadCollector(parent=app).start()  # never destroy a widget on a worker thread
    ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    window = MainWindow(ws)
    window.show()
    collector.freeze()
    try:
        return app.exec()
    finally:
        collector.stop()
        if not isinstance(workspace, Workspace):
            ws.close()
