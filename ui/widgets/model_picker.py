"""The "which model" combo box that the Evaluate and Deploy pages share."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox

from modeldesk.app.keep_up import is_auto_model

from ..wording import model_title
from .elided_combo import ElidedComboBox

#: the most characters of a title the picker makes room for
MAX_CHARS = 30


class ModelPicker(ElidedComboBox):
    """The project's models, newest first, as "Accurate, 02 Dec 17:07, 99%".

    Signals
    -------
    picked(str) : the user chose this model (not emitted when the list is filled).
    """

    picked = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(16)
        self.setToolTip("Which of this project's trained models to look at")
        self.activated.connect(lambda index: self.itemData(index) and self.picked.emit(self.itemData(index)))

    def set_models(
        self, models: list[dict], current: str | None, recipe_titles: dict | None = None
    ) -> str | None:
        """Show ``models`` (newest first) without signals; returns the id shown: ``current`` while it
        exists, else the newest the user trained (an "Improve as I label" run only when there is no other)."""
        self.blockSignals(True)
        self.clear()
        titles = [model_title(model, recipe_titles) for model in models]
        # wide enough for "Accurate, 03 Dec 14:35, 93%" whole; a longer title is elided, its tooltip has it all
        self.setMinimumContentsLength(min(max(map(len, titles), default=16), MAX_CHARS))
        for model, title in zip(models, titles):
            self.addItem(title, model["id"])
            self.setItemData(self.count() - 1, f"{title} (model {model['id']})", 3)  # Qt.ToolTipRole
        if not any(m["id"] == current for m in models):
            chosen = [m for m in models if not is_auto_model(m)] or models
            current = chosen[0]["id"] if chosen else None
        self.setCurrentIndex(max(self.findData(current), 0) if current else -1)
        self.blockSignals(False)
        return current
