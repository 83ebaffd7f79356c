"""Questions that guard what cannot be undone, and asking for a new name; never blocking the UI."""

from __future__ import annotations

from PySide6.QtWidgets import QInputDialog, QLineEdit, QMessageBox


def confirm(parent, title: str, text: str, action: str, on_yes) -> QMessageBox:
    """Ask ``text`` with buttons ``action`` and Cancel (window-modal, not blocking); ``on_yes()`` runs
    when the user agrees. Returns the box (tests press its buttons)."""
    box = QMessageBox(QMessageBox.Warning, title, text, QMessageBox.Cancel, parent)
    yes = box.addButton(action, QMessageBox.DestructiveRole)
    box.setDefaultButton(QMessageBox.Cancel)
    box.finished.connect(lambda _result: box.clickedButton() is yes and on_yes())
    box.open()
    return box


def ask_name(parent, title: str, label: str, current: str, on_name) -> QInputDialog:
    """Ask for a new name (``current`` filled in); ``on_name(new)`` runs with a changed, non-empty name."""
    dialog = QInputDialog(parent)
    dialog.setWindowTitle(title)
    dialog.setLabelText(label)
    dialog.setTextEchoMode(QLineEdit.Normal)
    dialog.setTextValue(current)

    def chosen(value: str) -> None:
        value = value.strip()
        if value and value != current:
            on_name(value)

    dialog.textValueSelected.connect(chosen)
    dialog.open()
    return dialog
