"""The first-run screen: try a sample project made on the spot, or start your own."""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, QThreadPool, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from .sample_project import make_sample_project
from .widgets.error_dialog import show_error
from .widgets.progress_panel import ProgressPanel
from .workers import SHUTDOWN_WAIT_MS, run_task

log = logging.getLogger(__name__)


def _card(title: str, text: str, button: QPushButton) -> QFrame:
    card = QFrame()
    card.setObjectName("Card")
    heading = QLabel(title)
    heading.setStyleSheet("font-size: 16px; font-weight: 600;")
    body = QLabel(text)
    body.setWordWrap(True)
    body.setObjectName("Muted")
    layout = QVBoxLayout(card)
    layout.setContentsMargins(22, 20, 22, 20)
    layout.setSpacing(10)
    layout.addWidget(heading)
    layout.addWidget(body, 1)
    layout.addWidget(button, 0, Qt.AlignLeft)
    return card


class WelcomePage(QWidget):
    """Shown while the workspace has no project.

    Signals
    -------
    project_created(name)
        The sample project is ready.
    new_project_requested()
        The user wants the "New project" dialog.
    """

    project_created = Signal(str)
    new_project_requested = Signal()

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.task = None
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self._shut = False
        hero = QLabel("Build a model from your own examples")
        hero.setObjectName("Hero")
        hero.setWordWrap(True)
        sub = QLabel(
            "Photos, objects in photos, texts, sounds or parts to check for defects: add your examples, "
            "label a few of them, and ModelDesk trains a model you can test, export and run here. "
            "Everything stays on this computer."
        )
        sub.setObjectName("Muted")
        sub.setWordWrap(True)

        self.sample_button = QPushButton("Create the sample project")
        self.sample_button.setObjectName("Primary")
        self.sample_button.clicked.connect(self.create_sample)
        self.new_button = QPushButton("New project…")
        self.new_button.clicked.connect(self.new_project_requested)
        cards = QHBoxLayout()
        cards.setSpacing(16)
        cards.addWidget(
            _card(
                "Try it in five minutes",
                "A sample project with 60 pictures of circles, squares and triangles, "
                "drawn on your computer just now. Label, train and test a model "
                "without finding any data first.",
                self.sample_button,
            ),
            1,
        )
        cards.addWidget(
            _card(
                "Start your own project",
                "Choose a folder (one sub-folder per class works), some files or a zip "
                "archive: photos, labeled boxes from other tools, a CSV of texts or WAV "
                "clips. You can also drag files onto this window.",
                self.new_button,
            ),
            1,
        )

        steps = QLabel(
            "1  Add examples    ›    2  Label    ›    3  Train    ›    4  Evaluate    ›    5  Deploy"
        )
        steps.setObjectName("Muted")
        steps.setAlignment(Qt.AlignCenter)
        self.progress = ProgressPanel()

        column = QVBoxLayout()
        column.setSpacing(14)
        column.addStretch(2)
        column.addWidget(hero)
        column.addWidget(sub)
        column.addSpacing(12)
        column.addLayout(cards)
        column.addSpacing(8)
        column.addWidget(steps)
        column.addWidget(self.progress)
        column.addStretch(3)
        outer = QHBoxLayout(self)
        outer.addStretch(1)
        holder = QWidget()
        holder.setLayout(column)
        holder.setMaximumWidth(820)
        outer.addWidget(holder, 8)
        outer.addStretch(1)

    def create_sample(self) -> None:
        """Make the sample project in the background; ``project_created`` follows."""
        if self.task is not None or self._shut:
            return
        self.sample_button.setEnabled(False)
        self.task = run_task(
            lambda state: make_sample_project(
                self.ws, progress=state.set_progress, should_stop=state.is_interruption_requested
            ),
            pool=self.pool,
            parent=self,
        )
        self.progress.attach(self.task, "Making the sample project")
        self.task.finished.connect(lambda result: self.project_created.emit(result["project"]))
        self.task.failed.connect(
            lambda message, details: show_error(
                self, "Could not make the sample project", message, details, self.ws.paths.log
            )
        )
        self.task.ended.connect(self._ended)

    def _ended(self) -> None:
        self.task = None
        self.sample_button.setEnabled(True)

    def shutdown(self) -> None:
        """Stop making the sample project and wait for the worker."""
        self._shut = True
        if self.task is not None:
            self.task.cancel()
        if not self.pool.waitForDone(SHUTDOWN_WAIT_MS):
            log.warning("making the sample project did not stop within %.0f s", SHUTDOWN_WAIT_MS / 1000)
