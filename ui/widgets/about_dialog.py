"""The About dialog: ModelDesk's version, how it is installed, and the bundled components with
their versions and licences, including the note on replacing Qt (LGPL-3.0)."""

from __future__ import annotations

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from modeldesk.app import about


class AboutDialog(QDialog):
    """Non-modal window with the version, the install folder and the components table."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("About ModelDesk")
        self.setMinimumSize(620, 480)
        info = about.summary()
        self.components = about.components()
        for row in self.components:
            if row["distribution"] == "PySide6-Essentials":
                row["version"] = f"{row['version']} (Qt {qVersion()})"

        title = QLabel(f"<b style='font-size:18px'>ModelDesk {info['modeldesk']}</b>")
        caption = QLabel("Build models from your own data, on your own computer, offline. Apache-2.0.")
        caption.setObjectName("Muted")
        where = QLabel(
            f"{info['install'].capitalize()}, Python {info['python']}, {info['platform']}<br>"
            f"Installed in <code>{info['install_dir']}</code>"
        )
        where.setTextInteractionFlags(Qt.TextSelectableByMouse)
        where.setWordWrap(True)

        self.table = QTableWidget(len(self.components), 3)
        self.table.setHorizontalHeaderLabels(["Component", "Version", "Licence"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        for row, component in enumerate(self.components):
            for column, key in enumerate(("name", "version", "licence")):
                item = QTableWidgetItem(component[key])
                item.setToolTip(component["url"])
                self.table.setItem(row, column, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeToContents)

        self.qt_notice = QLabel(about.QT_NOTICE.format(where=about.qt_library_dir()))
        self.qt_notice.setWordWrap(True)
        self.qt_notice.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.qt_notice.setObjectName("Muted")

        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        self.copy_button = QPushButton("Copy details")
        buttons.addButton(self.copy_button, QDialogButtonBox.ActionRole)
        self.copy_button.clicked.connect(self.copy_details)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(caption)
        layout.addWidget(where)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.qt_notice)
        layout.addWidget(buttons)

    def details_text(self) -> str:
        """Plain text of everything the dialog shows (what "Copy details" puts on the clipboard)."""
        info = about.summary()
        lines = [
            f"ModelDesk {info['modeldesk']} ({info['install']}), Python {info['python']}, {info['platform']}",
            f"Installed in {info['install_dir']}",
            f"PySide6 {pyside_version}, Qt {qVersion()}",
            "",
        ]
        lines += [f"{c['name']} {c['version']}: {c['licence']}" for c in self.components]
        return "\n".join(lines) + "\n"

    def copy_details(self) -> None:
        QGuiApplication.clipboard().setText(self.details_text())
