"""Fixtures for the UI tests: isolated settings (always on), a workspace, image folders, and a
latency probe that measures how long the Qt event loop goes without running."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, QElapsedTimer, QObject, QSettings, QTimer  # noqa: E402

from modeldesk.ui.app import protect_singletons  # noqa: E402

protect_singletons()  # as the app does; see its docstring (PySide6 6.12 on Python < 3.12)

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


def write_images(folder: Path, counts: dict[str, int], *, size: int = 24, seed: int = 0,
                 fmt: str = "png") -> Path:
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


@pytest.fixture
def make_images():
    """The :func:`write_images` helper (test modules cannot import conftest with importlib mode)."""
    return write_images


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
    """Measures event-loop latency: a timer asks to run every ``interval_ms``; the probe records the
    longest time between two runs. A gap much longer than the interval means the UI thread was busy
    (the window would have frozen for that long).

    Use as a context manager around the code under test, while the event loop runs (e.g. inside
    ``qtbot.waitUntil``/``waitSignal``)::

        with LatencyProbe() as probe:
            start_long_action()
            qtbot.waitUntil(done, timeout=30_000)
        assert probe.max_gap_ms < 100
    """

    def __init__(self, interval_ms: int = 10, parent: QObject | None = None):
        super().__init__(parent)
        self.interval_ms = interval_ms
        self.gaps_ms: list[float] = []
        self._clock = QElapsedTimer()
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)
        self._started = 0.0

    def start(self) -> "LatencyProbe":
        self.gaps_ms.clear()
        self._clock.start()
        self._started = time.monotonic()
        self._timer.start()
        return self

    def stop(self) -> None:
        self._tick()
        self._timer.stop()

    def _tick(self) -> None:
        self.gaps_ms.append(self._clock.nsecsElapsed() / 1e6)
        self._clock.restart()

    @property
    def max_gap_ms(self) -> float:
        return max(self.gaps_ms, default=0.0)

    @property
    def ticks(self) -> int:
        return len(self.gaps_ms)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.gaps_ms, q)) if self.gaps_ms else 0.0

    def __enter__(self) -> "LatencyProbe":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@pytest.fixture
def latency_probe(qtbot):
    """A :class:`LatencyProbe` (not started; use it as a context manager)."""
    probe = LatencyProbe()
    yield probe
    probe._timer.stop()
