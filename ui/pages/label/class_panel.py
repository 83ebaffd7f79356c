"""The classes beside the sample on the Label page: a button per class with its key and its count,
and the field to add a class.

Keys are stable: a class named by a digit gets that digit, every other class keeps the key it was
given (remembered per project), and a new class takes the first free key. Adding a class never
changes what an existing key does.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QLabel, QLineEdit, QMenu, QPushButton, QVBoxLayout, QWidget

from ...settings import settings
from ...wording import plural

#: The labeling keys, in the order they are handed out.
KEYS = "1234567890"


def assign_keys(labels, previous: dict | None = None) -> dict[str, str]:
    """``label -> key``: digit-named classes get their digit, the others keep ``previous`` keys
    where still free, and the rest take the first free keys in name order (no key once all are used).

    >>> assign_keys(["cat", "dog"])
    {'cat': '1', 'dog': '2'}
    >>> assign_keys(["bird", "cat", "dog"], {"cat": "1", "dog": "2"})["bird"]
    '3'
    >>> assign_keys(["0", "1", "9"])
    {'0': '0', '1': '1', '9': '9'}
    """
    labels = sorted(labels)
    keys = {label: label for label in labels if len(label) == 1 and label in KEYS}
    taken = set(keys.values())
    for label in labels:
        key = (previous or {}).get(label)
        if label not in keys and key and key in KEYS and key not in taken:
            keys[label] = key
            taken.add(key)
    for label in labels:
        if label not in keys:
            free = next((k for k in KEYS if k not in taken), None)
            if free is None:
                break
            keys[label] = free
            taken.add(free)
    return {label: keys[label] for label in labels if label in keys}


SWATCH = 12  # px, the side of a class's colour square


def swatch_icon(color: str) -> QIcon:
    """A small rounded square in ``color`` (a class's colour on its button)."""
    pixmap = QPixmap(SWATCH, SWATCH)
    pixmap.fill(Qt.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.Antialiasing)
    painter.setPen(QColor(0, 0, 0, 96))
    painter.setBrush(QColor(color))
    painter.drawRoundedRect(0.5, 0.5, SWATCH - 1, SWATCH - 1, 3, 3)
    painter.end()
    return QIcon(pixmap)


class ClassButton(QPushButton):
    """A class on a button: its key and name on the left (after its colour, where classes have one),
    how many examples it has on the right."""

    def __init__(self, key: str, name: str, parent=None):
        super().__init__(f"{key}    {name}" if key else f"      {name}", parent)
        self.setObjectName("ClassButton")
        self.setCheckable(True)
        self.setFocusPolicy(Qt.NoFocus)
        self.key, self.name, self.count, self.noun = key, name, 0, "example"
        self.setToolTip(f"Key {key}" if key else "No key: click it")
        self.color = ""

    def set_color(self, color: str | None) -> None:
        """Show ``color`` (``#rrggbb``) as a swatch before the key, or no swatch."""
        self.color = color or ""
        self.setIcon(swatch_icon(color) if color else QIcon())
        self.setIconSize(QSize(SWATCH, SWATCH))

    def set_count(self, count: int, noun: str = "example") -> None:
        self.count, self.noun = int(count), noun
        key = f"Key {self.key} · " if self.key else ""
        self.setToolTip(f"{key}{plural(self.count, noun, 'boxes' if noun == 'box' else None)}")
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().paintEvent(event)
        painter = QPainter(self)
        color = self.palette().highlightedText().color() if self.isChecked() else QColor("#8a93a3")
        painter.setPen(color)
        painter.drawText(
            self.rect().adjusted(0, 0, -12, 0), Qt.AlignRight | Qt.AlignVCenter, f"{self.count:,}"
        )


class ClassPanel(QWidget):
    """Class buttons with stable keys, counts, and the "add a class" field.

    Signals
    -------
    chosen(str)
        A class button was clicked.
    add_requested(str)
        A new class name was entered (the field keeps the focus, so the next name can follow).
    rename_requested(str), delete_requested(str)
        Chosen from a class button's menu (right click).
    """

    chosen = Signal(str)
    add_requested = Signal(str)
    rename_requested = Signal(str)
    delete_requested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.project: str | None = None
        self.labels: list[str] = []
        self.keys: dict[str, str] = {}
        self.buttons: list[ClassButton] = []
        self.colors: dict[str, str] = {}  # class name -> "#rrggbb", where the classes are drawn in colours
        self.title = QLabel("Classes")
        self.title.setStyleSheet("font-weight: 600; font-size: 15px;")
        self.hint = QLabel()
        self.hint.setObjectName("Muted")
        self.hint.setWordWrap(True)
        self.box = QVBoxLayout()
        self.box.setSpacing(6)
        self.new_class = QLineEdit()
        self.new_class.setPlaceholderText("Add a class: type a name, press Enter")
        self.new_class.setToolTip("Right-click a class to rename or delete it.")
        self.new_class.returnPressed.connect(self.submit)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        layout.addWidget(self.title)
        layout.addWidget(self.hint)
        layout.addLayout(self.box)
        layout.addWidget(self.new_class)

    def set_project(self, project: str | None) -> None:
        self.project = project
        self.labels, self.keys = [], {}
        self._rebuild()

    def set_labels(self, labels) -> None:
        """Show ``labels`` (sorted by name); keys follow :func:`assign_keys` and are remembered."""
        labels = sorted(labels)
        if labels == self.labels and self.buttons:
            return
        previous = {**self._saved_keys(), **self.keys}
        self.labels = labels
        self.keys = assign_keys(labels, previous)
        self._save_keys()
        self._rebuild()

    def _rebuild(self) -> None:
        for button in self.buttons:
            self.box.removeWidget(button)
            button.deleteLater()
        self.buttons = []
        for label in self.labels:
            button = ClassButton(self.keys.get(label, ""), label)
            button.set_color(self.colors.get(label))
            button.clicked.connect(lambda _checked=False, name=label: self.chosen.emit(name))
            button.setContextMenuPolicy(Qt.CustomContextMenu)
            button.customContextMenuRequested.connect(lambda pos, b=button: self._menu(b, pos))
            self.box.addWidget(button)
            self.buttons.append(button)

    def _menu(self, button, pos) -> None:
        menu = QMenu(button)
        menu.addAction(f"Rename '{button.name}'…", lambda: self.rename_requested.emit(button.name))
        menu.addAction(f"Delete '{button.name}'…", lambda: self.delete_requested.emit(button.name))
        menu.popup(button.mapToGlobal(pos))

    def rename_key(self, old: str, new: str) -> None:
        """A renamed class keeps its key (unless ``new`` is a digit, or exists and has its own)."""
        if old in self.keys and new not in self.keys:
            self.keys[new] = self.keys.pop(old)
            self._save_keys()

    def label_for_key(self, key: str) -> str | None:
        """The class pressing ``key`` chooses (None when no class has it)."""
        return next((label for label, k in self.keys.items() if k == key), None)

    def set_counts(self, counts: dict[str, int], noun: str = "example") -> None:
        for button in self.buttons:
            button.set_count(counts.get(button.name, 0), noun)

    def set_colors(self, colors: dict) -> None:
        """The classes' colours (``{name: "#rrggbb"}``; empty: the classes have none) as swatches."""
        self.colors = dict(colors or {})
        for button in self.buttons:
            button.set_color(self.colors.get(button.name))

    def set_checked(self, names: set[str]) -> None:
        for button in self.buttons:
            button.setChecked(button.name in names)

    def submit(self) -> None:
        """Add the class typed in the field; the field keeps the focus for the next name."""
        name = self.new_class.text().strip()
        self.new_class.clear()
        if name:
            self.add_requested.emit(name)

    # -- remembered keys (per project, in the app's settings) ------------------------------------

    def _settings_key(self) -> str:
        return f"label_keys/{self.project}"

    def _saved_keys(self) -> dict:
        if not self.project:
            return {}
        saved = settings().value(self._settings_key())
        return dict(saved) if isinstance(saved, dict) else {}

    def _save_keys(self) -> None:
        if self.project:
            settings().setValue(self._settings_key(), dict(self.keys))
