"""Renaming and deleting classes from the Label page (a class button's menu), with a confirmation that
says what a delete takes away."""

from __future__ import annotations

from PySide6.QtCore import QObject

from ...widgets.confirm import ask_name, confirm
from ...wording import plural


class ClassEditor(QObject):
    """Rename or delete a class of the page's project; the page re-reads everything afterwards."""

    def __init__(self, page):
        super().__init__(page)
        self.page = page
        self.dialog = None
        page.panel.rename_requested.connect(self.ask_rename)
        page.panel.delete_requested.connect(self.ask_delete)

    def ask_rename(self, name: str) -> None:
        self.dialog = ask_name(
            self.page,
            "Rename class",
            f"New name for '{name}' (an existing name merges the two classes):",
            name,
            lambda new: self.rename(name, new),
        )

    def ask_delete(self, name: str) -> None:
        count = self.page.counts.get(name, 0)
        noun = self.page.annotator.noun if self.page.annotator is not None else "example"
        what = plural(count, noun, "boxes" if noun == "box" else None)
        self.dialog = confirm(
            self.page,
            "Delete class",
            f"Delete the class '{name}'? Its {what} lose this "
            "label; the samples themselves stay in the project.",
            "Delete class",
            lambda: self.delete(name),
        )

    def rename(self, old: str, new: str) -> None:
        """Rename ``old`` to ``new`` everywhere (its key goes with it)."""
        page, ws, project = self.page, self.page.ws, self.page.project
        page.panel.rename_key(old, new)
        page.run(
            lambda state: ws.rename_class(project, old, new),
            self._changed,
            title="Could not rename the class",
        )

    def delete(self, name: str) -> None:
        page, ws, project = self.page, self.page.ws, self.page.project
        page.run(
            lambda state: ws.delete_class(project, name), self._changed, title="Could not delete the class"
        )

    def _changed(self, _result=None) -> None:
        self.page.undo_stack.clear()  # the annotations it would put back may name the old class
        self.page.undo_button.setEnabled(False)
        self.page.refresh()
        self.page.status_changed.emit()
