"""The Label page's "Improve as I label" switch and what it says (see ``app.keep_up``).

The counting and the submitting run in the page's one-thread pool (through ``run``); the background run
is followed by a :class:`JobWatcher`, so the page never waits on training.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QLabel, QVBoxLayout, QWidget

from modeldesk.app.keep_up import EVERY, KeepUp, is_auto_job

from ...job_watcher import JobWatcher
from ...wording import score_words

log = logging.getLogger(__name__)


class KeepUpBar(QWidget):
    """The switch and a one-line note under the Label ``page``, whose task pool runs the counting.

    Signals
    -------
    model_updated() : a background run made a new model (the page reloads, for its suggestions).
    run_started() : a background run was submitted (the page's status changed).
    """

    model_updated = Signal()
    run_started = Signal()

    def __init__(self, page):
        super().__init__(page)
        self.ws, self.run = page.ws, page.run
        self.model_updated.connect(page.refresh)
        self.run_started.connect(page.status_changed)
        self.keep_up = KeepUp(self.ws)
        self.project: str | None = None
        self.task = ""
        self.watcher = JobWatcher(self.ws, parent=self)
        self.watcher.finished.connect(self._finished)
        self.watcher.failed.connect(self._failed)
        self.watcher.cancelled.connect(lambda: self.say(""))
        self.box = QCheckBox("Improve as I label")
        self.box.setToolTip(
            f"Retrain the Fast recipe in the background after every {EVERY} new labels, so the "
            "suggestions keep up. The recipe you pick on the Train step still trains when you ask."
        )
        self.box.toggled.connect(self._toggled)
        self.note = QLabel()  # under the switch, wrapped: a narrow window has no room beside it
        self.note.setObjectName("Muted")
        self.note.setWordWrap(True)
        self.note.hide()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.box)
        column.addWidget(self.note)

    def set_project(self, project: str | None) -> None:
        """Show the switch of ``project`` (read in the page's pool) and follow a background run of it
        that started before the page opened."""
        self.watcher.stop()
        self.project = project
        self.say("")
        if project is None:
            return
        ws, keep = self.ws, self.keep_up

        def read(_state):
            jobs = [job["id"] for job in ws.training_jobs(project) if is_auto_job(job)]
            return project, ws.project_info(project)["task"], keep.enabled(project), jobs

        self.run(read, self._show, title="Could not read the project's settings")

    def _show(self, result) -> None:
        project, task, on, jobs = result
        if project != self.project:
            return
        self.task = task
        self.box.blockSignals(True)
        self.box.setChecked(on)
        self.box.blockSignals(False)
        if jobs and not self.watcher.active:
            self.watcher.watch(jobs[0])
            self.say("Updating the model in the background…")

    def labeled(self, stats: dict) -> None:
        """A label was saved (``stats`` are the project's): start a background run when one is due."""
        if not self.box.isChecked() or self.watcher.active or stats.get("project") != self.project:
            return
        project, task, keep = self.project, self.task, self.keep_up

        def count(_state):
            return project, keep.labeled(project, task, int(stats["labeled"])), keep.last_note

        self.run(count, self._counted, title="Could not start the background update")

    def stop(self) -> None:
        """Stop following (a background run goes on in its worker; the next start follows it)."""
        self.watcher.stop()

    def say(self, text: str) -> None:
        self.note.setText(text)
        self.note.setToolTip(text)
        self.note.setVisible(bool(text))

    def _toggled(self, on: bool) -> None:
        project, keep = self.project, self.keep_up
        if project is None:
            return
        self.say(f"The model updates after every {EVERY} new labels." if on else "")
        self.run(lambda _s: keep.set_enabled(project, on), title="Could not save the setting")

    def _counted(self, result) -> None:
        project, job_id, note = result
        if project != self.project:
            return
        self.say(note)
        if job_id is not None:
            self.watcher.watch(job_id)
            self.run_started.emit()

    def _finished(self, job: dict) -> None:
        score = score_words((job.get("result") or {}).get("metrics") or {})
        detail = f": {score[:1].lower()}{score[1:]}." if score != "Latest model" else "."
        self.say("Updated while you label" + detail)
        self.model_updated.emit()

    def _failed(self, message: str) -> None:
        log.warning("improve as I label: the background run failed: %s", message)
        self.say(f"The background update failed: {message}")
