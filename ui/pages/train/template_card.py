"""Recipe cards on the Train page: one checkable card per template with what it is for and its ETA."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QHBoxLayout,
    QLabel,
    QRadioButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ... import theme
from ...wording import describe_duration, explain, plan_device_words, template_title


class TemplateCard(QFrame):
    """A checkable card for one training recipe: title, what it is for, and its ETA here."""

    def __init__(self, template: dict, parent=None):
        super().__init__(parent)
        self.template = template
        self.name = template["name"]
        self.setObjectName("Card")
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Minimum)
        self.setCursor(Qt.PointingHandCursor)
        self.setMinimumWidth(150)
        title = template_title(template)
        # the title is a label beside an empty radio button: a label wraps in a narrow window, a
        # button's text is cut off ("Small objects" lost its last letter at 760 px with a scroll bar)
        self.button = QRadioButton()
        self.button.setAccessibleName(title)
        self.button.setToolTip(template.get("description") or "")
        self.button.toggled.connect(self.set_selected)
        self.title = QLabel(title)
        self.title.setObjectName("CardTitle")
        self.title.setWordWrap(True)
        self.description = QLabel(template.get("description") or "")
        self.description.setToolTip(explain(template.get("description") or ""))
        self.description.setWordWrap(True)
        self.description.setObjectName("Muted")
        self.description.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.description.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.MinimumExpanding)
        self.eta = QLabel("Estimating the time on this computer…")
        self.eta.setWordWrap(True)
        self.set_selected(False)
        heading = QHBoxLayout()
        heading.setSpacing(6)
        heading.addWidget(self.button, 0, Qt.AlignTop)
        heading.addWidget(self.title, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.addLayout(heading)
        layout.addWidget(self.description, 1)
        layout.addWidget(self.eta)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt name): the whole card selects
        if event.button() == Qt.LeftButton:
            self.button.setChecked(True)
        super().mouseReleaseEvent(event)

    def set_estimates(self, estimates: dict) -> None:
        """Show ``{device_label: estimate dict or error string}``; the planner's notes go in the tooltip."""
        lines, notes = [], []
        for label, estimate in estimates.items():
            if isinstance(estimate, str):
                lines.append(estimate)
                continue
            plan = estimate.get("plan") or {}
            where = plan_device_words(plan) or label
            lines.append(f"{describe_duration(estimate.get('eta_s'))} {where}")
            notes.extend(note for note in plan.get("notes") or [] if note not in notes)
        text = " · ".join(dict.fromkeys(lines)) or "No estimate"
        self.eta.setText(f"<b>Time:</b> {text[:1].upper() + text[1:]}")
        self.eta.setToolTip("\n".join(notes))

    def set_selected(self, selected: bool) -> None:
        """Draw the card as the chosen one (accent border)."""
        colors = theme.current()
        border = f"2px solid {colors.accent}" if selected else f"1px solid {colors.border}"
        self.setStyleSheet(
            f"QFrame#Card {{ border: {border}; border-radius: 10px; background: {colors.base}; }}"
            f"QLabel#CardTitle {{ font-size: 15px; font-weight: 600; color: {colors.text}; }}"
        )


class TemplateCards(QWidget):
    """A row of :class:`TemplateCard`, one checked at a time.

    Signals
    -------
    changed(str) : the checked recipe's name.
    """

    changed = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.cards: dict[str, TemplateCard] = {}
        self.group = QButtonGroup(self)
        self.group.setExclusive(True)
        self.row = QHBoxLayout(self)
        self.row.setContentsMargins(0, 0, 0, 0)
        self.row.setSpacing(12)

    def set_templates(self, templates: list[dict]) -> bool:
        """Show one card per template (the first checked); False when they were already shown."""
        if [t["name"] for t in templates] == list(self.cards):
            return False
        for card in self.cards.values():
            self.group.removeButton(card.button)
            card.deleteLater()
        self.cards.clear()
        while self.row.count():
            self.row.takeAt(0)
        for template in templates:
            card = TemplateCard(template)
            self.group.addButton(card.button)
            card.button.toggled.connect(lambda on, name=card.name: on and self.changed.emit(name))
            self.cards[card.name] = card
            self.row.addWidget(card, 1, Qt.AlignTop)
        if templates:
            self.cards[templates[0]["name"]].button.setChecked(True)
        return True

    def selected(self) -> str | None:
        """The name of the checked recipe."""
        return next((name for name, card in self.cards.items() if card.button.isChecked()), None)

    def select(self, name: str) -> None:
        self.cards[name].button.setChecked(True)

    def title(self, name: str) -> str:
        """A recipe's title (its name when it has no card)."""
        return self.cards[name].title.text() if name in self.cards else name

    def restyle(self) -> None:
        """Redraw the cards in the current theme's colours."""
        for card in self.cards.values():
            card.set_selected(card.button.isChecked())
