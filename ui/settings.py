"""The desktop app's own persistent settings (window geometry, last project, theme, labeling keys)."""

from __future__ import annotations

from PySide6.QtCore import QSettings

ORGANIZATION = "ModelDesk"
APPLICATION = "ModelDesk"


def settings() -> QSettings:
    """The app's persistent settings (INI format, per user)."""
    return QSettings(QSettings.IniFormat, QSettings.UserScope, ORGANIZATION, APPLICATION)
