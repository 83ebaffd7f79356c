"""Screenshots of every page of the desktop app, made the same way each time.

Builds a throw-away workspace with the first-run sample project (and, with ``--train``, a model),
opens the main window at a fixed size and saves one PNG per page with ``QWidget.grab()``. Pages
whose module is missing from this build are skipped. Not imported at run time.

Usage::

    QT_QPA_PLATFORM=offscreen python3 packaging/screenshots.py --out shots [--theme dark] [--train]
    QT_QPA_PLATFORM=offscreen python3 packaging/screenshots.py --out shots --text reviews.csv [--train]

``--text TABLE`` makes a text classification project from a CSV/JSONL/TXT file (the pages of a text
project: texts listed, one text to label, its evaluation and a text box to try the model).

``--tasks image,tags,boxes,text,sound,anomaly,masks,table`` (or ``all``) makes a small project of each task from
the shared benchmark data (``packaging/shot_projects.py``; ``--train`` trains each), and shoots for each
size of ``--sizes``: the welcome screen, the New project dialog, the guide (F1) and the shortcut
sheet, then every page of every project, the Deploy page twice (the top with the try-it card and its
Live button; then scrolled to the export card with "Make smaller & faster"). Files are named
``<task>-<page>-<theme>-<size>.png``; give ``--workspace`` to train once and shoot both themes::

    xvfb-run -s '-screen 0 1600x1000x24' python3 packaging/screenshots.py --tasks all --train \
        --workspace /tmp/shots-ws --sizes 1600x1000,760x540 --theme dark --out shots
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QPointF, QSettings, Qt
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
        # No app.exec() runs here, and processEvents leaves deleteLater() to the main loop: without
        # this, widgets a page replaced (the previous project's class buttons) stay on the shot.
        QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
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
    parser.add_argument(
        "--tasks", default="", help="comma-separated: image,tags,boxes,text,sound,anomaly,masks,table or all"
    )
    parser.add_argument(
        "--sizes", default="", help="with --tasks: comma-separated WIDTHxHEIGHT (default --size)"
    )
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
    if args.tasks:
        try:
            return shoot_tasks(ws, args)
        finally:
            ws.close()
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


def _window(ws, size: str):
    from modeldesk.ui.main_window import MainWindow

    width, height = (int(v) for v in size.lower().split("x"))
    window = MainWindow(ws)
    window.resize(width, height)
    window.show()
    settle()
    return window


def _scroll_to(widget) -> None:
    """Scroll the nearest scroll area around ``widget`` until it shows."""
    from PySide6.QtWidgets import QScrollArea

    area = widget.parentWidget()
    while area is not None and not isinstance(area, QScrollArea):
        area = area.parentWidget()
    if area is not None:
        area.ensureWidgetVisible(widget)


def _mouse(widget, kind, at, buttons=None) -> None:
    """Send one mouse event of ``kind`` at ``at`` (a QPointF in ``widget``), the left button held
    unless ``buttons`` says otherwise."""
    from PySide6.QtGui import QMouseEvent

    held = Qt.LeftButton if buttons is None else buttons
    button = Qt.NoButton if kind == QEvent.MouseMove else Qt.LeftButton
    event = QMouseEvent(kind, at, widget.mapToGlobal(at), button, held, Qt.NoModifier)
    QApplication.sendEvent(widget, event)


#: the Label page's annotators that paint, and the tools shot at work on each
PAINTED = {"mask": ("polygon", "brush", "assist"), "defect": ("brush",)}


def shoot_mask_tools(window, page, out: Path, short: str, tag: str, tools=PAINTED["mask"]) -> None:
    """The Label page with each of ``tools`` at work: a polygon being drawn, then filled, a brush stroke
    with the brush's outline, and the assist's region after a click. Each edit is undone."""
    editor = page.annotator.editor
    viewport = page.annotator.canvas.viewport()
    w, h = viewport.width(), viewport.height()
    at = lambda fx, fy: QPointF(w * fx, h * fy)  # noqa: E731
    if "polygon" in tools:
        _shoot_polygon(window, editor, viewport, at, out / f"{short}-02-label-polygon-{tag}.png")
    if "brush" in tools:
        editor.set_tool("brush")
        editor.set_size(24)
        _mouse(viewport, QEvent.MouseButtonPress, at(0.25, 0.30))
        for step in range(1, 11):
            _mouse(viewport, QEvent.MouseMove, at(0.25 + 0.04 * step, 0.30 + 0.015 * step))
        _mouse(viewport, QEvent.MouseButtonRelease, at(0.65, 0.45), Qt.NoButton)
        _mouse(viewport, QEvent.MouseMove, at(0.70, 0.47), Qt.NoButton)
        settle(linger=0.5)
        shoot(window, out / f"{short}-02-label-brush-{tag}.png")
        editor.undo()
    if "assist" in tools:
        editor.set_tool("assist")
        editor.set_size(40)
        before = editor.history.can_undo
        _mouse(viewport, QEvent.MouseButtonPress, at(0.5, 0.35))
        _mouse(viewport, QEvent.MouseButtonRelease, at(0.5, 0.35), Qt.NoButton)
        settle(lambda: not editor.busy and editor.history.can_undo != before, timeout=60, linger=0.5)
        shoot(window, out / f"{short}-02-label-assist-{tag}.png")
        editor.undo()
    editor.set_tool("brush")
    settle(linger=0.5)


def _shoot_polygon(window, editor, viewport, at, path: Path) -> None:
    """Four corners of a polygon clicked (shot), then filled (shot ``...-filled``), then undone."""
    editor.set_tool("polygon")
    for fx, fy in ((0.30, 0.55), (0.55, 0.50), (0.62, 0.75), (0.38, 0.80)):
        _mouse(viewport, QEvent.MouseButtonPress, at(fx, fy))
        _mouse(viewport, QEvent.MouseButtonRelease, at(fx, fy), Qt.NoButton)
    _mouse(viewport, QEvent.MouseMove, at(0.33, 0.70), Qt.NoButton)
    settle(linger=0.5)
    shoot(window, path)
    editor.close_polygon()
    settle(linger=0.5)
    shoot(window, path.with_name(path.stem.replace("-polygon-", "-polygon-filled-") + path.suffix))
    editor.undo()


def try_model(page, given) -> None:
    """Try the Deploy page's model on ``given`` (a file, a text or a table row; None: nothing) and wait
    for its answer."""
    if given is None or page.model_id is None:
        return
    page.last_prediction = None
    if isinstance(given, str):  # typed into the text box and classified, as a user would
        page.try_it.text_try.editor.setPlainText(given)
        page.try_it.text_try.submit()
    elif isinstance(given, dict):  # a row typed into the form's fields (its columns arrive first)
        form = page.try_it.row_form
        settle(lambda: bool(form.fields), timeout=20)
        form.fill(given)
        form.submit()
    else:
        page.try_file(str(given))
    settle(lambda: page.last_prediction is not None, timeout=60, linger=1.0)


def _dialog(dialog, path: Path) -> None:
    settle(linger=0.6)
    shoot(dialog, path)
    dialog.close()


def shoot_tasks(ws, args) -> int:
    """Every page of a project of each task in ``args.tasks``, at each size, and the dialogs."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from shot_projects import TASKS, make_project, try_input

    shorts = list(TASKS) if args.tasks == "all" else [t for t in args.tasks.split(",") if t]
    made = Path(tempfile.mkdtemp(prefix="modeldesk-shots-data-"))
    projects = {short: make_project(ws, short, made, train=args.train) for short in shorts}
    for size in (args.sizes or args.size).split(","):
        tag = f"{args.theme}-{size}"
        window = _window(ws, size)
        window.set_project(None)
        settle(linger=1.0)
        shoot(window, args.out / f"all-00-welcome-{tag}.png")
        _dialog(window.new_project(), args.out / f"all-01-new-project-{tag}.png")
        for short, name in projects.items():
            window.set_project(name)
            for number, key in enumerate(PAGES, start=1):
                window.show_page(key)
                page = window.pages.get(key)
                settle(lambda page=page: page_ready(page), linger=2.5)
                if key == "deploy":
                    try_model(page, try_input(short))
                shoot(window, args.out / f"{short}-{number:02d}-{key}-{tag}.png")
                annotator = getattr(page, "annotator", None)
                painted = PAINTED.get(getattr(annotator, "target", ""))
                if key == "label" and painted and annotator.canvas.isVisible():
                    shoot_mask_tools(window, page, args.out, short, tag, painted)
                if key == "deploy":  # the export card with "Make smaller & faster" sits below the fold
                    _scroll_to(page.export_card.frame)
                    settle(linger=0.5)
                    shoot(window, args.out / f"{short}-{number:02d}-deploy-export-{tag}.png")
            if short == shorts[0]:
                window.show_page("data")
                _dialog(window.help_menu.show_guide("data"), args.out / f"all-02-guide-{tag}.png")
                _dialog(window.help_menu.show_guide("shortcuts"), args.out / f"all-03-shortcuts-{tag}.png")
        window.close()
        window.deleteLater()
        settle(linger=0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
