"""Fixtures for the UI tests: isolated settings (always on), a workspace, image folders, and a
latency probe that measures how long the Qt event loop goes without running."""

from __future__ import annotations

import gc
import inspect
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, QObject, QSettings, QTimer  # noqa: E402

COLORS = {"red": (210, 40, 40), "green": (40, 170, 60), "blue": (40, 60, 210)}


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path_factory, monkeypatch):
    """Every test gets its own empty QSettings (never the user's)."""
    folder = tmp_path_factory.mktemp("qsettings")
    for fmt in (QSettings.IniFormat, QSettings.NativeFormat):
        QSettings.setPath(fmt, QSettings.UserScope, str(folder))
        QSettings.setPath(fmt, QSettings.SystemScope, str(folder))
    QCoreApplication.setOrganizationName("ModelDeskTests")
    QCoreApplication.setApplicationName("ModelDeskTests")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    yield folder


_SHOWN: list = []


@pytest.fixture
def show_widget(qtbot):
    """``show_widget(widget)``: register with qtbot, show, and keep it alive until teardown.

    pytest-qt only keeps a weak reference; a window that dies with the test function is deleted
    without a close event, so its pages would never stop their background work. Kept here, it is
    closed properly (``closeEvent`` -> ``shutdown``) before the workspace closes.
    """

    def show(widget):
        qtbot.addWidget(widget)
        _SHOWN.append(widget)
        widget.show()
        qtbot.waitExposed(widget)
        return widget

    return show


@pytest.fixture
def ws(tmp_path):
    """A fresh workspace in a temporary folder."""
    from modeldesk.app.workspace import Workspace

    workspace = Workspace(tmp_path / "workspace")
    yield workspace
    # every window must have stopped its background work before the store closes under it
    import shiboken6
    from PySide6.QtWidgets import QApplication

    for widget in _SHOWN + QApplication.topLevelWidgets():
        if shiboken6.isValid(widget):
            widget.close()
    _SHOWN.clear()
    QApplication.processEvents()
    workspace.close()


def write_images(
    folder: Path, counts: dict[str, int], *, size: int = 24, seed: int = 0, fmt: str = "png"
) -> Path:
    """``folder/<label>/<n>.<fmt>`` colour images; the label ``""`` writes unlabeled files at the top."""
    rng = np.random.default_rng(seed)
    for label, count in counts.items():
        target = folder / label if label else folder
        target.mkdir(parents=True, exist_ok=True)
        base = COLORS.get(label, (128, 128, 128))
        for index in range(count):
            pixels = np.clip(np.array(base) + rng.integers(-30, 30, (size, size, 3)), 0, 255)
            Image.fromarray(pixels.astype(np.uint8)).save(target / f"{label or 'img'}_{index:05d}.{fmt}")
    return folder


@pytest.fixture(scope="session")
def make_images():
    """The :func:`write_images` helper (test modules cannot import conftest with importlib mode)."""
    return write_images


@pytest.fixture
def open_page(qtbot):
    """``open_page(cls, workspace)``: a shown page kept alive for the test, then stopped cleanly:
    its background tasks finish, its ``shutdown`` runs and it closes before the workspace does.
    (Not given to ``qtbot.addWidget``: pytest-qt would delete it before this teardown runs.)"""
    pages = []

    def make(cls, workspace):
        page = cls(workspace)
        pages.append(page)
        page.show()
        return page

    yield make
    for page in pages:
        qtbot.waitUntil(lambda page=page: not page.tasks.busy, timeout=60000)
        if hasattr(page, "shutdown"):
            page.shutdown()
        page.close()
        page.deleteLater()


@pytest.fixture
def image_folder(tmp_path):
    """A folder-per-class image set: 12 red, 12 green, 4 blue, and 6 unlabeled files at the top."""
    return write_images(tmp_path / "photos", {"red": 12, "green": 12, "blue": 4, "": 6})


@pytest.fixture
def classification_project(ws, image_folder):
    """An image-classification project with :func:`image_folder` imported; returns its name."""
    ws.create_project("fruit", "image-classification")
    ws.import_data("fruit", image_folder)
    return "fruit"


