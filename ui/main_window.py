"""The main window: a frame with the sidebar and a stack of pages; no task logic of its own."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

from PySide6.QtCore import QThreadPool, Signal
from PySide6.QtWidgets import QHBoxLayout, QMainWindow, QStackedWidget, QWidget

from modeldesk.errors import describe

from .page import Page
from .settings import rename_project_keys, settings
from .status import project_status, was_deployed
from .welcome import WelcomePage
from .widgets.confirm import ask_name, confirm
from .widgets.error_dialog import show_error
from .widgets.help_menu import HelpMenu
from .widgets.new_project import NewProjectDialog
from .widgets.sidebar import STEPS, Sidebar
from .workers import SHUTDOWN_WAIT_MS, run_task

log = logging.getLogger(__name__)

#: page key -> (module, class); the modules are imported when the page is first shown.
PAGES = {
    "data": ("modeldesk.ui.pages.data_page", "DataPage"),
    "label": ("modeldesk.ui.pages.label", "LabelPage"),
    "train": ("modeldesk.ui.pages.train", "TrainPage"),
    "evaluate": ("modeldesk.ui.pages.evaluate_page", "EvaluatePage"),
    "deploy": ("modeldesk.ui.pages.deploy", "DeployPage"),
}


class _Unavailable(Page):
    """Stands in for a page whose module is not installed in this build."""

    def __init__(self, workspace, title: str, parent=None):
        super().__init__(workspace, parent)
        self.show_empty(True, f"The {title} step is not available in this build.")

    def refresh(self) -> None:
        pass


class MainWindow(QMainWindow):
    """Hosts the pages; keeps the sidebar in step with the current project.

    Signals
    -------
    project_changed(name)
        The current project changed (empty string for none).
    """

    project_changed = Signal(str)

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.project: str | None = None
        self.current_page: str | None = None
        self.pages: dict[str, Page] = {}
        self.model_id: str | None = None  # the project's model shown and used everywhere
        self._picked_during_run = False
        self._tasks: list[dict] | None = None
        self._status_task = None
        self._status_dirty = False
        self._dialog: NewProjectDialog | None = None
        self.pool = QThreadPool(self)  # the frame's own background reads; waited for on close
        self.pool.setMaxThreadCount(1)
        self._shut = False
        self.setWindowTitle("ModelDesk")
        self.setAcceptDrops(True)
        self.setMinimumSize(760, 540)

        self.sidebar = Sidebar()
        self.sidebar.set_workspace(self.ws.paths.root)
        self.sidebar.page_requested.connect(self.show_page)
        self.sidebar.project_requested.connect(self.set_project)
        self.sidebar.new_project_requested.connect(self.new_project)
        self.sidebar.theme_requested.connect(self.set_theme)
        self.sidebar.rename_project_requested.connect(self.ask_rename_project)
        self.sidebar.delete_project_requested.connect(self.ask_delete_project)
        self.question = None
        self.sidebar.set_theme(str(settings().value("ui/theme", "system")))
        self.stack = QStackedWidget()
        self.welcome = WelcomePage(self.ws)
        self.welcome.project_created.connect(self._project_created)
        self.welcome.new_project_requested.connect(self.new_project)
        self.stack.addWidget(self.welcome)

        central = QWidget()
        layout = QHBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.sidebar)
        layout.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        self.help_menu = HelpMenu(self, self.ws)  # Report a problem, About

        self._restore()

    # -- settings -----------------------------------------------------------------------------

    def _restore(self) -> None:
        s = settings()
        geometry = s.value("window/geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(1280, 820)
        names = [p["name"] for p in self.ws.list_projects()]
        last = s.value("ui/last_project")
        project = last if last in names else (names[0] if names else None)
        self.sidebar.set_projects(names, project)
        self.set_project(project, page=str(s.value("ui/last_page", "data")))

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name): a narrower sidebar on small windows
        self.sidebar.setFixedWidth(190 if event.size().width() < 1000 else 236)
        self.sidebar.footer.setVisible(event.size().height() >= 640)  # room for the five steps first
        super().resizeEvent(event)

    def closeEvent(self, event) -> None:
        s = settings()
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("ui/last_project", self.project or "")
        s.setValue("ui/last_page", self.current_page or "data")
        s.sync()
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        """Stop and wait for the pages' background work (the store must outlive it)."""
        self._shut = True
        self.welcome.shutdown()
        for page in self.pages.values():
            page.shutdown()
        if not self.pool.waitForDone(SHUTDOWN_WAIT_MS):
            log.warning(
                "background work still running %.0f s after closing; not waited for", SHUTDOWN_WAIT_MS / 1000
            )

    def set_theme(self, choice: str) -> None:
        """Apply and remember a theme ("system", "light" or "dark"); the pages redraw in its colours."""
        from PySide6.QtWidgets import QApplication

        from . import theme

        theme.apply_theme(QApplication.instance(), choice)
        s = settings()
        s.setValue("ui/theme", choice)
        s.sync()
        self.sidebar.set_theme(choice)
        for page in self.pages.values():
            page.theme_changed()

    # -- projects ----------------------------------------------------------------------------

    def set_project(self, name: str | None, page: str | None = None) -> None:
        """Make ``name`` the current project (None shows the first-run screen)."""
        if (name or None) != self.project:
            self.model_id, self._picked_during_run = None, False
        self.project = name or None
        self.sidebar.show_project(self.project)  # also when called by code, not from the switcher
        self.sidebar.set_steps_enabled(self.project is not None)
        for widget in self.pages.values():
            widget.set_project(self.project)
        self.project_changed.emit(self.project or "")
        if self.project is None:
            self.current_page = None
            self.sidebar.set_current_page(None)
            self.stack.setCurrentWidget(self.welcome)
            self.setWindowTitle("ModelDesk")
            return
        self.setWindowTitle(f"{self.project} – ModelDesk")
        self.show_page(page or self.current_page or "data")
        self.refresh_status()

    def refresh_projects(self, current: str | None = None) -> None:
        """Re-read the project list into the switcher, selecting ``current``."""
        names = [p["name"] for p in self.ws.list_projects()]
        self.sidebar.set_projects(names, current if current in names else self.project)

    def ask_rename_project(self) -> None:
        if self.project:
            old = self.project
            self.question = ask_name(
                self,
                "Rename project",
                f"New name for '{old}':",
                old,
                lambda new: self.rename_project(old, new),
            )

    def rename_project(self, old: str, new: str) -> None:
        """Rename a project (asked from the sidebar's ⋯ menu)."""
        try:
            self.ws.rename_project(old, new)
        except (ValueError, KeyError) as exc:
            show_error(self, "Could not rename the project", describe(exc), log_file=self.ws.paths.log)
            return
        rename_project_keys(old, new)
        self.refresh_projects(new)
        self.set_project(new)

    def ask_delete_project(self) -> None:
        """Say what deleting the current project takes away, then delete it if the user agrees."""
        if not self.project:
            return
        project, ws = self.project, self.ws

        def ask(counts):
            samples, models = counts
            self.question = confirm(
                self,
                "Delete project",
                f"Delete the project '{project}' with its {samples:,} samples, their "
                f"labels and its {models} model(s)? This cannot be undone; files on your disk outside ModelDesk "
                "stay.",
                "Delete project",
                lambda: self.delete_project(project),
            )

        handle = run_task(
            lambda _s: (ws.stats(project)["samples"], len(ws.list_models(project))),
            pool=self.pool,
            parent=self,
        )
        handle.finished.connect(ask)

    def delete_project(self, name: str) -> None:
        """Switch away from ``name``, then delete it in the background (media files go too)."""
        others = [
            self.sidebar.switcher.itemText(i)
            for i in range(self.sidebar.switcher.count())
            if self.sidebar.switcher.itemText(i) != name
        ]
        self.set_project(others[0] if others else None)
        self.sidebar.set_projects(others, self.project)
        ws = self.ws
        handle = run_task(lambda _s: ws.delete_project(name), pool=self.pool, parent=self)
        handle.failed.connect(
            lambda message, details: show_error(
                self, "Could not delete the project", message, details, self.ws.paths.log
            )
        )

    def _project_created(self, name: str) -> None:
        self.refresh_projects(name)
        self.set_project(name, page="data")

    def new_project(self, paths=None) -> NewProjectDialog:
        """Open the "New project" dialog (non-blocking); on accept, create it and import the data."""
        names = [p["name"] for p in self.ws.list_projects()]
        if self._tasks is None:
            self._tasks = self.ws.tasks()
        if self._dialog is not None:
            self._dialog.deleteLater()
        self._dialog = NewProjectDialog(self._tasks, names, paths=paths, parent=self)
        self._dialog.accepted.connect(self._create_from_dialog)
        self._dialog.open()
        return self._dialog

    def _create_from_dialog(self) -> None:
        dialog = self._dialog
        try:
            self.ws.create_project(dialog.name, dialog.task)
        except (ValueError, KeyError) as exc:
            show_error(self, "Could not create the project", describe(exc), log_file=self.ws.paths.log)
            return
        self._project_created(dialog.name)
        paths = dialog.import_paths()
        if paths:
            self.page("data").import_paths(paths)

    # -- pages ---------------------------------------------------------------------------------

    def page(self, key: str) -> Page:
        """The page for ``key``, created on first use."""
        if key not in self.pages:
            module_name, class_name = PAGES[key]
            try:
                cls = getattr(importlib.import_module(module_name), class_name)
            except ImportError as exc:
                if exc.name != module_name:
                    raise
                log.warning("page %s is not available: %s", key, exc)
                widget = _Unavailable(self.ws, dict(STEPS)[key], parent=self.stack)
            else:
                widget = cls(self.ws, parent=self.stack)
            widget.status_changed.connect(self.refresh_status)
            widget.navigate.connect(self.show_page)
            widget.relabel_requested.connect(self.relabel)
            widget.model_selected.connect(
                lambda model_id, source=widget: self._model_picked(source, model_id)
            )
            if hasattr(widget, "model_trained"):
                widget.model_trained.connect(self._model_trained)
                widget.run_started.connect(self._run_started)
            widget.set_project(self.project)
            if self.model_id:
                widget.select_model(self.model_id)
            self.pages[key] = widget
            self.stack.addWidget(widget)
        return self.pages[key]

    def show_page(self, key: str) -> None:
        """Show step ``key`` of the current project."""
        if key not in PAGES:
            key = "data"
        if self.project is None:
            return
        widget = self.page(key)
        self.current_page = key
        self.stack.setCurrentWidget(widget)
        self.sidebar.set_current_page(key)
        widget.refresh()

    def relabel(self, sample_id: int) -> None:
        """Open the Label step on ``sample_id`` (asked by the Evaluate page): the refresh that showing
        the page starts lands on that sample too."""
        self.show_page("label")
        self.page("label").show_sample(int(sample_id))

    # -- the model shown everywhere ------------------------------------------------------------

    def _model_picked(self, source: Page, model_id: str) -> None:
        """The user picked ``model_id`` on one page: the others show and use it too."""
        self.model_id, self._picked_during_run = model_id, True
        for page in self.pages.values():
            if page is not source:
                page.select_model(model_id)
        self.refresh_status()

    def _run_started(self) -> None:
        self._picked_during_run = False

    def _model_trained(self, model_id: str) -> None:
        """A run finished: its model is shown and used everywhere, unless the user picked one meanwhile."""
        if self._picked_during_run:
            return
        self.model_id = model_id
        for page in self.pages.values():
            page.select_model(model_id)
        self.refresh_status()

    # -- sidebar state ---------------------------------------------------------------------------

    def refresh_status(self) -> None:
        """Recompute the steps' state in the background (coalesces bursts of requests)."""
        if self.project is None or self._shut:
            return
        if self._status_task is not None:
            self._status_dirty = True
            return
        project, model_id, deployed = self.project, self.model_id, was_deployed(self.project)
        self._status_task = run_task(
            lambda _state: (project, project_status(self.ws, project, model_id, deployed)),
            pool=self.pool,
            parent=self,
        )
        self._status_task.finished.connect(self._status_ready)
        self._status_task.failed.connect(lambda msg, _details: log.warning("status failed: %s", msg))
        self._status_task.ended.connect(self._status_ended)

    def _status_ready(self, result) -> None:
        project, status = result
        if project != self.project:
            return
        for key, value in status.items():
            self.sidebar.set_step_state(key, *value)

    def _status_ended(self) -> None:
        self._status_task = None
        if self._status_dirty:
            self._status_dirty = False
            self.refresh_status()

    # -- drag and drop -----------------------------------------------------------------------------

    def dragEnterEvent(self, event) -> None:
        if _local_paths(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        paths = _local_paths(event.mimeData())
        if not paths:
            return
        event.acceptProposedAction()
        self.import_paths(paths)

    def import_paths(self, paths) -> None:
        """Import dropped files/folders into the current project (asks for a new project if none)."""
        if self.project is None:
            self.new_project(paths)
            return
        self.show_page("data")
        self.page("data").import_paths(paths)


def _local_paths(mime) -> list[Path]:
    if not mime.hasUrls():
        return []
    return [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]
