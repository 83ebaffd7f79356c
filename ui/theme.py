"""Light and dark themes: a Fusion palette plus a small style sheet, following the system.

The choice is ``"system"`` (default: ``QStyleHints.colorScheme()``, light when unknown),
``"light"`` or ``"dark"``; :func:`apply_theme` re-applies itself when the system scheme
changes while the choice is ``"system"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

CHOICES = ("system", "light", "dark")
RESOURCES = (Path(__file__).resolve().parent / "resources").as_posix()


@dataclass(frozen=True)
class Colors:
    """The few colours the app's own widgets paint with."""

    window: str
    base: str
    alt_base: str
    text: str
    muted: str
    border: str
    sidebar: str
    sidebar_text: str
    accent: str
    accent_text: str
    good: str
    warn: str
    bad: str
    dark: bool


LIGHT = Colors(
    window="#f5f6f8",
    base="#ffffff",
    alt_base="#eef0f4",
    text="#1d2330",
    muted="#5f6b7d",
    border="#d5dae2",
    sidebar="#1f2633",
    sidebar_text="#e8ecf3",
    accent="#2f6fed",
    accent_text="#ffffff",
    good="#1e9e5a",
    warn="#c27c0e",
    bad="#d0393e",
    dark=False,
)
DARK = Colors(
    window="#1b1e24",
    base="#23272f",
    alt_base="#2a2f38",
    text="#e6e9ef",
    muted="#9aa4b5",
    border="#3a404c",
    sidebar="#14171c",
    sidebar_text="#e6e9ef",
    accent="#5b8cff",
    accent_text="#ffffff",
    good="#3ccf7f",
    warn="#f0b440",
    bad="#ff6b6b",
    dark=True,
)

_current = LIGHT


def current() -> Colors:
    """The colours of the theme applied last (light before any is applied)."""
    return _current


def system_is_dark() -> bool:
    """True when the platform reports a dark colour scheme."""
    hints = QGuiApplication.styleHints()
    return hints.colorScheme() == Qt.ColorScheme.Dark


def resolve(choice: str) -> Colors:
    """Map a choice (``system``/``light``/``dark``) to colours."""
    if choice == "dark" or (choice not in ("light", "dark") and system_is_dark()):
        return DARK
    return LIGHT


def palette_for(colors: Colors) -> QPalette:
    """A full QPalette built from ``colors``."""
    pal = QPalette()
    c = QColor
    pal.setColor(QPalette.Window, c(colors.window))
    pal.setColor(QPalette.WindowText, c(colors.text))
    pal.setColor(QPalette.Base, c(colors.base))
    pal.setColor(QPalette.AlternateBase, c(colors.alt_base))
    pal.setColor(QPalette.Text, c(colors.text))
    pal.setColor(QPalette.Button, c(colors.base if colors.dark else colors.alt_base))
    pal.setColor(QPalette.ButtonText, c(colors.text))
    pal.setColor(QPalette.ToolTipBase, c(colors.base))
    pal.setColor(QPalette.ToolTipText, c(colors.text))
    pal.setColor(QPalette.PlaceholderText, c(colors.muted))
    pal.setColor(QPalette.Highlight, c(colors.accent))
    pal.setColor(QPalette.HighlightedText, c(colors.accent_text))
    pal.setColor(QPalette.Link, c(colors.accent))
    pal.setColor(QPalette.Mid, c(colors.border))
    pal.setColor(QPalette.Midlight, c(colors.alt_base))
    pal.setColor(QPalette.Light, c(colors.base))
    pal.setColor(QPalette.Dark, c(colors.border))
    for role in (QPalette.WindowText, QPalette.Text, QPalette.ButtonText):
        pal.setColor(QPalette.Disabled, role, c(colors.muted))
    return pal