class LatencyProbe(QObject):
    """Measures event-loop latency: a timer asks to run every ``interval_ms``; the probe records every
    gap between two runs with the UI thread's CPU time in it. A gap much longer than the interval
    means the window froze for that long.

    :meth:`blocked` keeps the long gaps our UI thread caused: it was busy (CPU), or it waited (on a
    lock, a file) while a plain heartbeat thread kept beating. A gap the heartbeat shared, with
    little UI CPU, is the OS not running the process (a loaded test machine), not our fault.

    Use as a context manager around the code under test, while the event loop runs (e.g. inside
    ``qtbot.waitUntil``/``waitSignal``)::

        with latency_probe as probe:
            start_long_action()
            qtbot.waitUntil(done, timeout=30_000)
        assert not probe.blocked(100)
    """

    def __init__(self, interval_ms: int = 10, parent: QObject | None = None):
        super().__init__(parent)
        self.interval_ms = interval_ms
        self.gaps_ms: list[float] = []
        self._gaps: list[tuple[float, float, float]] = []  # (end time, wall ms, UI-thread CPU ms)
        self.beats: list[float] = []
        self._stop = threading.Event()
        self._beater: threading.Thread | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)

    def start(self) -> LatencyProbe:
        # The objects of every earlier test stay out of the collector's way while measuring: a full
        # collection of the whole suite's heap took 320 ms on the UI thread, where the app's own heap
        # after a training run takes 45 ms. What the test itself allocates is still collected.
        gc.collect()
        gc.freeze()
        self.gaps_ms.clear()
        self._gaps.clear()
        self.beats.clear()
        self._stop.clear()
        self._beater = threading.Thread(target=self._beat, daemon=True)
        self._beater.start()
        self._wall, self._cpu = time.perf_counter(), time.thread_time()
        self._timer.start()
        return self

    def stop(self) -> None:
        self._tick()
        self._timer.stop()
        self._stop.set()
        if self._beater is not None:
            self._beater.join()
        gc.unfreeze()

    def _beat(self) -> None:
        while not self._stop.wait(0.002):
            self.beats.append(time.perf_counter())

    def _tick(self) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        gap = (wall - self._wall) * 1000
        self.gaps_ms.append(gap)
        self._gaps.append((wall, gap, (cpu - self._cpu) * 1000))
        self._wall, self._cpu = wall, cpu

    def _heartbeat_gap_ms(self, start: float, end: float) -> float:
        inside = [start] + [t for t in self.beats if start < t < end] + [end]
        return max(b - a for a, b in zip(inside, inside[1:])) * 1000

    def blocked(self, limit_ms: float = 100) -> list[tuple[float, float]]:
        """(wall ms, UI CPU ms) of the gaps over ``limit_ms`` that the UI thread caused."""
        out = []
        for end, gap, cpu in self._gaps:
            if gap < limit_ms:
                continue
            starved = cpu < limit_ms / 2 and self._heartbeat_gap_ms(end - gap / 1000, end) > gap / 2
            if not starved:
                out.append((gap, cpu))
        return out

    @property
    def max_gap_ms(self) -> float:
        return max(self.gaps_ms, default=0.0)

    @property
    def max_cpu_ms(self) -> float:
        """The most CPU time the UI thread spent between two ticks: how long our own code kept the
        event loop from running. A loaded machine stretches wall time, not this."""
        return max((cpu for _end, _gap, cpu in self._gaps), default=0.0)

    @property
    def ticks(self) -> int:
        return len(self.gaps_ms)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.gaps_ms, q)) if self.gaps_ms else 0.0

    def __enter__(self) -> LatencyProbe:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@pytest.fixture
def latency_probe(qtbot):
    """A :class:`LatencyProbe` (not started; use it as a context manager)."""
    probe = LatencyProbe()
    yield probe
    if probe._timer.isActive():
        probe.stop()


class UiThreadCalls:
    """Records every Workspace call made on the UI thread while active (a context manager).

    The Workspace is where waiting happens (SQLite, files, the job queue), so "the UI thread made no
    Workspace call" says it never waited on work, whatever the machine's load.
    """

    def __init__(self, ws):
        self.ws = ws
        self.calls: list[str] = []
        self._wrapped: list[str] = []
        self._depth = 0

    def __enter__(self) -> UiThreadCalls:
        main = threading.main_thread()
        for name in dir(type(self.ws)):
            if name.startswith("_") or isinstance(inspect.getattr_static(type(self.ws), name), property):
                continue
            method = getattr(self.ws, name)
            if not callable(method):
                continue

            def wrapper(*args, __method=method, __name=name, **kwargs):
                if threading.current_thread() is not main:
                    return __method(*args, **kwargs)
                if not self._depth:  # the call the UI made, not the ones it makes inside
                    self.calls.append(__name)
                self._depth += 1
                try:
                    return __method(*args, **kwargs)
                finally:
                    self._depth -= 1

            setattr(self.ws, name, wrapper)
            self._wrapped.append(name)
        return self

    def __exit__(self, *exc) -> None:
        for name in self._wrapped:
            delattr(self.ws, name)
        self._wrapped.clear()


@pytest.fixture
def ui_thread_calls():
    """``ui_thread_calls(ws)``: a :class:`UiThreadCalls` recorder for that workspace."""
    return UiThreadCalls
