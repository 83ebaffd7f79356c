"""Every Qt object the window keeps is owned by Qt, not only by Python.

Python's cyclic garbage collector runs on whichever thread happens to allocate, often a worker's. A
widget held only by a Python attribute (no Qt parent) is destroyed by that collection, on that thread,
once its holder dies: Qt then crashes at some later event (it did, in the Data page's camera bar).
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QObject

from modeldesk.ui.main_window import PAGES, MainWindow


def python_only_objects(root: QObject) -> list[str]:
    """Attribute paths, from ``root`` and its Qt children, to QObjects with no parent that only Python owns."""
    seen: set[int] = set()
    found: list[str] = []

    def walk(obj, path: str, depth: int) -> None:
        if id(obj) in seen or depth > 6:
            return
        seen.add(id(obj))
        if isinstance(obj, QObject):
            if not shiboken6.isValid(obj):
                return
            if obj is not root and obj.parent() is None and shiboken6.ownedByPython(obj):
                found.append(f"{path} ({type(obj).__name__})")
            items = vars(obj).items()
        elif isinstance(obj, (list, tuple)):
            items = enumerate(obj)
        elif isinstance(obj, dict):
            items = obj.items()
        elif type(obj).__module__.startswith("modeldesk") and hasattr(obj, "__dict__"):
            items = vars(obj).items()
        else:
            return
        for key, value in list(items):
            walk(value, f"{path}.{key}", depth + 1)

    for obj in [root, *root.findChildren(QObject)]:
        walk(obj, type(obj).__name__, 0)
    return found


def test_the_probe_finds_a_widget_only_python_holds(qtbot):
    from PySide6.QtWidgets import QComboBox, QWidget

    holder = QWidget()
    qtbot.addWidget(holder)
    holder.kept = QComboBox()
    holder.owned = QComboBox(holder)
    assert python_only_objects(holder) == ["QWidget.kept (QComboBox)"]


def test_every_page_of_every_task_keeps_only_qt_owned_objects(qtbot, ws, show_widget):
    for name, task in (
        ("photos", "image-classification"),
        ("boxes", "object-detection"),
        ("texts", "text-classification"),
        ("clips", "sound-classification"),
    ):
        ws.create_project(name, task)
    window = show_widget(MainWindow(ws))
    for name in ("photos", "boxes", "texts", "clips"):
        window.set_project(name)
        for key in PAGES:
            window.show_page(key)
            page = window.pages[key]
            qtbot.waitUntil(
                lambda page=page: not getattr(getattr(page, "tasks", None), "busy", False), timeout=20_000
            )
    assert len(window.pages) == len(PAGES)
    assert python_only_objects(window) == []
