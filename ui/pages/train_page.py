"""The Train page: pick a recipe, see what it will cost on this computer, train, watch it learn.

Training runs in a worker process of the job queue (``ws.submit_training``); this page only follows
its events through a :class:`~modeldesk.ui.job_watcher.JobWatcher`, so the app stays usable while a
model trains. Hardware detection and the cost-model estimates run in the thread pool.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QButtonGroup, QComboBox, QFrame, QGridLayout,
                               QHBoxLayout, QHeaderView, QLabel, QPushButton, QRadioButton, QScrollArea,
                               QSizePolicy, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from modeldesk.ui import theme
from modeldesk.ui.charts import TrainingChart
from modeldesk.ui.job_watcher import CANCELLED_STATES, DONE_STATES, FAILED_STATES, JobWatcher, TaskGroup
from modeldesk.ui.pages.evaluate_page import headline
from modeldesk.ui.widgets import ProgressPanel, show_error

log = logging.getLogger(__name__)

TIME_LIMITS = ((None, "Recipe default"), (60, "1 minute"), (120, "2 minutes"), (300, "5 minutes"),
               (900, "15 minutes"), (1800, "30 minutes"), (3600, "1 hour"))
STATE_WORDS = {"queued": "Waiting", "pending": "Waiting", "running": "Training", "done": "Finished",
               "failed": "Failed", "cancelled": "Cancelled", "canceled": "Cancelled"}


def describe_duration(seconds) -> str:
    """``75`` -> ``about 1 min``; short and rounded the way people say it."""
    if seconds is None:
        return "unknown"
    seconds = float(seconds)
    if seconds < 60:
        return f"about {max(5, round(seconds / 5) * 5)} s"
    if seconds < 3600:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def describe_hardware(resources: dict) -> str:
    """One line a person can read: ``Intel Xeon, 2 cores, 23 GB memory, no GPU found``."""
    cpu = resources.get("cpu") or {}
    model = " ".join(str(cpu.get("model") or "Unknown CPU").replace("(R)", "").replace("(TM)", "")
                     .replace(" Processor", "").replace(" CPU", "").split())
    cores = cpu.get("physical_cores") or cpu.get("logical_cores") or "?"
    memory = (resources.get("memory") or {}).get("total_bytes") or 0
    parts = [model, f"{cores} cores", f"{memory / 1e9:.0f} GB memory"]
    gpus = resources.get("gpus") or []
    if gpus:
        parts.extend(f"{g.get('name', 'GPU')} ({(g.get('memory_total_bytes') or 0) / 1e9:.0f} GB)" for g in gpus)
    else:
        parts.append("no GPU found")
    return ", ".join(parts)


def plan_device_words(plan: dict | None) -> str:
    """Which devices a plan uses, in words ("on the CPU", "on NVIDIA H200")."""
    if not plan:
        return ""
    devices = plan.get("devices") or []
    names = []
    for device in devices:
        if isinstance(device, dict):
            name = device.get("name") or device.get("device") or device.get("kind")
        else:
            name = str(device)
        if name and str(name).lower() != "auto":
            names.append("the CPU" if str(name).lower() == "cpu" else str(name))
    return f"on {' + '.join(dict.fromkeys(names))}" if names else ""


def template_title(template: dict) -> str:
    """The recipe's display title: its ``title``, else the last part of its name (``.../fast`` -> ``Fast``)."""
    return template.get("title") or template["name"].rsplit("/", 1)[-1].replace("-", " ").capitalize()


