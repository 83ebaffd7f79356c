"""The desktop app's own persistent settings (window geometry, last project, theme, labeling keys)."""

from __future__ import annotations

from PySide6.QtCore import QSettings

ORGANIZATION = "ModelDesk"
APPLICATION = "ModelDesk"


def settings() -> QSettings:
    """The app's persistent settings (INI format, per user)."""
    return QSettings(QSettings.IniFormat, QSettings.UserScope, ORGANIZATION, APPLICATION)


#: settings kept per project under ``<prefix><project name>``
PROJECT_KEYS = ("deployed/", "deploy/export_folder/")


def rename_project_keys(old: str, new: str) -> None:
    """Carry a project's settings (Deploy step done, export folder) over to its new name."""
    store = settings()
    for prefix in PROJECT_KEYS:
        value = store.value(prefix + old)
        if value is not None:
            store.setValue(prefix + new, value)
            store.remove(prefix + old)
