"""Screenshots of every page of the desktop app, made the same way each time.

Builds a throw-away workspace with the first-run sample project (and, with ``--train``, a model),
opens the main window at a fixed size and saves one PNG per page with ``QWidget.grab()``. Pages
whose module is missing from this build are skipped. Not imported at run time.

Usage::

    QT_QPA_PLATFORM=offscreen python3 packaging/screenshots.py --out shots [--theme dark] [--train]
    QT_QPA_PLATFORM=offscreen python3 packaging/screenshots.py --out shots --text reviews.csv [--train]

``--text TABLE`` makes a text classification project from a CSV/JSONL/TXT file (the pages of a text
project: texts listed, one text to label, its evaluation and a text box to try the model).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEventLoop, QSettings
from PySide6.QtWidgets import QApplication

PAGES = ("data", "label", "train", "evaluate", "deploy")


def settle(condition=lambda: True, timeout: float = 20.0, linger: float = 0.4) -> bool:
    """Run the event loop until ``condition()`` holds (or ``timeout``), then ``linger`` seconds more."""
    app = QApplication.instance()
    deadline = time.monotonic() + timeout
    ok = False
    while time.monotonic() < deadline:
        app.processEvents(QEventLoop.AllEvents, 50)
        if condition():
            ok = True
            break
        time.sleep(0.01)
    end = time.monotonic() + linger
    while time.monotonic() < end:
        app.processEvents(QEventLoop.AllEvents, 50)
        time.sleep(0.01)
    return ok


def page_ready(page) -> bool:
    """Best effort: the page's own background work has finished."""
    for attr in ("refresh_task", "import_task"):
        if getattr(page, attr, None) is not None:
            return False
    if hasattr(page, "is_idle") and not page.is_idle():
        return False
    model = getattr(getattr(page, "gallery", None), "model", lambda: None)()
    loader = getattr(model, "loader", None)
    if loader is not None and (loader._pending or loader._drainers):
        return False
    return True


def shoot(window, path: Path) -> Path:
    window.grab().save(str(path))
    print(f"wrote {path}")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("shots"))
    parser.add_argument("--theme", choices=("light", "dark"), default="light")
    parser.add_argument("--size", default="1280x800", help="window size, WIDTHxHEIGHT")
    parser.add_argument("--train", action="store_true", help="train a model so Evaluate/Deploy have content")
    parser.add_argument("--workspace", type=Path, help="use this folder instead of a temporary one")
    parser.add_argument("--text", type=Path, help="a file of texts: shoot a text classification project")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    args.out.mkdir(parents=True, exist_ok=True)

    root = args.workspace or Path(tempfile.mkdtemp(prefix="modeldesk-shots-"))
    settings_dir = Path(tempfile.mkdtemp(prefix="modeldesk-shots-settings-"))
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(settings_dir))  # never the user's

    from modeldesk.app.workspace import Workspace
    from modeldesk.ui import theme
    from modeldesk.ui.application import create_application
    from modeldesk.ui.main_window import MainWindow
    from modeldesk.ui.sample_project import make_sample_project

    app = create_application(sys.argv[:1])
    QCoreApplication.setApplicationName("ModelDeskScreenshots")
    theme.apply_theme(app, args.theme)
    ws = Workspace(root)
    suffix = "" if args.theme == "light" else "-dark"
    try:
        if args.text is not None:  # made before any window exists: no page loads while it is filled
            ws.create_project("reviews", "text-classification")
            ws.import_data("reviews", args.text)
            if args.train:
                ws.train("reviews", "text-classification/fast")
            suffix = "-text" + suffix
        window = MainWindow(ws)
        window.resize(width, height)
        window.show()
        if args.text is not None:
            window.set_project("reviews")
        elif window.project is None:
            settle()
            shoot(window, args.out / f"00-first-run{suffix}.png")
            window.close()
            # Deleted by Qt between two events, and referenced until then: dropped, the window was
            # destroyed by the garbage collector while a result was being delivered to one of its pages.
            window.deleteLater()
            first_window = window  # noqa: F841
            result = make_sample_project(ws)
            if args.train:
                template = ws.templates("image-classification")[0]["name"]
                ws.train(result["project"], template)
            window = MainWindow(ws)
            window.resize(width, height)
            window.show()
        for number, key in enumerate(PAGES, start=1):
            window.show_page(key)
            page = window.pages.get(key)
            if page is None or type(page).__name__ == "_Unavailable":
                print(f"skipped {key}: page not available")
                continue
            mine = key in ("data", "label")
            settle(lambda page=page: page_ready(page), linger=0.4 if mine else 2.5)
            shoot(window, args.out / f"{number:02d}-{key}{suffix}.png")
        window.close()
    finally:
        ws.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
