"""The Train page's banner of facts: the project's data in one line, and this computer's hardware."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QPushButton

from ...wording import describe_hardware, few_examples, plural


class FactsBanner(QFrame):
    """The facts: "Your data" (with a button to labeling when it is not ready) and "This computer"."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("Banner")
        self.hardware = QLabel("Looking at this computer…")
        self.hardware.setObjectName("Muted")
        self.hardware.setWordWrap(True)
        self.hardware.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.data_summary = QLabel()
        self.data_summary.setWordWrap(True)
        self.go_label = QPushButton("Go to labeling")
        self.go_label.hide()
        grid = QGridLayout(self)
        grid.setContentsMargins(12, 8, 12, 8)
        grid.addWidget(QLabel("<b>Your data</b>"), 0, 0)
        grid.addWidget(self.data_summary, 0, 1)
        grid.addWidget(self.go_label, 0, 2)
        grid.addWidget(QLabel("<b>This computer</b>"), 1, 0)
        grid.addWidget(self.hardware, 1, 1, 1, 2)
        grid.setColumnStretch(1, 1)

    def show_data(self, info: dict, stats: dict, readiness: str) -> None:
        """Labeled of all, in how many classes; a warning for a small class; "Go to labeling" when
        ``readiness`` (why it cannot train) is not empty."""
        counts = {label: n for label, n in (stats.get("labels") or {}).items() if n}
        # samples with any label (a photo with three tags is one labeled photo, not three)
        labeled = stats.get("labeled", 0)
        kinds = (
            plural(len(counts), "tag", "tags")
            if info.get("target") == "tags"
            else plural(len(counts), "class", "classes")
        )
        text = f"{labeled:,} labeled of {stats.get('samples', 0):,} in {kinds}"
        few = few_examples(info)
        if counts and not readiness:
            smallest = min(counts, key=counts.get)
            if counts[smallest] < few:
                text += (
                    f". <span style='color:#c27c0e'>'{smallest}' has only {counts[smallest]}: "
                    "label a few more for a reliable model.</span>"
                )
        self.data_summary.setText(text)
        self.go_label.setVisible(bool(readiness))

    def show_hardware(self, resources: dict) -> None:
        self.hardware.setText(describe_hardware(resources))
        self.hardware.setToolTip(
            "\n".join(
                f"{name}: {'works' if ok else 'not available'}"
                for name, ok in (resources.get("providers") or {}).items()
            )
        )
