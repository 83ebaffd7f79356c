"""First-run self-check of an installed app: open the window, make the sample project from the
first-run screen, train the fast template, predict one image, quit; print the timings.

The installer's smoke test and install benchmark run it inside the frozen build, where no other
Python exists (``modeldesk -m modeldesk.ui.smoke``)::

    modeldesk -m modeldesk.ui.smoke --workspace /tmp/ws [--screenshot first-run.png] [--json]

``first_window_s`` counts from the process's creation (the frozen build's unpacking and imports
included) to the main window being shown and painted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QEvent, QEventLoop
from PySide6.QtWidgets import QApplication


def _process_started() -> float:
    try:
        import psutil

        return psutil.Process().create_time()
    except Exception:  # noqa: BLE001 - fall back to this module's import time
        return time.time()


def _pump_until(condition, timeout: float, what: str) -> None:
    """Run the event loop until ``condition()`` holds; raise TimeoutError naming ``what`` otherwise."""
    app = QApplication.instance()
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout:.0f} s")
        app.processEvents(QEventLoop.AllEvents, 50)
        time.sleep(0.005)


def _close(window) -> None:
    """Close the window (its pages stop their work) and delete it before the workspace closes."""
    window.close()
    window.deleteLater()
    QApplication.instance().sendPostedEvents(None, QEvent.DeferredDelete)
    QApplication.instance().processEvents()


def fast_template(ws, task: str = "image-classification") -> str:
    """The quickest template for ``task`` (named ``.../fast`` when there is one)."""
    names = [t["name"] for t in ws.templates(task)]
    fast = [n for n in names if n.endswith("/fast")]
    return (fast or names)[0]


def run(
    workspace: Path, *, screenshot: Path | None = None, timeout: float = 600.0, window_only: bool = False
) -> dict:
    """Drive the first run on ``workspace``; returns the timings and the prediction.

    With ``window_only`` it stops once the first window is shown (``first_window_s`` only).
    """
    started = _process_started()
    from modeldesk.app.sample_data import make_shapes_folder
    from modeldesk.app.workspace import Workspace
    from modeldesk.ui.application import create_application
    from modeldesk.ui.main_window import MainWindow
    from modeldesk.ui.ui_thread_gc import UiThreadCollector
    from modeldesk.ui.workers import run_task

    app = QApplication.instance() or create_application(sys.argv[:1])
    collector = UiThreadCollector(parent=app).start()  # as the app runs
    ws = Workspace(workspace)
    result: dict = {"workspace": str(workspace)}
    try:
        window = MainWindow(ws)
        window.show()
        _pump_until(
            lambda: (
                window.isVisible() and window.windowHandle() is not None and window.windowHandle().isExposed()
            ),
            60,
            "the main window",
        )
        app.processEvents()
        collector.freeze()
        shown = time.time()
        result["first_window_s"] = round(shown - started, 3)
        if screenshot is not None:
            window.grab().save(str(screenshot))
        if window_only:
            _close(window)
            return result
        created: list[str] = []
        window.welcome.project_created.connect(created.append)
        window.welcome.sample_button.click()
        _pump_until(lambda: bool(created), timeout, "the sample project")
        result["sample_project_s"] = round(time.time() - shown, 3)
        project = created[0]
        template = fast_template(ws)
        done: list = []
        task = run_task(lambda _state: ws.train(project, template))
        task.finished.connect(done.append)
        task.failed.connect(lambda message, _details: done.append(RuntimeError(message)))
        _pump_until(lambda: bool(done), timeout, f"training {template}")
        if isinstance(done[0], Exception):
            raise done[0]
        result["window_to_model_s"] = round(time.time() - shown, 3)
        result.update(
            project=project,
            template=template,
            model=done[0]["model"],
            metrics={k: v for k, v in done[0].get("metrics", {}).items() if isinstance(v, (int, float))},
        )
        with tempfile.TemporaryDirectory() as tmp:
            image = sorted((make_shapes_folder(Path(tmp), per_class=1) / "circle").iterdir())[0]
            prediction = ws.predict(done[0]["model"], [image])[0]
        result["prediction"] = {
            "expected": "circle",
            "label": prediction["label"],
            "score": round(float(prediction["score"]), 4),
        }
        _close(window)
    finally:
        collector.stop()
        ws.close()
    result["total_s"] = round(time.time() - started, 3)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="modeldesk -m modeldesk.ui.smoke", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--workspace", type=Path, required=True, help="a new or empty workspace folder")
    parser.add_argument("--screenshot", type=Path, help="save the first-run screen as PNG")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--window-only", action="store_true", help="stop once the first window is shown")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result = run(
        args.workspace, screenshot=args.screenshot, timeout=args.timeout, window_only=args.window_only
    )
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>18}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
