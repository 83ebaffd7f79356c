"""The Train page: pick a recipe, see what it will cost on this computer, train, watch it learn.

Training runs in a worker process of the job queue (``ws.submit_training``); the page follows its
events (:class:`.run_view.RunView`), so the app stays usable while a model trains. Whether the project
can train, and why not, comes from the Workspace (``training_readiness``): the page keeps no rule of
its own. Hardware detection and the estimates run in the page's thread pool.
"""

from __future__ import annotations

import html
import logging
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ...job_watcher import TERMINAL_STATES
from ...page import LatestTask, Page
from ...widgets import show_error
from ...widgets.cluster_panel import ClusterPanel
from ...wording import TIME_LIMITS, describe_duration, nouns, result_sentence
from .facts import FactsBanner
from .run_view import RunView
from .runs_table import RunsTable, is_auto_job
from .template_card import TemplateCards

log = logging.getLogger(__name__)


class TrainPage(Page):
    """Train a model on the current project and follow the runs.

    Signals
    -------
    model_trained(str) : a run finished with this model id.
    run_started() : the user started or resumed a run.
    """

    model_trained = Signal(str)
    run_started = Signal()

    title = "Train a model"
    empty_text = "Open or create a project first."
    threads = 3

    def __init__(self, workspace, parent=None):
        super().__init__(workspace, parent)
        self.resources: dict | None = None
        self.job_id: int | None = None
        self.last_result: dict | None = None
        self.readiness = ""
        self.info: dict = {}
        self._last_stats: dict | None = None
        self._attached = False
        self._jobs_loading = False
        self.estimates = LatestTask(self.tasks, self)
        self._build()
        self._jobs_timer = QTimer(self)
        self._jobs_timer.setInterval(2000)
        self._jobs_timer.timeout.connect(self.refresh_jobs)
        self._load_hardware()

    # -- layout ------------------------------------------------------------------------------

    def _build(self) -> None:
        self.header.set_subtitle("Pick a recipe and press Start. You can keep working while it trains.")
        self.facts = FactsBanner()
        self.facts.go_label.clicked.connect(lambda: self.navigate.emit("label"))
        self.hardware, self.data_summary, self.go_label = (
            self.facts.hardware,
            self.facts.data_summary,
            self.facts.go_label,
        )

        self.card_row = TemplateCards()
        self.card_row.changed.connect(self._template_changed)
        self.no_templates = QLabel()
        self.no_templates.setObjectName("Muted")
        self.no_templates.setWordWrap(True)
        self.no_templates.hide()

        self.time_limit = QComboBox()
        for seconds, text in TIME_LIMITS:
            self.time_limit.addItem(text, seconds)
        self.time_limit.setToolTip("Training stops at this limit and keeps the best model so far.")
        self.device = QComboBox()
        self.device.addItem("Best available (automatic)", "auto")
        self.device.setToolTip("Where the work runs. Automatic picks the fastest device that works.")
        self.start_button = QPushButton("Start training")
        self.start_button.setObjectName("Primary")
        self.start_button.clicked.connect(self.start)
        self.start_hint = QLabel()
        self.start_hint.setObjectName("Warning")
        self.start_hint.setWordWrap(True)
        for combo in (self.time_limit, self.device):
            combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(8)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Time limit"))
        controls.addWidget(self.time_limit)
        controls.addSpacing(12)
        controls.addWidget(QLabel("Run on"))
        controls.addWidget(self.device)
        controls.addStretch(1)
        start_row = QHBoxLayout()  # Start on a row of its own: a narrow window never pushes it off
        start_row.addWidget(self.start_hint, 1)
        start_row.addWidget(self.start_button, 0, Qt.AlignRight | Qt.AlignTop)
        self.cluster = ClusterPanel(self.ws)  # "Run on": the cluster's workers, when one is set
        self.cluster.changed.connect(self._update_estimates)

        self.run_view = RunView(self.ws)
        self.run_view.cancel_requested.connect(self.cancel)
        self.run_view.result_button.clicked.connect(lambda: self.navigate.emit("evaluate"))
        self.run_view.finished.connect(self._on_finished)
        self.run_view.failed.connect(self._on_failed)
        self.run_view.cancelled.connect(self._on_cancelled)
        # the run view's parts, by the names the page has always had
        for name in (
            "progress",
            "stages",
            "result_banner",
            "result_text",
            "result_button",
            "chart",
            "chart_card",
        ):
            setattr(self, name, getattr(self.run_view, name))

        self.jobs_table = RunsTable()
        self.jobs_table.resume_requested.connect(self.resume)
        self.jobs_table.run_selected.connect(self._show_run)
        self.jobs_card = QFrame()
        self.jobs_card.setObjectName("Card")
        self.jobs_card.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Maximum)
        self.jobs_card.hide()
        jobs_layout = QVBoxLayout(self.jobs_card)
        jobs_layout.addWidget(QLabel("<b>Training runs</b>"))
        jobs_layout.addWidget(self.jobs_table)

        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(0, 0, 8, 0)
        layout.setSpacing(12)
        layout.addWidget(self.facts)
        layout.addWidget(QLabel("<b>Recipe</b>"))
        layout.addWidget(self.card_row)
        layout.addWidget(self.no_templates)
        layout.addLayout(controls)
        layout.addWidget(self.cluster)
        layout.addLayout(start_row)
        layout.addWidget(self.run_view)
        layout.addWidget(self.jobs_card)
        layout.addStretch(1)  # the runs follow what is shown, without a gap while the chart is hidden
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(content)
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        body.addWidget(scroll)

    def theme_changed(self) -> None:
        self.card_row.restyle()

    @property
    def cards(self) -> dict:
        """Recipe name -> its card."""
        return self.card_row.cards

    @property
    def watcher(self):
        return self.run_view.watcher

    # -- hardware and estimates ----------------------------------------------------------------

    def _load_hardware(self) -> None:
        def look(state):
            resources = self.ws.devices()
            return resources, self.ws.device_choices(resources)

        def done(found):
            self.resources, choices = found
            self.facts.show_hardware(self.resources)
            current = self.device.currentData()
            self.device.clear()
            for device, words in choices:
                self.device.addItem(words, device)
            self.device.setCurrentIndex(max(self.device.findData(current), 0))
            self._update_estimates()

        self.run(
            look,
            done,
            on_failed=lambda message, details: self.hardware.setText(
                f"Could not look at this computer: {message}"
            ),
        )
        self.cluster.load(self.run)

    def _estimate_devices(self) -> list[tuple[str, str]]:
        """Devices to estimate each recipe on: automatic, and the CPU alone when a GPU is there."""
        if self.resources and self.resources.get("gpus"):
            return [("auto", "best device"), ("cpu", "on the CPU only")]
        return [
            ("auto", "on this computer" if self.cluster.cluster_choice() == "off" else "with the cluster")
        ]

    def _update_estimates(self) -> None:
        if not self.project or not self.cards or self.resources is None:
            return
        project, names, devices, ws = self.project, list(self.cards), self._estimate_devices(), self.ws
        cluster = self.cluster.cluster_choice()

        def estimate_all(state):
            out = {}
            for name in names:
                out[name] = {}
                for device, words in devices:
                    if state.is_interruption_requested():
                        return out
                    try:
                        out[name][words] = ws.estimate_training(project, name, device=device, cluster=cluster)
                    except ValueError:  # not trainable yet: the hint under Start says why
                        out[name][words] = "after labeling"
            return out

        def done(estimates):
            for name, per_device in estimates.items():
                if name in self.cards:
                    self.cards[name].set_estimates(per_device)

        def failed(message, details):
            log.warning("estimating training time failed: %s", message)
            for card in self.cards.values():
                card.eta.setText("Could not estimate the time")

        self.estimates.start(estimate_all, done, on_failed=failed)

    # -- project -------------------------------------------------------------------------------

    def project_changed(self) -> None:
        self.run_view.stop()
        self.run_view.clear()
        self.run_view.result_banner.hide()
        self.job_id, self.last_result, self._last_stats, self._attached = None, None, None, False
        self.card_row.set_templates([])
        self.jobs_table.setRowCount(0)
        self.jobs_card.hide()
        self.data_summary.setText("Reading…")
        self._update_start()

    def load(self, project: str) -> dict:
        ws = self.ws
        info = ws.project_info(project)
        return {
            "info": info,
            "stats": ws.stats(project),
            "jobs": ws.training_runs(project),
            "readiness": ws.training_readiness(project),
            "templates": ws.templates(info["task"]),
        }

    def show_data(self, data: dict) -> None:
        self.show_empty(False)
        self.info = info = data["info"]
        self.no_templates.setText(info.get("missing") or "No training recipes for this kind of project yet.")
        self.no_templates.setVisible(not data["templates"])
        if self.card_row.set_templates(data["templates"]):
            self._template_changed()
            self._update_estimates()
        elif data["stats"] != self._last_stats:
            self._update_estimates()  # more labels, or features cached by a run: new ETA
        self._last_stats = data["stats"]
        self.readiness = data["readiness"]
        self._show_stats(info, data["stats"])
        self._fill_jobs(data["jobs"])
        if not self._attached:
            self._attached = True
            self._attach_running_job(data["jobs"])

    def _show_stats(self, info: dict, stats: dict) -> None:
        self.facts.show_data(info, stats, self.readiness)
        self._update_start()

    def _template_changed(self, *_args) -> None:
        template = next(
            (t for t in (c.template for c in self.cards.values()) if t["name"] == self.selected_template()),
            None,
        )
        budget = template and (template.get("time_budget_s") or template.get("default_time_budget"))
        self.time_limit.setItemText(
            0,
            f"Recipe default ({describe_duration(budget).replace('about ', '')})"
            if budget
            else "Recipe default",
        )
        self._update_start()

    def selected_template(self) -> str | None:
        """The name of the checked recipe card."""
        return self.card_row.selected()

    def select_template(self, name: str) -> None:
        """Check the card of recipe ``name``."""
        self.card_row.select(name)
        self._update_start()

    def _can_start(self) -> tuple[bool, str]:
        if self.project is None:
            return False, "Open a project to train."
        if self.readiness:
            return False, self.readiness
        if self.selected_template() is None:
            return False, "Pick a recipe."
        if self.run_view.active:
            return False, ""
        return True, ""

    def _update_start(self) -> None:
        ok, why = self._can_start()
        self.start_button.setEnabled(ok)
        self.start_hint.setText(why)
        self.start_hint.setVisible(bool(why))

    # -- running --------------------------------------------------------------------------------

    def start(self) -> None:
        """Submit a training run with the chosen recipe, time limit and device."""
        ok, _why = self._can_start()
        if not ok:
            return
        project, template, ws = self.project, self.selected_template(), self.ws
        budget, device = self.time_limit.currentData(), self.device.currentData() or "auto"
        self.start_button.setEnabled(False)
        self.run_view.clear()
        self.run_view.show_starting(f"Starting {self.card_row.title(template)}…")

        def failed(message, details):
            self.run_view.progress.hide()
            self._update_start()
            self.report_error("Training could not start", message, details)

        cluster = self.cluster.cluster_choice()
        self.run(
            lambda state: ws.submit_training(
                project, template, time_budget=budget, device=device, cluster=cluster
            ),
            self._follow,
            on_failed=failed,
        )
        self.run_started.emit()

    def _follow(self, job_id: int, after_seq: int = 0) -> None:
        """Follow ``job_id`` from event ``after_seq`` (0: replay its events into the chart first)."""
        self.job_id = int(job_id)
        self.run_view.follow(self.job_id, after_seq)
        self._jobs_timer.start()
        self._update_start()
        self.refresh_jobs()
        self.status_changed.emit()

    def shutdown(self) -> None:
        """The app is closing: stop following (a running job goes on in its worker process and
        this page picks it up again next time)."""
        self._jobs_timer.stop()
        self.run_view.stop()
        super().shutdown()

    def cancel(self) -> None:
        """Ask the running job to stop (it keeps what it finished, so it can be resumed)."""
        if self.job_id is not None:
            job_id, ws = self.job_id, self.ws
            self.run(lambda state: ws.cancel_job(job_id), title="Could not cancel the run")

    def _ended(self) -> None:
        self._update_estimates()  # the run cached features: the next one is quicker
        self.cluster.load(self.run)  # the run measured the workers' speed
        self._jobs_timer.stop()
        self._update_start()
        self.refresh_jobs()
        self.status_changed.emit()

    def _on_finished(self, status: dict) -> None:
        self.last_result = status.get("result") or {}
        self._ended()
        many = nouns(self.info.get("input_kind"))[1]
        metrics = self.last_result.get("metrics") or {}
        text = f"<b>Your model is ready.</b>{result_sentence(metrics, many)}"
        for note in self.last_result.get("notes") or []:  # plain text: a label may hold '<'
            text += f"<br>{html.escape(note)}"
        for warning in self.last_result.get("warnings") or []:
            text += f"<br><span style='color:#c27c0e'>{html.escape(warning)}</span>"
        self.run_view.show_result(text)
        if self.last_result.get("model"):
            self.model_trained.emit(str(self.last_result["model"]))

    def _on_failed(self, message: str, status: dict) -> None:
        self._ended()
        log_path = status.get("log_path")
        show_error(
            self,
            "Training failed",
            message,
            status.get("error"),
            Path(log_path) if log_path else self.ws.paths.log,
        )

    def _on_cancelled(self) -> None:
        self._ended()
        self.run_view.show_result(
            "Training was cancelled. Press <b>Resume</b> next to the run to continue where it stopped.",
            next_step=False,
        )

    # -- the runs table ---------------------------------------------------------------------------

    def _attach_running_job(self, jobs: list[dict]) -> None:
        for job in (j for j in jobs if not is_auto_job(j)):  # the Label page follows "Improve as I label"
            if job.get("state") not in TERMINAL_STATES:
                template = (job.get("params") or {}).get("template")
                if template and template != self.selected_template():
                    self.select_template(template)  # the card shows the recipe that is running
                self._follow(job["id"])
                return

    def refresh_jobs(self) -> None:
        """Re-read this project's training runs (off the UI thread)."""
        if self.project is None or self._jobs_loading:
            return
        project, ws = self.project, self.ws
        self._jobs_loading = True

        def done(jobs):
            if project == self.project:
                self._fill_jobs(jobs)

        handle = self.run(lambda state: ws.training_runs(project), done, title="Could not read the runs")
        if handle is not None:
            handle.ended.connect(lambda: setattr(self, "_jobs_loading", False))

    def _fill_jobs(self, jobs: list[dict]) -> None:
        self.jobs_table.set_runs(jobs, self.card_row.title)
        self.jobs_card.setVisible(bool(jobs))

    def resume(self, job_id: int) -> None:
        """Restart a cancelled or failed run; it reuses the features it already computed."""
        self.run_view.clear()
        self.run_view.show_starting("Resuming")
        ws = self.ws

        def failed(message, details):
            self.run_view.progress.hide()
            self.report_error("The run could not be resumed", message, details)

        self.run(
            lambda state: ws.resume_job(job_id), lambda after: self._follow(job_id, after), on_failed=failed
        )
        self.run_started.emit()

    def _show_run(self, job_id: int) -> None:
        if not self.run_view.active:
            ws = self.ws
            self.run(
                lambda state: ws.job_events(job_id, 0),
                self.run_view.show_events,
                title="Could not read the run",
            )