def style_sheet(colors: Colors) -> str:
    """The app-wide style sheet: sidebar, primary buttons, cards, warnings."""
    return f"""
QWidget#Sidebar {{ background: {colors.sidebar}; }}
QWidget#Sidebar QLabel {{ color: {colors.sidebar_text}; }}
QLabel#AppTitle {{ font-size: 17px; font-weight: 600; }}
QLabel#SidebarCaption {{ color: #8d97a8; font-size: 11px; font-weight: 600; }}
QListWidget#Steps {{ background: transparent; border: none; color: {colors.sidebar_text};
                     font-size: 14px; outline: none; }}
QListWidget#Steps::item {{ padding: 9px 10px; border-radius: 6px; margin: 2px 0; }}
QListWidget#Steps::item:selected {{ background: {colors.accent}; color: {colors.accent_text}; }}
QListWidget#Steps::item:hover:!selected {{ background: rgba(255, 255, 255, 0.08); }}
QComboBox#ProjectSwitcher {{ padding: 5px 8px; border-radius: 6px; border: 1px solid #3a4252;
                             background: #2a3240; color: {colors.sidebar_text}; }}
QComboBox#ProjectSwitcher::drop-down {{ border: none; width: 22px; background: transparent; }}
QComboBox#ProjectSwitcher::down-arrow {{ image: url({RESOURCES}/chevron-down.svg); width: 12px; height: 12px; }}
QComboBox#ProjectSwitcher QAbstractItemView {{ background: {colors.base}; color: {colors.text};
                                              selection-background-color: {colors.accent};
                                              selection-color: {colors.accent_text}; }}
QComboBox#ProjectSwitcher QAbstractItemView::item {{ color: {colors.text}; padding: 3px 4px; }}
QComboBox#ProjectSwitcher QAbstractItemView::item:selected {{ background: {colors.accent};
                                                             color: {colors.accent_text}; }}
QPushButton#SidebarButton {{ padding: 6px 10px; border-radius: 6px; border: 1px solid #3a4252;
                             background: transparent; color: {colors.sidebar_text}; }}
QPushButton#SidebarButton:hover {{ background: rgba(255, 255, 255, 0.08); }}
QLabel#PageTitle {{ font-size: 21px; font-weight: 600; }}
QLabel#Muted {{ color: {colors.muted}; }}
QLabel#Warning {{ color: {colors.warn}; }}
QLabel#Error {{ color: {colors.bad}; }}
QLabel#Hero {{ font-size: 26px; font-weight: 600; }}
QFrame#Card {{ background: {colors.base}; border: 1px solid {colors.border}; border-radius: 10px; }}
QFrame#Banner {{ background: {colors.alt_base}; border: 1px solid {colors.border}; border-radius: 8px; }}
QPushButton {{ padding: 6px 14px; border-radius: 6px; border: 1px solid {colors.border};
               background: {colors.base}; color: {colors.text}; }}
QPushButton:hover {{ background: {colors.alt_base}; border-color: {colors.muted}; }}
QPushButton:pressed {{ background: {colors.border}; }}
QPushButton:disabled {{ color: {colors.muted}; background: {colors.window}; border-color: {colors.border}; }}
QPushButton::menu-indicator {{ subcontrol-origin: padding; subcontrol-position: right center; right: 6px; }}
QPushButton[hasMenu="true"] {{ padding-right: 26px; }}
QPushButton#Primary {{ background: {colors.accent}; color: {colors.accent_text}; border: none;
                       font-weight: 600; padding: 8px 18px; }}
QPushButton#Primary:hover {{ background: {QColor(colors.accent).lighter(112).name()}; }}
QPushButton#Primary:disabled {{ background: {colors.border}; color: {colors.muted}; }}
QComboBox {{ background: {colors.base}; color: {colors.text}; border: 1px solid {colors.border};
             border-radius: 5px; padding: 4px 26px 4px 8px; min-height: 18px; }}
QComboBox:hover {{ border-color: {colors.muted}; }}
QComboBox:disabled {{ color: {colors.muted}; background: {colors.window}; }}
QComboBox::drop-down {{ border: none; width: 22px; subcontrol-origin: padding; subcontrol-position: right center; }}
QComboBox::down-arrow {{ image: url({RESOURCES}/chevron-down.svg); width: 12px; height: 12px; }}
QComboBox QAbstractItemView {{ background: {colors.base}; color: {colors.text}; border: 1px solid {colors.border};
                               selection-background-color: {colors.accent}; selection-color: {colors.accent_text}; }}
QLineEdit {{ background: {colors.base}; color: {colors.text}; border: 1px solid {colors.border};
             border-radius: 5px; padding: 5px 8px; }}
QLineEdit:focus {{ border-color: {colors.accent}; }}
QSpinBox {{ background: {colors.base}; color: {colors.text}; border: 1px solid {colors.border};
            border-radius: 5px; padding: 3px 6px; min-width: 64px; min-height: 20px; }}
QSpinBox:focus {{ border-color: {colors.accent}; }}
QSpinBox::up-button, QSpinBox::down-button {{ width: 0px; border: none; }}
QSpinBox:disabled {{ color: {colors.muted}; background: {colors.window}; }}
QPushButton#ClassButton {{ text-align: left; padding: 9px 12px; font-size: 14px; }}
QPushButton#MaskTool {{ padding: 6px 4px; }}
QPushButton#ClassButton:checked, QPushButton#MaskTool:checked {{ background: {colors.accent}; color: {colors.accent_text};
                                   border: none; font-weight: 600; }}
QRadioButton::indicator, QCheckBox::indicator {{ width: 14px; height: 14px; border: 2px solid {colors.muted};
                                                background: {colors.base}; }}
QRadioButton::indicator {{ border-radius: 9px; }}
QCheckBox::indicator {{ border-radius: 4px; }}
QRadioButton::indicator:checked {{ width: 8px; height: 8px; border: 5px solid {colors.accent};
                                   background: {colors.accent_text}; }}
QCheckBox::indicator:checked {{ background: {colors.accent}; border-color: {colors.accent};
                                image: url({RESOURCES}/check.svg); }}
QRadioButton::indicator:disabled, QCheckBox::indicator:disabled {{ border-color: {colors.border}; }}
QToolButton#SidebarButton {{ padding: 4px 8px; border-radius: 6px; border: 1px solid #3a4252;
                             background: transparent; color: {colors.sidebar_text}; }}
QToolButton#SidebarButton::menu-indicator {{ image: none; width: 0px; }}
QListView#Gallery {{ background: {colors.base}; border: 1px solid {colors.border}; border-radius: 8px;
                     padding: 6px; }}
"""


def apply_theme(app: QApplication, choice: str = "system") -> Colors:
    """Apply the Fusion style, palette and style sheet for ``choice``; return its colours.

    With ``"system"``, the theme follows later system changes (``colorSchemeChanged``).
    """
    global _current
    colors = resolve(choice)
    _current = colors
    app.setStyle("Fusion")
    app.setPalette(palette_for(colors))
    app.setStyleSheet(style_sheet(colors))
    hints = QGuiApplication.styleHints()
    previous = app.property("modeldesk_theme_hook")
    if previous:
        try:
            hints.colorSchemeChanged.disconnect(app._modeldesk_theme_hook)  # type: ignore[attr-defined]
        except (RuntimeError, TypeError, AttributeError):
            pass
    if choice == "system":

        def _follow(_scheme, app=app):
            apply_theme(app, "system")

        app._modeldesk_theme_hook = _follow  # type: ignore[attr-defined]
        hints.colorSchemeChanged.connect(_follow)
        app.setProperty("modeldesk_theme_hook", True)
    else:
        app.setProperty("modeldesk_theme_hook", False)
    return colors
