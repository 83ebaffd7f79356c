"""Help that helps: a short guide to each page (what to do here, what its numbers mean) and the sheet of
keyboard shortcuts, both opened from the Help menu (F1 and Ctrl+/)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QScrollArea, QTabWidget, QVBoxLayout

#: page key -> (title, what to do there, what its numbers mean); plain words, no jargon left unexplained
PAGES = {
    "data": (
        "Data",
        "Add what the model learns from: drop files, folders or zip archives on the window, or use Add files. "
        "Photos sorted in one folder per class are labeled by their folder; COCO, Pascal VOC, YOLO and CSV "
        "files bring their labels with them. Anything that cannot be read is listed with the reason, and "
        "the rest of the import goes on.",
        "The bars count the examples of each class. Under about 10 examples a class is hard to learn: the "
        "page warns about it. A model needs at least two classes to tell apart.",
    ),
    "label": (
        "Label",
        "Give each example its class with a click or the key shown on the class's button, or draw boxes "
        "around the objects. After a first model is trained, its guess is shown as a suggestion: press "
        "Enter to accept it. 'Label these next' shows the examples the model is least sure about, where a "
        "label teaches it most.",
        "The counter says how many of the project's examples are labeled. A suggestion's percentage is how "
        "sure the model is: the lower it is, the more often the guess is wrong.",
    ),
    "train": (
        "Train",
        "Pick a recipe and press Train. Fast trains in seconds and is a good first try; Accurate takes "
        "longer and usually does better; the estimate before you start says how long on this computer. "
        "You can keep labeling while it trains.",
        "The chart shows the training loss (lower is better) and how often the model is right as it "
        "learns. The time left is re-estimated from the pace so far.",
    ),
    "evaluate": (
        "Evaluate",
        "See how good the model is on examples it never trained on, and where it goes wrong. Click a cell "
        "of the answer matrix to see those examples; click one to fix its label.",
        "Accuracy: how often the top answer is right, on examples kept aside from training; with few of "
        "them it can move by several points from one run to the next. F1 balances finding every example "
        "of a class against being right when it names it. For boxes, 'finds N of 100 objects' counts the "
        "objects with a box that overlaps them by at least half; 'mAP 0.5:0.95' averages the same over "
        "stricter overlaps, so it rewards boxes that sit exactly on the object.",
    ),
    "deploy": (
        "Deploy",  # the sidebar's name for the step (the page itself is headed "Use your model")
        "Try the model on a new file, serve it to other programs on this computer (a local web service with "
        "a test page), export it as one ONNX file, make a smaller and faster copy, or build a bundle that "
        "runs without ModelDesk. Import a model made elsewhere from the button at the top right.",
        "A smaller copy is kept only when its loss of accuracy, measured on your labeled examples, stays "
        "within the stated bound; the table lists every version tried and why it was kept or not.",
    ),
}

#: (where, keys, what they do): every shortcut the app binds
SHORTCUTS = (
    ("Everywhere", "F1", "the guide to the page you are on"),
    ("Everywhere", "Ctrl+/", "this list of shortcuts"),
    ("Data", "Delete", "remove the selected examples (asks first)"),
    ("Data", "Ctrl+Z", "bring back what was just removed"),
    ("Label", "1 … 9, 0", "give the example the class shown on that key's button"),
    ("Label", "Enter", "accept the model's suggestion"),
    ("Label", "Left, Right", "previous, next example"),
    ("Label", "Ctrl+Z", "undo the last label"),
    ("Label", "Delete, Backspace", "remove the selected box"),
    ("Label, masks", "B, E, P, F, A", "brush, eraser, polygon, fill, assist"),
    ("Label, masks", "[  ]", "smaller, larger brush"),
    ("Label, masks", "Ctrl+Shift+Z", "redo"),
    ("Label, masks", "Wheel, right-drag", "zoom, move the photo"),
    ("Data, Deploy", "Ctrl+Enter", "add or try the text you typed"),
)


def guide_html(key: str) -> str:
    """The guide to page ``key`` as rich text."""
    title, todo, numbers = PAGES[key]
    return (
        f"<h3>{title}</h3><p><b>What to do here.</b> {todo}</p><p><b>What the numbers mean.</b> {numbers}</p>"
    )


def shortcuts_html() -> str:
    """The shortcut sheet as a rich-text table."""
    rows = "".join(
        f"<tr><td>{where}</td><td><b>{keys}</b></td><td>{what}</td></tr>" for where, keys, what in SHORTCUTS
    )
    return f"<table cellpadding='4'><tr><th align='left'>Page</th><th align='left'>Keys</th><th align='left'>Does</th></tr>{rows}</table>"


def _text(html: str) -> QScrollArea:
    label = QLabel(html)
    label.setWordWrap(True)
    label.setTextFormat(Qt.RichText)
    label.setAlignment(Qt.AlignTop | Qt.AlignLeft)
    label.setContentsMargins(8, 8, 8, 8)
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setWidget(label)
    return scroll


class GuideDialog(QDialog):
    """A tab per page with its guide, opened on ``page``, and a tab of keyboard shortcuts."""

    def __init__(self, page: str | None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("ModelDesk guide")
        self.resize(640, 500)  # the shortcut sheet whole, without scrolling
        self.tabs = QTabWidget()
        for key, (title, _todo, _numbers) in PAGES.items():
            self.tabs.addTab(_text(guide_html(key)), title)
        self.tabs.addTab(_text(shortcuts_html()), "Keyboard shortcuts")
        self.show_page(page)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(buttons)

    def show_page(self, page: str | None) -> None:
        """Open the tab of ``page`` ("shortcuts" for the shortcut sheet; the first page when unknown)."""
        keys = list(PAGES)
        index = len(keys) if page == "shortcuts" else keys.index(page) if page in PAGES else 0
        self.tabs.setCurrentIndex(index)
