"""The sidebar: app title, project switcher, "New project", and the five steps with their state."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .elided_combo import ElidedComboBox

#: (key, title) of the steps, in order.
STEPS = (
    ("data", "Data"),
    ("label", "Label"),
    ("train", "Train"),
    ("evaluate", "Evaluate"),
    ("deploy", "Deploy"),
)

#: Step states and the colour of their dot.
STATE_COLORS = {"done": "#3ccf7f", "active": "#f0b440", "todo": "#6b7587", "warn": "#f0b440"}


def _state_icon(state: str, number: int, size: int = 22, ratio: float = 2.0) -> QIcon:
    """A round badge: a check mark when done, the step number otherwise (drawn at 2x for high DPI)."""
    pixmap = QPixmap(int(size * ratio), int(size * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.Antialiasing)
    color = QColor(STATE_COLORS.get(state, STATE_COLORS["todo"]))
    rect = QRectF(1.5, 1.5, size - 3, size - 3)
    if state == "done":
        painter.setBrush(color)
        painter.setPen(Qt.NoPen)
        painter.drawEllipse(rect)
        pen = QPen(QColor("#10251a"), 2.2)
        pen.setCapStyle(Qt.RoundCap)
        painter.setPen(pen)
        s = size
        painter.drawLine(int(s * 0.30), int(s * 0.52), int(s * 0.45), int(s * 0.67))
        painter.drawLine(int(s * 0.45), int(s * 0.67), int(s * 0.72), int(s * 0.36))
    else:
        painter.setBrush(Qt.NoBrush)
        painter.setPen(QPen(color, 1.6))
        painter.drawEllipse(rect)
        painter.setPen(color)
        font = QFont()
        font.setPixelSize(int(size * 0.5))
        font.setBold(True)
        painter.setFont(font)
        painter.drawText(rect, Qt.AlignCenter, str(number))
    painter.end()
    return QIcon(pixmap)


DetailRole = Qt.UserRole + 2


def readable_popup(combo: QComboBox) -> None:
    """Draw ``combo``'s list with the style sheet's item colours: QComboBox's own menu delegate keeps
    the sidebar's light text colour for every item, pale grey on the white popup of the light theme."""
    combo.setItemDelegate(QStyledItemDelegate(combo))


class StepDelegate(QStyledItemDelegate):
    """Paints a step as a badge, its name, and a muted one-line detail under it."""

    def sizeHint(self, option, index) -> QSize:
        return QSize(140, 50)  # the list is as wide as the sidebar; never wider

    def paint(self, painter: QPainter, option, index) -> None:
        painter.save()
        painter.setRenderHint(QPainter.Antialiasing)
        rect = QRectF(option.rect).adjusted(0, 2, 0, -2)
        selected = bool(option.state & QStyle.State_Selected)
        hovered = bool(option.state & QStyle.State_MouseOver)
        enabled = bool(option.state & QStyle.State_Enabled)
        if selected:
            painter.setPen(Qt.NoPen)
            painter.setBrush(QColor("#2f6fed"))
            painter.drawRoundedRect(rect, 7, 7)
        elif hovered and enabled:
            painter.setPen(Qt.NoPen)
            painter.setBrush(QColor(255, 255, 255, 20))
            painter.drawRoundedRect(rect, 7, 7)
        icon = index.data(Qt.DecorationRole)
        if icon is not None:
            icon.paint(painter, int(rect.left() + 10), int(rect.center().y() - 11), 22, 22)
        text_left = rect.left() + 42
        title_font = QFont(option.font)
        title_font.setPixelSize(14)
        title_font.setWeight(QFont.DemiBold)
        detail_font = QFont(option.font)
        detail_font.setPixelSize(11)
        detail = index.data(DetailRole) or ""
        title_color = QColor("#ffffff") if selected else QColor("#e8ecf3" if enabled else "#6b7587")
        detail_color = QColor("#dce6ff") if selected else QColor("#9aa4b5" if enabled else "#545d6e")
        width = rect.right() - text_left - 6
        if detail:
            title_rect = QRectF(text_left, rect.top() + 6, width, 20)
            detail_rect = QRectF(text_left, rect.top() + 25, width, 16)
        else:
            title_rect = QRectF(text_left, rect.top(), width, rect.height())
            detail_rect = QRectF()
        painter.setFont(title_font)
        painter.setPen(title_color)
        painter.drawText(title_rect, Qt.AlignLeft | Qt.AlignVCenter, index.data(Qt.DisplayRole))
        if detail:
            painter.setFont(detail_font)
            painter.setPen(detail_color)
            elided = painter.fontMetrics().elidedText(detail, Qt.ElideRight, int(width))
            painter.drawText(detail_rect, Qt.AlignLeft | Qt.AlignVCenter, elided)
        painter.restore()