class TemplateCard(QFrame):
    """A checkable card for one training recipe: title, what it is for, and its ETA here."""

    def __init__(self, template: dict, parent=None):
        super().__init__(parent)
        self.template = template
        self.name = template["name"]
        self.setObjectName("Card")
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Maximum)
        self.setCursor(Qt.PointingHandCursor)
        self.setMinimumWidth(220)
        self.button = QRadioButton(template_title(template))
        self.button.setStyleSheet("QRadioButton { font-size: 15px; font-weight: 600; }")
        self.button.setToolTip(f"Recipe '{self.name}'")
        self.button.toggled.connect(self.set_selected)
        self.description = QLabel(template.get("description") or "")
        self.description.setWordWrap(True)
        self.description.setObjectName("Muted")
        self.description.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.eta = QLabel("Estimating the time on this computer…")
        self.eta.setWordWrap(True)
        self.set_selected(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.addWidget(self.button)
        layout.addWidget(self.description, 1)
        layout.addWidget(self.eta)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt name): the whole card selects
        if event.button() == Qt.LeftButton:
            self.button.setChecked(True)
        super().mouseReleaseEvent(event)

    def set_estimates(self, estimates: dict) -> None:
        """Show ``{device_label: estimate dict or error string}``; the planner's notes go in the tooltip."""
        lines, notes = [], []
        for label, estimate in estimates.items():
            if isinstance(estimate, str):
                lines.append(f"{label}: {estimate}")
                continue
            plan = estimate.get("plan") or {}
            where = plan_device_words(plan) or label
            lines.append(f"{describe_duration(estimate.get('eta_s'))} {where}")
            notes.extend(note for note in plan.get("notes") or [] if note not in notes)
        text = " · ".join(lines) or "No estimate"
        self.eta.setText(f"<b>Time:</b> {text[:1].upper() + text[1:]}")
        self.eta.setToolTip("\n".join(notes))

    def set_selected(self, selected: bool) -> None:
        """Draw the card as the chosen one (accent border)."""
        colors = theme.current()
        border = f"2px solid {colors.accent}" if selected else f"1px solid {colors.border}"
        self.setStyleSheet(f"QFrame#Card {{ border: {border}; border-radius: 10px; background: {colors.base}; }}")


