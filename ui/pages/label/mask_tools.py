"""The mask annotator's tools beside the photo: the tool buttons, the brush size, the class being
painted (in its colour), zoom, undo and redo, and a line that says what the tool does."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QButtonGroup,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from .mask_editor import SIZE_LIMITS, TOOLS
from .mask_overlay import class_color

#: What each tool does, in a sentence.
TOOL_HINTS = {
    "brush": "drag to paint the class. [ and ] change the size.",
    "eraser": "drag to take the class off (back to not labeled).",
    "polygon": "click the corners; click the first one, double-click or press Enter to fill it.",
    "fill": "click inside an outline to fill the area it closes with the class.",
    "assist": "click a region to add it (Size sets how large regions are), or drag a rough box "
    "around an object to find it.",
}


class Swatch(QWidget):
    """A small square in a class's colour."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFixedSize(14, 14)
        self.color = QColor()

    def set_color(self, color: QColor) -> None:
        self.color = QColor(color)
        self.update()

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt name)
        if self.color.isValid():
            painter = QPainter(self)
            painter.setPen(QColor("#00000060"))
            painter.setBrush(self.color)
            painter.drawRoundedRect(self.rect().adjusted(0, 0, -1, -1), 3, 3)


def _button(text: str, tip: str, slot) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName("MaskTool")
    button.setToolTip(tip)
    button.setFocusPolicy(Qt.NoFocus)  # the keys stay with the photo
    button.clicked.connect(slot)
    return button


class MaskTools(QWidget):
    """Buttons and the size slider for a :class:`~.mask_editor.MaskEditor`; follows its state."""

    def __init__(self, editor, parent=None, *, tools=None, hints=None, erase_text=None):
        """``tools``: the tools offered (default all); ``hints``: their sentences instead of
        :data:`TOOL_HINTS`; ``erase_text``: what the eraser says it does."""
        super().__init__(parent)
        self.editor = editor
        self.hints = {**TOOL_HINTS, **(hints or {})}
        self.erase_text = erase_text or "Erasing: back to not labeled"
        offered = {tool: TOOLS[tool] for tool in (tools or TOOLS)}
        self.title = QLabel("Tools")
        self.title.setStyleSheet("font-weight: 600; font-size: 15px;")
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QPushButton] = {}
        grid = QGridLayout()
        grid.setSpacing(6)
        for index, (tool, (name, key)) in enumerate(offered.items()):
            button = _button(name, f"{name} (key {key})", lambda _c=False, t=tool: editor.set_tool(t))
            button.setCheckable(True)
            self.group.addButton(button)
            self.buttons[tool] = button
            grid.addWidget(button, index // 3, index % 3)
        self.size_slider = QSlider(Qt.Horizontal)
        self.size_slider.setRange(*SIZE_LIMITS)
        self.size_slider.setFocusPolicy(Qt.NoFocus)
        self.size_slider.valueChanged.connect(editor.set_size)
        self.size_label = QLabel()
        self.size_label.setMinimumWidth(56)
        size_row = QHBoxLayout()
        size_row.addWidget(QLabel("Size"))
        size_row.addWidget(self.size_slider, 1)
        size_row.addWidget(self.size_label)
        self.swatch = Swatch()
        self.class_label = QLabel()
        class_row = QHBoxLayout()
        class_row.addWidget(self.swatch)
        class_row.addWidget(self.class_label, 1)
        self.undo_button = _button("Undo", "Undo (Ctrl+Z)", editor.undo)
        self.redo_button = _button("Redo", "Redo (Ctrl+Shift+Z)", editor.redo)
        self.zoom_out = _button("−", "Zoom out (mouse wheel)", lambda: editor.zoom(0.8))
        self.fit_button = _button("Fit", "Show the whole photo", lambda: editor.canvas.fit())
        self.zoom_in = _button(
            "+", "Zoom in (mouse wheel; right-drag moves the photo)", lambda: editor.zoom(1.25)
        )
        actions = QHBoxLayout()
        actions.setSpacing(6)
        for button in (self.undo_button, self.redo_button):
            actions.addWidget(button, 2)
        actions.addSpacing(6)
        for button in (self.zoom_out, self.fit_button, self.zoom_in):
            actions.addWidget(button, 1)
        self.hint = QLabel()
        self.hint.setObjectName("Muted")
        self.hint.setWordWrap(True)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setToolTip("The classes painted on this photo, in their colours.")
        self.status = QLabel()
        self.status.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        for item in (self.title, grid, size_row, class_row, actions, self.hint, self.legend, self.status):
            layout.addLayout(item) if isinstance(item, (QHBoxLayout, QGridLayout)) else layout.addWidget(item)
        self.class_name = ""
        editor.state_changed.connect(self.sync)
        self.sync()

    def set_legend(self, classes: list[tuple[int, str]]) -> None:
        """Show the classes on the photo, ``(index, name)`` each, as coloured squares with names."""
        items = [
            f'<span style="color:{class_color(index).name()}">■</span>&nbsp;{html.escape(name)}'
            for index, name in classes
        ]
        self.legend.setText("On this photo: " + " &nbsp; ".join(items) if items else "")
        self.legend.setVisible(bool(items))

    def set_class_name(self, name: str) -> None:
        self.class_name = name
        self.sync()

    def sync(self) -> None:
        """Show the editor's tool, size, class, undo/redo and what it is busy with."""
        editor = self.editor
        self.buttons[editor.tool].setChecked(True)
        self.size_slider.blockSignals(True)
        self.size_slider.setValue(editor.size)
        self.size_slider.setEnabled(editor.tool in ("brush", "eraser", "assist"))
        self.size_slider.blockSignals(False)
        self.size_label.setText(f"{editor.size} px")
        if editor.tool == "eraser":
            self.swatch.set_color(QColor())
            self.class_label.setText(self.erase_text)
        elif self.class_name:
            own = editor.overlay.colors  # the overlay's own colours, when it has them
            self.swatch.set_color(QColor(own[editor.value % len(own)]) if own else class_color(editor.value))
            self.class_label.setText(f"Painting <b>{self.class_name}</b>")
        else:
            self.swatch.set_color(QColor())
            self.class_label.setText("Add a class below to start painting")
        self.undo_button.setEnabled(editor.history.can_undo)
        self.redo_button.setEnabled(editor.history.can_redo)
        name, key = TOOLS[editor.tool]
        self.hint.setText(f"{name} ({key}): {self.hints[editor.tool]}")
        self.status.setText(editor.message)
        self.status.setVisible(bool(editor.message))