class Sidebar(QWidget):
    """Navigation for the frame.

    Signals
    -------
    page_requested(key)
        A step was clicked.
    project_requested(name)
        Another project was picked in the switcher.
    new_project_requested()
        "New project" was pressed.
    theme_requested(str)
        The user chose a theme: "system", "light" or "dark".
    """

    page_requested = Signal(str)
    project_requested = Signal(str)
    new_project_requested = Signal()
    theme_requested = Signal(str)
    rename_project_requested = Signal()
    delete_project_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("Sidebar")
        self.setAttribute(Qt.WA_StyledBackground, True)
        self.setFixedWidth(236)
        title = QLabel("ModelDesk")
        title.setObjectName("AppTitle")
        project_caption = QLabel("PROJECT")
        project_caption.setObjectName("SidebarCaption")
        self.switcher = ElidedComboBox()  # a long name ends in "…", not cut mid-letter
        self.switcher.setObjectName("ProjectSwitcher")
        readable_popup(self.switcher)
        self.switcher.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.switcher.setMinimumContentsLength(12)
        self.switcher.currentIndexChanged.connect(self._switched)
        # a long name is cut on a narrow sidebar: the whole name is one hover away
        self.switcher.currentTextChanged.connect(self.switcher.setToolTip)
        self.project_menu = QToolButton()
        self.project_menu.setObjectName("SidebarButton")
        self.project_menu.setText("⋯")
        self.project_menu.setToolTip("Rename or delete this project")
        self.project_menu.setPopupMode(QToolButton.InstantPopup)
        menu = QMenu(self.project_menu)
        menu.addAction("Rename project…", self.rename_project_requested.emit)
        menu.addAction("Delete project…", self.delete_project_requested.emit)
        self.project_menu.setMenu(menu)
        self.new_button = QPushButton("+  New project")
        self.new_button.setObjectName("SidebarButton")
        self.new_button.clicked.connect(self.new_project_requested)
        steps_caption = QLabel("STEPS")
        steps_caption.setObjectName("SidebarCaption")
        self.steps = QListWidget()
        self.steps.setObjectName("Steps")
        self.steps.setIconSize(QSize(22, 22))
        self.steps.setFocusPolicy(Qt.NoFocus)
        self.steps.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.steps.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.steps.setMouseTracking(True)
        self.steps.setItemDelegate(StepDelegate(self.steps))
        for number, (key, name) in enumerate(STEPS, start=1):
            item = QListWidgetItem(_state_icon("todo", number), name)
            item.setData(Qt.UserRole, key)
            self.steps.addItem(item)
        self.steps.currentItemChanged.connect(self._step_changed)
        self.footer = QLabel()
        self.footer.setObjectName("SidebarCaption")
        self.footer.setWordWrap(True)
        self.theme = QComboBox()
        self.theme.setObjectName("ProjectSwitcher")
        readable_popup(self.theme)
        for choice, words in (("system", "System theme"), ("light", "Light theme"), ("dark", "Dark theme")):
            self.theme.addItem(words, choice)
        self.theme.setToolTip("Light or dark colours; “System theme” follows your computer's setting.")
        self.theme.activated.connect(lambda index: self.theme_requested.emit(self.theme.itemData(index)))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 16, 14, 12)
        layout.setSpacing(8)
        layout.addWidget(title)
        layout.addSpacing(10)
        layout.addWidget(project_caption)
        switcher_row = QHBoxLayout()
        switcher_row.setSpacing(4)
        switcher_row.addWidget(self.switcher, 1)
        switcher_row.addWidget(self.project_menu)
        layout.addLayout(switcher_row)
        layout.addWidget(self.new_button)
        layout.addSpacing(12)
        layout.addWidget(steps_caption)
        layout.addWidget(self.steps, 1)
        layout.addWidget(self.theme)
        layout.addWidget(self.footer)
        self._updating = False

    def set_workspace(self, path) -> None:
        """Show the workspace folder at the bottom (elided; the full path in the tooltip)."""
        metrics = self.footer.fontMetrics()
        self.footer.setText("WORKSPACE\n" + metrics.elidedText(str(path), Qt.ElideMiddle, 200))
        self.footer.setToolTip(str(path))

    def set_theme(self, choice: str) -> None:
        """Show ``choice`` in the theme switcher without emitting ``theme_requested``."""
        self.theme.setCurrentIndex(max(self.theme.findData(choice), 0))

    # -- projects -------------------------------------------------------------------------

    def set_projects(self, names: list[str], current: str | None) -> None:
        """Fill the switcher without emitting ``project_requested``."""
        self._updating = True
        self.switcher.clear()
        self.switcher.addItems(names)
        for row, name in enumerate(names):
            self.switcher.setItemData(row, name, Qt.ToolTipRole)
        self.switcher.setEnabled(bool(names))
        self.project_menu.setEnabled(current in names)
        if current in names:
            self.switcher.setCurrentIndex(names.index(current))
        else:
            self.switcher.setCurrentIndex(-1)
            self.switcher.setPlaceholderText("No project yet")
        self._updating = False

    def show_project(self, name: str | None) -> None:
        """Select ``name`` in the switcher (nothing when it is not listed) without emitting ``project_requested``."""
        index = self.switcher.findText(name) if name else -1
        self._updating = True
        self.switcher.setCurrentIndex(index)
        self._updating = False
        self.project_menu.setEnabled(index >= 0)

    def _switched(self, index: int) -> None:
        if not self._updating and index >= 0:
            self.project_requested.emit(self.switcher.itemText(index))

    # -- steps ------------------------------------------------------------------------------

    def set_current_page(self, key: str | None) -> None:
        """Highlight step ``key`` (None clears) without emitting ``page_requested``."""
        self._updating = True
        self.steps.setCurrentRow(-1)
        for row in range(self.steps.count()):
            if self.steps.item(row).data(Qt.UserRole) == key:
                self.steps.setCurrentRow(row)
        self._updating = False

    def set_steps_enabled(self, enabled: bool) -> None:
        """Enable the steps; disabled (no project) they also drop the last project's states."""
        self.steps.setEnabled(enabled)
        if not enabled:
            for key, _name in STEPS:
                self.set_step_state(key, "todo", "")

    def set_step_state(self, key: str, state: str, detail: str, tip: str = "") -> None:
        """Show ``state`` (``done``/``active``/``todo``/``warn``), a one-line ``detail`` and, in the
        tooltip, the whole sentence ``tip`` (the detail when empty) for a step."""
        for row in range(self.steps.count()):
            item = self.steps.item(row)
            if item.data(Qt.UserRole) == key:
                item.setData(DetailRole, detail)
                item.setIcon(_state_icon(state, row + 1))
                item.setData(Qt.UserRole + 1, state)
                item.setToolTip(tip or detail)

    def step_state(self, key: str) -> tuple[str, str]:
        """(state, detail) currently shown for ``key``."""
        for row in range(self.steps.count()):
            item = self.steps.item(row)
            if item.data(Qt.UserRole) == key:
                return item.data(Qt.UserRole + 1) or "todo", item.data(DetailRole) or ""
        raise KeyError(key)

    def _step_changed(self, current, _previous) -> None:
        if current is not None and not self._updating:
            self.page_requested.emit(current.data(Qt.UserRole))