class TrainPage(QWidget):
    """Train a model on the current project and follow the runs.

    Signals
    -------
    status_changed() : a run started or ended (the sidebar re-reads its state).
    navigate(str) : go to another page ("label", "evaluate").
    model_trained(str) : a run finished with this model id.
    """

    status_changed = Signal()
    navigate = Signal(str)
    model_trained = Signal(str)

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.project: str | None = None
        self.task: str | None = None
        self.resources: dict | None = None
        self.cards: dict[str, TemplateCard] = {}
        self.job_id: int | None = None
        self.last_result: dict | None = None
        self.tasks = TaskGroup(self._error, self)
        self._estimate_generation = 0
        self._watcher: JobWatcher | None = None
        self._template_budgets: dict = {}
        self._needs_labels = False
        self._load_generation = 0
        self._need_cards = False
        self._last_stats: dict | None = None
        self._jobs_loading = False
        self.loaded = False
        self._build()
        self._jobs_timer = QTimer(self)
        self._jobs_timer.setInterval(2000)
        self._jobs_timer.timeout.connect(self.refresh_jobs)
        self._load_hardware()

    # -- layout ------------------------------------------------------------------------------

    def _build(self) -> None:
        title = QLabel("Train a model")
        title.setObjectName("PageTitle")
        self.subtitle = QLabel("Pick a recipe and press Start. You can keep working while it trains.")
        self.subtitle.setObjectName("Muted")
        self.subtitle.setWordWrap(True)

        self.hardware = QLabel("Looking at this computer…")
        self.hardware.setObjectName("Muted")
        self.hardware.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.data_summary = QLabel()
        self.data_summary.setWordWrap(True)
        self.go_label = QPushButton("Go to labeling")
        self.go_label.clicked.connect(lambda: self.navigate.emit("label"))
        self.go_label.hide()
        facts = QFrame()
        facts.setObjectName("Banner")
        facts_layout = QGridLayout(facts)
        facts_layout.setContentsMargins(12, 8, 12, 8)
        facts_layout.addWidget(QLabel("<b>Your data</b>"), 0, 0)
        facts_layout.addWidget(self.data_summary, 0, 1)
        facts_layout.addWidget(self.go_label, 0, 2)
        facts_layout.addWidget(QLabel("<b>This computer</b>"), 1, 0)
        facts_layout.addWidget(self.hardware, 1, 1, 1, 2)
        facts_layout.setColumnStretch(1, 1)

        self.cards_row = QHBoxLayout()
        self.cards_row.setSpacing(12)
        self.card_group = QButtonGroup(self)
        self.card_group.setExclusive(True)
        self.no_templates = QLabel("No training recipes for this kind of project yet.")
        self.no_templates.setObjectName("Muted")
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
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Time limit"))
        controls.addWidget(self.time_limit)
        controls.addSpacing(16)
        self.device_caption = QLabel("Run on")
        controls.addWidget(self.device_caption)
        controls.addWidget(self.device)
        controls.addStretch(1)
        controls.addWidget(self.start_button)

        self.progress = ProgressPanel()
        self.progress.cancel_requested.connect(self.cancel)
        self.result_banner = QFrame()
        self.result_banner.setObjectName("Banner")
        self.result_text = QLabel()
        self.result_text.setWordWrap(True)
        self.result_button = QPushButton("See how good it is →")
        self.result_button.setObjectName("Primary")
        self.result_button.clicked.connect(lambda: self.navigate.emit("evaluate"))
        banner_layout = QHBoxLayout(self.result_banner)
        banner_layout.setContentsMargins(12, 10, 12, 10)
        banner_layout.addWidget(self.result_text, 1)
        banner_layout.addWidget(self.result_button)
        self.result_banner.hide()

        self.stages = QLabel()
        self.stages.setWordWrap(True)
        self.stages.setTextFormat(Qt.RichText)
        self.stages.hide()
        self._stage_names: list[str] = []
        self.chart = TrainingChart()
        self.chart.setMinimumHeight(180)
        self.chart_card = chart_card = QFrame()
        chart_card.hide()
        chart_card.setObjectName("Card")
        chart_layout = QVBoxLayout(chart_card)
        chart_layout.addWidget(QLabel("<b>How it is learning</b>"))
        chart_layout.addWidget(self.chart, 1)

        self.jobs_table = QTableWidget(0, 5)
        self.jobs_table.setHorizontalHeaderLabels(["Run", "Recipe", "State", "Started", ""])
        self.jobs_table.verticalHeader().hide()
        self.jobs_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.jobs_table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.jobs_table.setSelectionMode(QAbstractItemView.SingleSelection)
        header = self.jobs_table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.Stretch)
        self.jobs_table.itemSelectionChanged.connect(self._show_selected_job)
        self.jobs_card = jobs_card = QFrame()
        jobs_card.setObjectName("Card")
        jobs_card.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Maximum)
        jobs_card.hide()
        jobs_layout = QVBoxLayout(jobs_card)
        jobs_layout.addWidget(QLabel("<b>Training runs</b>"))
        jobs_layout.addWidget(self.jobs_table)

        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(24, 20, 24, 20)
        layout.setSpacing(12)
        layout.addWidget(title)
        layout.addWidget(self.subtitle)
        layout.addWidget(facts)
        layout.addWidget(QLabel("<b>Recipe</b>"))
        layout.addLayout(self.cards_row)
        layout.addWidget(self.no_templates)
        layout.addLayout(controls)
        layout.addWidget(self.start_hint)
        layout.addWidget(self.progress)
        layout.addWidget(self.stages)
        layout.addWidget(self.result_banner)
        layout.addWidget(chart_card, 1)
        layout.addWidget(jobs_card)
        layout.addStretch(0)  # takes the room while the chart is hidden (the chart's stretch wins otherwise)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

    # -- background helpers ------------------------------------------------------------------

    def _run(self, fn, on_done, title: str = "Something went wrong", on_failed=None):
        return self.tasks.run(fn, on_done, title=title, on_failed=on_failed)

    def _error(self, title: str, message: str, details: str | None = None) -> None:
        show_error(self, title, message, details, self.ws.paths.log)

    # -- hardware and estimates ----------------------------------------------------------------

    def _load_hardware(self) -> None:
        def done(found):
            resources, choices = found
            self.resources = resources
            self.hardware.setText(describe_hardware(resources))
            self.hardware.setToolTip("\n".join(f"{name}: {'works' if ok else 'not available'}"
                                               for name, ok in (resources.get("providers") or {}).items()))
            current = self.device.currentData()
            self.device.clear()
            for device, label in choices:
                self.device.addItem(label, device)
            index = self.device.findData(current)
            self.device.setCurrentIndex(max(index, 0))
            self._update_estimates()

        def look(state):
            resources = self.ws.devices()
            return resources, self.ws.device_choices(resources)

        self._run(look, done, on_failed=lambda message, details: (
            self.hardware.setText(f"Could not look at this computer: {message}")))

    def _estimate_devices(self) -> list[tuple[str, str]]:
        """Devices to estimate each recipe on: automatic, and the CPU alone when a GPU is there."""
        if self.resources and self.resources.get("gpus"):
            return [("auto", "best device"), ("cpu", "on the CPU only")]
        return [("auto", "on this computer")]

    def _update_estimates(self) -> None:
        if not self.project or not self.cards or self.resources is None:
            return
        self._estimate_generation += 1
        generation = self._estimate_generation
        project, names, devices = self.project, list(self.cards), self._estimate_devices()

        def estimate_all(state):
            out = {}
            for name in names:
                out[name] = {}
                for device, label in devices:
                    if state.is_interruption_requested():
                        return out
                    try:
                        out[name][label] = self.ws.estimate_training(project, name, device=device)
                    except ValueError as exc:  # e.g. nothing labeled yet: say so on the card
                        out[name][label] = str(exc)
            return out

        def done(estimates):
            if generation != self._estimate_generation:
                return
            for name, per_device in estimates.items():
                if name in self.cards:
                    self.cards[name].set_estimates(per_device)

        def failed(message, details):
            log.warning("estimating training time failed: %s", message)
            for card in self.cards.values():
                card.eta.setText("Could not estimate the time")

        self._run(estimate_all, done, on_failed=failed)

    # -- project -------------------------------------------------------------------------------

    def set_project(self, name: str | None) -> None:
        """Show ``name`` (None: no project open); its recipes, data and runs load in the background."""
        if self._watcher is not None and self.project != name:
            self._watcher.stop()
            self.job_id = None
            self.progress.hide()
        self.project = name
        self.task = None
        self.last_result = None
        self.result_banner.hide()
        self._clear_run_view()
        self._build_cards([])
        self.refresh(new_project=True)

    def _build_cards(self, templates: list[dict]) -> None:
        for card in self.cards.values():
            self.card_group.removeButton(card.button)
            card.deleteLater()
        self.cards.clear()
        while self.cards_row.count():
            self.cards_row.takeAt(0)
        if self.task is None:
            self.no_templates.hide()
            return
        self.no_templates.setVisible(not templates)
        self._template_budgets = {t["name"]: t.get("time_budget_s") or t.get("default_time_budget")
                                  for t in templates}
        for template in templates:
            card = TemplateCard(template)
            self.card_group.addButton(card.button)
            card.button.toggled.connect(lambda on: on and self._template_changed())
            self.cards[card.name] = card
            self.cards_row.addWidget(card, 1)
        if templates:
            self.cards[templates[0]["name"]].button.setChecked(True)
            self._template_changed()
        self._update_estimates()

    def _template_changed(self) -> None:
        budget = self._template_budgets.get(self.selected_template())
        default = f"Recipe default ({describe_duration(budget).replace('about ', '')})" if budget else "Recipe default"
        self.time_limit.setItemText(0, default)
        self._update_start()

    def selected_template(self) -> str | None:
        """The name of the checked recipe card."""
        for name, card in self.cards.items():
            if card.button.isChecked():
                return name
        return None

    def select_template(self, name: str) -> None:
        """Check the card of recipe ``name``."""
        self.cards[name].button.setChecked(True)
        self._update_start()

    def refresh(self, new_project: bool = False) -> None:
        """Re-read the data summary and the runs (and, for a new project, its recipes) off the UI thread."""
        self._load_generation += 1
        new_project = new_project or self._need_cards
        self._need_cards = new_project
        generation, project, ws = self._load_generation, self.project, self.ws
        if project is None:
            self._needs_labels = False
            self.data_summary.setText("Open or create a project first.")
            self.go_label.hide()
            self.jobs_table.setRowCount(0)
            self._update_start()
            return
        if new_project:
            self.data_summary.setText("Reading…")

        def load(state):
            out = {"stats": ws.stats(project), "jobs": project_jobs(ws, project)}
            if new_project:
                out["task"] = ws.project(project).task
                out["templates"] = ws.templates(out["task"])
                out["min_classes"] = ws.project_info(project).get("min_classes") or 2
            return out

        def done(loaded):
            if generation != self._load_generation or project != self.project:
                return
            if new_project:
                self.task = loaded["task"]
                self.min_classes = loaded["min_classes"]
                self._build_cards(loaded["templates"])  # estimates follow
                self._need_cards = False
            elif loaded["stats"] != self._last_stats:
                self._update_estimates()  # more labels, or features cached by a run: new ETA
            self._last_stats = loaded["stats"]
            self._show_stats(loaded["stats"])
            self._fill_jobs(loaded["jobs"])
            if new_project:
                self._attach_running_job(loaded["jobs"])
            self.loaded = True

        self.loaded = False
        self._run(load, done, title="Could not read the project")

    def _show_stats(self, stats: dict) -> None:
        self._needs_labels = False
        counts = {label: n for label, n in (stats.get("labels") or {}).items() if n}
        labeled = sum(counts.values())
        need = getattr(self, "min_classes", 2)
        if len(counts) >= need and counts:
            smallest = min(counts, key=counts.get)
            text = f"{labeled:,} labeled of {stats.get('samples', 0):,} in {len(counts)} classes"
            if len(counts) == 1:  # a detector with one class: the sentence names it
                text = f"{labeled:,} labeled of {stats.get('samples', 0):,}, all '{smallest}'"
            if counts[smallest] < 5:
                text += (f". <span style='color:#c27c0e'>'{smallest}' has only {counts[smallest]}: "
                         "label a few more for a reliable model.</span>")
            self.data_summary.setText(text)
            self.go_label.hide()
        else:
            self.data_summary.setText(
                f"{labeled:,} labeled of {stats.get('samples', 0):,}. A model needs at least "
                f"{'one class' if need == 1 else 'two classes'} with labeled examples.")
            self._needs_labels = True
            self.go_label.show()
        self._update_start()

    def _can_start(self) -> tuple[bool, str]:
        if self.project is None:
            return False, "Open a project to train."
        if self.selected_template() is None:
            return False, "Pick a recipe."
        if self.job_id is not None and self._watcher is not None and self._watcher.active:
            return False, ""
        if self._needs_labels:
            return False, ("Label some examples first." if getattr(self, "min_classes", 2) == 1
                           else "Label examples of at least two classes first.")
        return True, ""

    def _update_start(self) -> None:
        ok, why = self._can_start()
        self.start_button.setEnabled(ok)
        self.start_hint.setText(why)
        self.start_hint.setVisible(bool(why))

    # -- running --------------------------------------------------------------------------------

    @property
    def watcher(self) -> JobWatcher:
        """The job watcher (created on first use, so the queue opens only when needed)."""
        if self._watcher is None:
            self._watcher = JobWatcher(self.ws, parent=self)
            self._watcher.progress.connect(self._on_event)
            self._watcher.finished.connect(self._on_finished)
            self._watcher.failed.connect(self._on_failed)
            self._watcher.cancelled.connect(self._on_cancelled)
        return self._watcher

    def start(self) -> None:
        """Submit a training run with the chosen recipe, time limit and device."""
        ok, why = self._can_start()
        if not ok:
            return
        project, template = self.project, self.selected_template()
        budget, device = self.time_limit.currentData(), self.device.currentData() or "auto"
        self.start_button.setEnabled(False)
        self.result_banner.hide()
        self._clear_run_view()
        self._show_progress(f"Starting {self.cards[template].button.text()}…")

        def submit(state):
            return self.ws.submit_training(project, template, time_budget=budget, device=device)

        def failed(message, details):
            self.progress.hide()
            self._update_start()
            self._error("Training could not start", message, details)

        self._run(submit, self._follow, on_failed=failed)

    def _follow(self, job_id: int, after_seq: int = 0) -> None:
        """Follow ``job_id`` from event ``after_seq`` (0: replay its events into the chart first)."""
        self.job_id = int(job_id)
        self._show_progress("Training")
        self.watcher.watch(self.job_id, after_seq)
        self._jobs_timer.start()
        self._update_start()
        self.refresh_jobs()
        self.status_changed.emit()

    def _show_progress(self, title: str) -> None:
        self.progress.title.setText(title)
        self.progress.detail.setText("")
        self.progress.eta.setText("")
        self.progress.bar.setRange(0, 0)
        self.progress.cancel_button.setEnabled(True)
        self.progress.cancel_button.setText("Cancel")
        self.progress.show()

    def shutdown(self) -> None:
        """The app is closing: stop following (a running job goes on in its worker process and
        this page picks it up again next time)."""
        self._jobs_timer.stop()
        if self._watcher is not None:
            self._watcher.stop()
        self.tasks.cancel_all()

    def cancel(self) -> None:
        """Ask the running job to stop (it keeps what it finished, so it can be resumed)."""
        if self.job_id is not None:
            job_id = self.job_id
            self._run(lambda state: self.ws.cancel_job(job_id), None, title="Could not cancel the run")

    def _on_event(self, event: dict) -> None:
        if event.get("type") == "state":
            if event.get("stage") == "queued":
                self.progress.title.setText("Waiting for the run before it to finish")
            elif event.get("stage") == "running":
                self.progress.title.setText("Training")
            return
        fraction = event.get("fraction")
        stage = event.get("stage") or event.get("message") or ""
        if stage == "cancelling":
            stage = "Stopping…"
        eta = event.get("eta_s")
        if isinstance(fraction, (int, float)):
            self.progress.set_progress(int(round(fraction * 1000)), 1000, stage,
                                       float(eta) if isinstance(eta, (int, float)) else -1.0)
            self.progress.bar.setFormat("%p%")
        elif stage:
            self.progress.detail.setText(stage)
        self._add_stage(event.get("stage"))
        if self.chart.add_metrics(event.get("metrics")):
            self.chart_card.show()

    def _add_stage(self, stage) -> None:
        """Keep a one-line checklist of the stages passed: done ones ticked, the current one bold."""
        if not stage or stage in ("cancelling", "Done") or (self._stage_names and self._stage_names[-1] == stage):
            return
        if stage in self._stage_names:
            self._stage_names.remove(stage)
        self._stage_names.append(stage)
        muted = theme.current().muted
        parts = [f"<span style='color:{theme.current().good}'>✓</span> {name}" for name in self._stage_names[:-1]]
        parts.append(f"<b>{self._stage_names[-1]}…</b>")
        self.stages.setText(f"<span style='color:{muted}'>" + "&nbsp;&nbsp;›&nbsp;&nbsp;".join(parts) + "</span>")
        self.stages.show()

    def _clear_run_view(self) -> None:
        self.chart.clear()
        self.chart_card.hide()
        self._stage_names = []
        self.stages.hide()

    def _ended(self) -> None:
        self.progress.hide()
        self.stages.hide()
        self._update_estimates()  # the run cached features: the next one is quicker
        self._jobs_timer.stop()
        self._update_start()
        self.refresh_jobs()
        self.status_changed.emit()

    def _on_finished(self, status: dict) -> None:
        self.last_result = status.get("result") or {}
        self._ended()
        metrics = self.last_result.get("metrics") or {}
        accuracy = metrics.get("accuracy")
        text = "<b>Your model is ready.</b>"
        if isinstance(accuracy, (int, float)):
            text += (f" {headline(accuracy, metrics.get('n'))} on photos it never saw during training.")
        for warning in self.last_result.get("warnings") or []:
            text += f"<br><span style='color:#c27c0e'>{warning}</span>"
        self.result_text.setText(text)
        self.result_button.show()
        self.result_banner.show()
        if self.last_result.get("model"):
            self.model_trained.emit(str(self.last_result["model"]))

    def _on_failed(self, message: str) -> None:
        self._ended()
        message = re.sub(r"^[A-Za-z_.]*(Error|Exception): ", "", message)  # people do not need the class
        status = self.watcher.last_status or {}
        log_path = status.get("log_path")
        show_error(self, "Training failed", message, status.get("error"),
                   Path(log_path) if log_path else self.ws.paths.log)

    def _on_cancelled(self) -> None:
        self._ended()
        self.result_text.setText("Training was cancelled. Press <b>Resume</b> next to the run to "
                                 "continue where it stopped.")
        self.result_button.hide()
        self.result_banner.show()

    # -- the runs table ---------------------------------------------------------------------------

    def _attach_running_job(self, jobs: list[dict]) -> None:
        for job in jobs:
            if job.get("state") not in DONE_STATES | FAILED_STATES | CANCELLED_STATES:
                self._follow(job["id"])
                return

    def refresh_jobs(self) -> None:
        """Re-read this project's training runs from the queue (off the UI thread)."""
        if self.project is None or self._jobs_loading:
            return
        project, ws = self.project, self.ws
        self._jobs_loading = True

        def done(jobs):
            if project == self.project:
                self._fill_jobs(jobs)

        handle = self._run(lambda state: project_jobs(ws, project), done, title="Could not read the runs")
        handle.ended.connect(lambda: setattr(self, "_jobs_loading", False))

    def _fill_jobs(self, jobs: list[dict]) -> None:
        self.jobs_table.setRowCount(len(jobs))
        self.jobs_table.setColumnHidden(4, not any(j.get("state") in FAILED_STATES | CANCELLED_STATES for j in jobs))
        self.jobs_card.setVisible(bool(jobs))
        for row, job in enumerate(jobs):
            params = job.get("params") or {}
            template = params.get("template", "")
            title = self.cards[template].button.text() if template in self.cards else template
            state = job.get("state", "")
            words = STATE_WORDS.get(state, state.capitalize())
            if state in DONE_STATES:
                accuracy = ((job.get("result") or {}).get("metrics") or {}).get("accuracy")
                if isinstance(accuracy, (int, float)):
                    words += f": right {accuracy:.0%} of the time"
            elif state in FAILED_STATES and job.get("error"):
                words += f": {job['error']}"
            started = job.get("created_at") or job.get("started_at") or ""
            items = [QTableWidgetItem(f"#{job['id']}"), QTableWidgetItem(title), QTableWidgetItem(words),
                     QTableWidgetItem(_short_time(started))]
            items[2].setToolTip(words)
            for col, item in enumerate(items):
                item.setData(Qt.UserRole, job["id"])
                self.jobs_table.setItem(row, col, item)
            if state in FAILED_STATES | CANCELLED_STATES:
                button = QPushButton("Resume")
                button.setToolTip("Continue this run; finished work is reused.")
                button.clicked.connect(lambda _=False, job_id=job["id"]: self.resume(job_id))
                self.jobs_table.setCellWidget(row, 4, button)
            else:
                self.jobs_table.removeCellWidget(row, 4)
        rows = min(max(len(jobs), 1), 6)
        self.jobs_table.setFixedHeight(self.jobs_table.horizontalHeader().height() + 4
                                       + sum(self.jobs_table.rowHeight(r) for r in range(rows)))

    def resume(self, job_id: int) -> None:
        """Restart a cancelled or failed run; it reuses the features it already computed."""
        self.result_banner.hide()
        self.result_button.show()
        self._clear_run_view()
        self._show_progress("Resuming")

        def failed(message, details):
            self.progress.hide()
            self._error("The run could not be resumed", message, details)

        def resume(state):
            return self.ws.resume_job(job_id)

        self._run(resume, lambda after_seq: self._follow(job_id, after_seq), on_failed=failed)

    def _show_selected_job(self) -> None:
        items = self.jobs_table.selectedItems()
        if not items or self._watcher is not None and self._watcher.active:
            return
        job_id = items[0].data(Qt.UserRole)
        self._clear_run_view()

        def show(events):
            for event in events:
                if self.chart.add_metrics(event.get("metrics")):
                    self.chart_card.show()

        self._run(lambda state: self.ws.job_events(job_id, 0), show, title="Could not read the run")


def project_jobs(ws, project: str) -> list[dict]:
    """The project's training jobs, newest first (worker thread: the first call opens the queue)."""
    return ws.training_runs(project)


def _short_time(value) -> str:
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value).strftime("%d %b %H:%M")
    text = str(value)
    try:
        return datetime.fromisoformat(text).astimezone().strftime("%d %b %H:%M")
    except ValueError:
        return text
