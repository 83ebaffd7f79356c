"""One training run as it happens: the progress bar (never backwards), the stages passed, the live
chart, and the result banner at the end. It follows the run's events through a JobWatcher."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ... import theme
from ...job_watcher import JobWatcher
from ...training_chart import TrainingChart
from ...widgets import ProgressPanel


class RunView(QWidget):
    """Progress, stages, chart and result of the run being followed.

    Signals
    -------
    finished(dict) : the run ended well (the job's status; its ``result`` has the model id).
    failed(str, dict) : the run failed: its readable message and status.
    cancelled() : the run was cancelled.
    cancel_requested() : the user pressed Cancel.
    """

    finished = Signal(dict)
    failed = Signal(str, dict)
    cancelled = Signal()
    cancel_requested = Signal()

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self._watcher: JobWatcher | None = None
        self.stage_names: list[str] = []
        self._fraction = 0.0
        self.progress = ProgressPanel()
        self.progress.cancel_requested.connect(self.cancel_requested)
        self.stages = QLabel()
        self.stages.setWordWrap(True)
        self.stages.setTextFormat(Qt.RichText)
        self.stages.hide()
        self.result_banner = QFrame()
        self.result_banner.setObjectName("Banner")
        self.result_text = QLabel()
        self.result_text.setWordWrap(True)
        self.result_button = QPushButton("See how good it is  ›")
        self.result_button.setObjectName("Primary")
        banner = QHBoxLayout(self.result_banner)
        banner.setContentsMargins(12, 10, 12, 10)
        banner.addWidget(self.result_text, 1)
        banner.addWidget(self.result_button)
        self.result_banner.hide()
        self.chart = TrainingChart()
        self.chart.setMinimumHeight(240)
        self.chart_card = QFrame()
        self.chart_card.setObjectName("Card")
        self.chart_card.hide()
        chart_layout = QVBoxLayout(self.chart_card)
        chart_layout.addWidget(QLabel("<b>How it is learning</b>"))
        chart_layout.addWidget(self.chart, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(12)
        for widget in (self.progress, self.stages, self.result_banner):
            layout.addWidget(widget)
        layout.addWidget(self.chart_card, 1)

    @property
    def watcher(self) -> JobWatcher:
        """The job watcher (created on first use, so the queue opens only when needed)."""
        if self._watcher is None:
            self._watcher = JobWatcher(self.ws, parent=self)
            self._watcher.progress.connect(self._on_event)
            self._watcher.finished.connect(self._ended(self.finished.emit))
            self._watcher.failed.connect(
                lambda message: self._ended(self.failed.emit)(message, self._watcher.last_status or {})
            )
            self._watcher.cancelled.connect(self._ended(self.cancelled.emit))
        return self._watcher

    @property
    def active(self) -> bool:
        """True while a run is followed."""
        return self._watcher is not None and self._watcher.active

    def follow(self, job_id: int, after_seq: int = 0) -> None:
        """Follow ``job_id`` from the event after ``after_seq`` (0 replays its events into the chart)."""
        self.show_starting("Training")
        self.watcher.watch(int(job_id), after_seq)

    def stop(self) -> None:
        """Stop following (the run itself goes on in its worker process)."""
        if self._watcher is not None:
            self._watcher.stop()
        self.progress.hide()

    def show_starting(self, title: str) -> None:
        """Show the progress panel with ``title`` and a busy bar."""
        self.result_banner.hide()
        self.progress.title.setText(title)
        self.progress.detail.setText("")
        self.progress.eta.setText("")
        self.progress.bar.setRange(0, 0)
        self.progress.cancel_button.setEnabled(True)
        self.progress.cancel_button.setText("Cancel")
        self.progress.show()

    def clear(self) -> None:
        """Forget the chart and the stages (a new run, or another project)."""
        self.chart.clear()
        self.chart_card.hide()
        self.stage_names = []
        self._fraction = 0.0
        self.stages.hide()

    def show_events(self, events: list[dict]) -> None:
        """Draw a finished run's chart from its events."""
        self.clear()
        for event in events:
            self._chart(event.get("metrics"))

    def show_result(self, html: str, *, next_step: bool = True) -> None:
        self.result_text.setText(html)
        self.result_button.setVisible(next_step)
        self.result_banner.show()

    def _ended(self, emit):
        def ended(*args):
            self.progress.hide()
            self.stages.hide()
            emit(*args)

        return ended

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
            self._fraction = max(self._fraction, float(fraction))  # the bar never goes backwards
            self.progress.set_progress(
                int(round(self._fraction * 1000)),
                1000,
                stage,
                float(eta) if isinstance(eta, (int, float)) else -1.0,
            )
            self.progress.bar.setFormat("%p%")
        elif stage:
            self.progress.detail.setText(stage)
        self._add_stage(event.get("stage"))
        self._chart(event.get("metrics"))

    def _chart(self, metrics) -> None:
        """The chart appears once a curve moves (two points or more); a single value is not a chart."""
        if self.chart.add_metrics(metrics) and self.chart.moves:
            self.chart_card.show()

    def _add_stage(self, stage) -> None:
        """Keep a one-line checklist of the stages passed: done ones ticked, the current one bold."""
        names = self.stage_names
        if not stage or stage in ("cancelling", "Done") or (names and names[-1] == stage):
            return
        if stage in names:
            names.remove(stage)
        names.append(stage)
        colors = theme.current()
        parts = [f"<span style='color:{colors.good}'>✓</span> {name}" for name in names[:-1]]
        parts.append(f"<b>{names[-1]}…</b>")
        self.stages.setText(
            f"<span style='color:{colors.muted}'>" + "&nbsp;&nbsp;›&nbsp;&nbsp;".join(parts) + "</span>"
        )
        self.stages.show()
