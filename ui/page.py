"""The page contract, written once: what every step page of the main window is and does.

A :class:`Page` has the frame's signals, ``set_project`` / ``refresh`` / ``shutdown``, a header (title,
subtitle, actions on the right), an empty state, and a "latest request wins" refresh: ``refresh()``
runs :meth:`Page.load` in the page's thread pool and hands its result to :meth:`Page.show_data` on the
UI thread, unless a newer refresh started meanwhile (the older one is cancelled and its result
dropped, as Orange3's ``ConcurrentMixin.start`` does). A page subclass fills in::

    class MyPage(Page):
        title = "Evaluate"
        empty_text = "No model yet."

        def load(self, project):        # worker thread: Workspace calls only
            return self.ws.list_models(project)

        def show_data(self, models):    # UI thread
            ...

:class:`LatestTask` is the same "latest wins" rule for any other stream of requests on a page
(predicting the dropped photo, reading the chosen model's report).
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Qt, QThreadPool, Signal
from PySide6.QtWidgets import (
    QBoxLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from .job_watcher import TaskGroup
from .widgets.error_dialog import show_error
from .workers import SHUTDOWN_WAIT_MS

log = logging.getLogger(__name__)


class LatestTask(QObject):
    """Runs one request at a time for a page: starting one cancels the one before, whose result
    (or failure) is then dropped. Only the latest request's outcome reaches the UI.

    Parameters
    ----------
    tasks : TaskGroup
        The page's task group (its pool, its error reporting).
    """

    def __init__(self, tasks: TaskGroup, parent: QObject | None = None):
        super().__init__(parent)
        self.tasks = tasks
        self.handle = None

    @property
    def running(self) -> bool:
        """True while the latest request has not ended."""
        return self.handle is not None

    def start(self, fn, on_done, *, on_failed=None, title: str = "Something went wrong"):
        """Run ``fn(state)``; ``on_done(result)`` runs only if no newer request started since."""
        self.cancel()
        handle = self.tasks.run(fn, None, title=title, on_failed=lambda *args: None)
        self.handle = handle

        def finished(result):
            if self.handle is handle:
                on_done(result)

        def failed(message, details):
            if self.handle is not handle:
                return
            if on_failed is not None:
                on_failed(message, details)
            else:
                self.tasks.report_error(title, message, details)

        def ended():
            if self.handle is handle:
                self.handle = None

        handle.finished.connect(finished)
        handle.failed.connect(failed)
        handle.ended.connect(ended)
        return handle

    def cancel(self) -> None:
        """Ask the running request to stop and forget it (its result will not land)."""
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


class PageHeader(QWidget):
    """A page's title and one-line subtitle, with action widgets on the right (below the title when
    the page is too narrow for both on one line, so the title is never cut)."""

    def __init__(self, title: str, parent=None):
        super().__init__(parent)
        self.title = QLabel(title)
        self.title.setObjectName("PageTitle")
        self.subtitle = QLabel()
        self.subtitle.setObjectName("Muted")
        self.subtitle.setWordWrap(True)
        self.subtitle.hide()
        heading = QVBoxLayout()
        heading.setSpacing(2)
        heading.addWidget(self.title)
        heading.addWidget(self.subtitle)
        self.actions = QHBoxLayout()
        self.actions.setSpacing(8)
        self.box = QBoxLayout(QBoxLayout.LeftToRight, self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(8)
        self.box.addLayout(heading, 1)
        self.box.addLayout(self.actions)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        needed = self.title.sizeHint().width() + self.actions.sizeHint().width() + 24
        direction = QBoxLayout.TopToBottom if event.size().width() < needed else QBoxLayout.LeftToRight
        if self.box.direction() != direction:
            self.box.setDirection(direction)
            self.actions.setAlignment(Qt.AlignLeft if direction == QBoxLayout.TopToBottom else Qt.AlignRight)
        super().resizeEvent(event)

    def add(self, widget: QWidget) -> QWidget:
        """Put ``widget`` on the right of the header, after the ones already there."""
        self.actions.addWidget(widget, 0, Qt.AlignBottom)
        return widget

    def set_subtitle(self, text: str) -> None:
        self.subtitle.setText(text)
        self.subtitle.setVisible(bool(text))


class EmptyState(QWidget):
    """What a page shows when there is nothing yet: a sentence and a button to the step that helps."""

    def __init__(self, text: str, button_text: str = "", parent=None):
        super().__init__(parent)
        self.text = QLabel(text)
        self.text.setObjectName("Muted")
        self.text.setAlignment(Qt.AlignCenter)
        self.text.setWordWrap(True)
        self.button = QPushButton(button_text)
        self.button.setObjectName("Primary")
        self.button.setVisible(bool(button_text))
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(self.text)
        layout.addWidget(self.button, 0, Qt.AlignCenter)
        layout.addStretch(2)


class Page(QWidget):
    """Base of the step pages hosted by the main window.

    Class attributes
    ----------------
    title : str
        The header's title.
    empty_text, empty_button, empty_target : str
        The empty state: a sentence, a button's words and the page it goes to ("" for no button).
    threads : int
        Threads of the page's own pool (1 keeps the page's reads and writes in order).
    margins : tuple
        Content margins of the page.

    Signals
    -------
    status_changed()
        Something the sidebar shows changed (the frame re-reads the steps' state).
    navigate(str)
        Go to another step ("label", "train"...).
    relabel_requested(int)
        Open this sample on the Label step.
    model_selected(str)
        A model became the current one (a run finished, or the user picked it).
    """

    status_changed = Signal()
    navigate = Signal(str)
    relabel_requested = Signal(int)
    model_selected = Signal(str)

    title = ""
    empty_text = ""
    empty_button = ""
    empty_target = ""
    threads = 2
    margins = (24, 18, 24, 18)

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.project: str | None = None
        self.loaded = False
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(self.threads)
        self.tasks = TaskGroup(self.report_error, self, pool=self.pool)
        self.latest = LatestTask(self.tasks, self)
        self._shut = False

        self.header = PageHeader(self.title)
        self.empty = EmptyState(self.empty_text, self.empty_button)
        if self.empty_target:
            self.empty.button.clicked.connect(lambda: self.navigate.emit(self.empty_target))
        self.body = QWidget()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.body)
        self.stack.addWidget(self.empty)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(*self.margins)
        layout.setSpacing(10)
        layout.addWidget(self.header)
        layout.addWidget(self.stack, 1)

    # -- the contract -----------------------------------------------------------------------------

    def set_project(self, name: str | None) -> None:
        """Show project ``name`` (None: no project open); its data loads in the background."""
        changed = name != self.project
        self.project = name
        if changed:
            self.latest.cancel()
            self.loaded = False
            self.project_changed()
        self.refresh()

    def project_changed(self) -> None:
        """Hook: forget what belonged to the previous project (UI thread, before the refresh)."""

    def refresh(self) -> None:
        """Re-read the page's data off the UI thread; only the latest refresh's result is shown."""
        if self._shut:
            return
        project = self.project
        if project is None:
            self.show_empty(True)
            return

        request = self.load_request()

        def done(data):
            if project == self.project:
                self.show_data(data)
                self.loaded = True

        self.latest.start(
            lambda state: self.load(project, **request), done, title="Could not read the project"
        )

    def load_request(self) -> dict:
        """UI thread: what :meth:`load` needs from the widgets (filters, the order picked), as keywords."""
        return {}

    def load(self, project: str, **request):
        """Worker thread: read what the page shows through Workspace calls; returns it."""
        return None

    def show_data(self, data) -> None:
        """UI thread: show what :meth:`load` returned."""

    def theme_changed(self) -> None:
        """Hook: redraw what the page painted in the previous theme's colours."""

    def select_model(self, model_id: str) -> None:
        """Hook: show and use ``model_id`` (a run finished, or the user picked it on another page)."""

    def shutdown(self) -> None:
        """The window is closing: stop background work and wait for it (the store outlives it)."""
        self._shut = True
        self.latest.cancel()
        self.tasks.cancel_all()
        if not self.pool.waitForDone(SHUTDOWN_WAIT_MS):
            log.warning(
                "%s: background work did not stop within %.0f s", type(self).__name__, SHUTDOWN_WAIT_MS / 1000
            )

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt name): shown on its own, e.g. in tests
        self.shutdown()
        super().closeEvent(event)

    # -- helpers for subclasses -------------------------------------------------------------------

    def show_empty(self, empty: bool, text: str | None = None) -> None:
        """Show the empty state (with ``text`` instead of :attr:`empty_text`) or the page's body."""
        if text is not None:
            self.empty.text.setText(text)
        self.stack.setCurrentWidget(self.empty if empty else self.body)

    def run(self, fn, on_done=None, **options):
        """Run ``fn(state)`` in the page's pool (see :meth:`TaskGroup.run`); nothing after shutdown."""
        if self._shut:
            return None
        return self.tasks.run(fn, on_done, **options)

    def report_error(self, title: str, message: str, details: str | None = None) -> None:
        """Show a failure in the error dialog, with the log file one click away."""
        show_error(self, title, message, details, self.ws.paths.log)

    def is_idle(self) -> bool:
        """True when no background work of the page is pending (tests wait on this)."""
        return not self.tasks.busy


def card(title: str = "", subtitle: str = "", parent=None) -> tuple[QFrame, QVBoxLayout]:
    """A rounded card with a bold title and a muted subtitle; returns (frame, its layout)."""
    frame = QFrame(parent)
    frame.setObjectName("Card")
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(16, 12, 16, 14)
    layout.setSpacing(8)
    if title:
        heading = QLabel(f"<b>{title}</b>")
        heading.setStyleSheet("font-size: 15px;")
        layout.addWidget(heading)
    if subtitle:
        note = QLabel(subtitle)
        note.setObjectName("Muted")
        note.setWordWrap(True)
        layout.addWidget(note)
    return frame, layout
