"""The Deploy page: try the model on a photo, serve it locally, export, compress and bundle it.

Everything that takes time (prediction, export, compression, bundle, starting and stopping the
service) runs in the page's thread pool; export and compression stop at the next candidate when
the user cancels. The cards are small widgets of their own (:mod:`.try_it`, :mod:`.service_card`,
:mod:`.export_card`); this page picks the model and hands it to them.
"""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget

from ...page import LatestTask, Page
from ...status import mark_deployed
from ...widgets.clip_player import load_peaks
from ...widgets.model_picker import ModelPicker
from ...wording import template_title
from .export_card import ExportCard
from .put_to_work import PutToWorkCard
from .service_card import ServiceCard
from .try_it import TryIt


class DeployPage(Page):
    """Try, serve and export the project's models."""

    title = "Use your model"
    empty_text = "No model yet.\nTrain one, then try it, serve it and export it here."
    empty_button = "Go to training"
    empty_target = "train"

    def __init__(self, workspace, parent=None):
        super().__init__(workspace, parent)
        self.models: list[dict] = []
        self.model_id: str | None = None
        self.last_prediction: dict | None = None
        self.predictions = LatestTask(self.tasks, self)
        self.picker_label = QLabel("Model")
        self.picker = ModelPicker()
        self.picker.picked.connect(self.pick_model)
        self.header.add(self.picker_label)
        self.header.add(self.picker)
        self.import_button = self.header.add(QPushButton("Import a model…"))
        self.import_button.setToolTip("An image classifier exported to ONNX from another tool")
        self.import_button.clicked.connect(self.import_model)
        self.import_button.setVisible(False)
        self.recorder = self.make_recorder()
        self.recorder.recorded.connect(self._recorded)
        self.try_it = TryIt(
            self.try_file, self.report_error, self.recorder, on_text=self.try_text, on_row=self.try_row
        )
        self.try_it.live.predict = lambda payload: self.ws.predict_payloads(self.model_id, [payload])[0]
        self.service_card = ServiceCard(workspace, self.run, self.report_error, self)
        self.service_card.changed.connect(self._used)
        self.export_card = ExportCard(workspace, self.run, self)
        self.export_card.exported.connect(self._used)
        self.put_to_work = PutToWorkCard(workspace, self.run, self.report_error, self)
        self.put_to_work.changed.connect(self._used)
        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(0, 0, 8, 0)
        layout.setSpacing(12)
        for frame in (
            self.try_it.frame,
            self.service_card.frame,
            self.put_to_work.frame,
            self.export_card.frame,
        ):
            layout.addWidget(frame)
        layout.addStretch(1)
        self.scroll = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(content)
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        body.addWidget(scroll)
        # the cards' parts, by the names the page has always had
        for name in ("drop", "answer", "scores", "camera_button", "choose_button", "clip_player", "text_try"):
            setattr(self, name, getattr(self.try_it, name))
        for name, part in (
            ("service_button", "button"),
            ("service_url", "url"),
            ("service_hint", "hint"),
            ("console_button", "console_button"),
            ("copy_button", "copy_button"),
        ):
            setattr(self, name, getattr(self.service_card, part))
        for name, part in (
            ("out_dir", "out_dir"),
            ("export_button", "export_button"),
            ("compress_button", "compress_button"),
            ("bundle_button", "bundle_button"),
            ("progress", "progress"),
            ("export_result", "result"),
            ("candidates", "candidates"),
        ):
            setattr(self, name, getattr(self.export_card, part))
        self.show_empty(True)

    @property
    def sound(self) -> bool:
        """True for a sound model: clips are recorded or chosen, and played."""
        return self.try_it.sound

    def make_recorder(self):
        """The record bar of sound models (tests and previews pass a generated signal instead)."""
        from ...widgets.recorder import RecorderWidget

        return RecorderWidget(with_classes=False, button_text="Record and classify", countdown_s=0.5)

    @property
    def service(self):
        """The running service's handle (``url``, ``stop()``), or None."""
        return self.service_card.service

    @property
    def last_export(self) -> dict | None:
        return self.export_card.last_export

    @last_export.setter
    def last_export(self, value) -> None:
        self.export_card.last_export = value

    # -- project and model --------------------------------------------------------------------------

    def project_changed(self) -> None:
        self.model_id = None
        self.try_it.clear()
        self.scroll.verticalScrollBar().setValue(0)  # not left at the last project's export card

    def load(self, project: str) -> dict:
        ws = self.ws
        info = ws.project_info(project)
        titles = {t["name"]: template_title(t) for t in ws.templates(info["task"])}
        titles["imported"] = "Made elsewhere"
        return {
            "models": list(reversed(ws.list_models(project))),
            "titles": titles,
            "info": info,
            "can_import": ws.can_import_outside_model(project),
        }

    def show_data(self, data: dict) -> None:
        self.models = data["models"]
        self.try_it.set_input_kind(data["info"].get("input_kind"))
        self.model_id = self.picker.set_models(self.models, self.model_id, data["titles"])
        several = len(self.models) > 1
        self.picker.setVisible(several)
        self.picker_label.setVisible(several)
        self.import_button.setVisible(bool(data.get("can_import")))
        self.show_empty(not self.models)
        self._model_changed()

    def import_model(self) -> None:
        """Open the dialog that imports a model made elsewhere into this project."""
        from .import_model import ImportModelDialog

        dialog = ImportModelDialog(self.ws, self.project, self.run, self.report_error, self)
        dialog.imported.connect(lambda result: self._imported(result["model"]))
        self.import_dialog = dialog  # tests drive it; the page owns it (parented), Python only refers to it
        dialog.open()

    def _imported(self, model_id: str) -> None:
        self.model_id = model_id
        self.refresh()
        self.model_selected.emit(model_id)
        self.status_changed.emit()

    def pick_model(self, model_id: str) -> None:
        """The user picked ``model_id``: it is tried, served and exported, and the other pages follow."""
        if model_id and model_id != self.model_id:
            self.select_model(model_id)
            self.model_selected.emit(model_id)

    def select_model(self, model_id: str) -> None:
        """Make ``model_id`` the model tried, served and exported (a running service keeps its own)."""
        if model_id == self.model_id:
            return
        self.model_id = model_id
        self.try_it.clear()
        if any(m["id"] == model_id for m in self.models):
            self.picker.setCurrentIndex(max(self.picker.findData(model_id), 0))
            self._model_changed()
        else:  # trained since the last read
            self.refresh()

    def _used(self, *_args) -> None:
        """The model was served or exported: the Deploy step is done for this project."""
        if self.service is not None or self.last_export is not None or self.put_to_work.last is not None:
            mark_deployed(self.project)
        self.status_changed.emit()

    def _model_changed(self) -> None:
        if "form" in self.try_it.kind.try_parts and self.model_id is not None:  # a field per column
            ws, model_id = self.ws, self.model_id
            self.run(
                lambda state: ws.model_columns(model_id),
                self.try_it.row_form.set_columns,
                title="Could not read the model's columns",
            )
        self.service_card.set_model(self.project, self.model_id)
        self.export_card.set_model(self.project, self.model_id)
        self.put_to_work.set_model(self.project, self.model_id)

    # -- try it ---------------------------------------------------------------------------------------

    def try_file(self, path: str) -> None:
        """Predict ``path`` with the current model (off the UI thread) and show the scores."""
        if self.model_id is None:
            return
        model_id, ws, sound = self.model_id, self.ws, self.sound
        self.try_it.looking(path)

        def work(state):
            results = ws.predict(model_id, [path])
            if "anomalous" in results[0]:  # an anomaly model: show where, over the photo
                from modeldesk.app.anomaly_views import overlay_file

                results[0]["overlay"] = str(overlay_file(ws, model_id, path)[1])
            elif "areas" in results[0]:  # a segmentation model: its mask drawn over the photo
                from modeldesk.app.mask_views import label_colors
                from modeldesk.app.mask_views import overlay_file as mask_overlay

                results[0]["overlay"] = str(mask_overlay(ws, model_id, path, results[0]))
                results[0]["overlay_colors"] = label_colors(ws, model_id)  # the bars in the mask's colours
            return results, (load_peaks(path) if sound else None)

        def done(result):
            results, clip = result
            if clip is not None:
                self.clip_player.set_clip(path, *clip)
            self.last_prediction = results[0]
            self.try_it.show_prediction(results[0], path)

        def failed(message, details):
            self.try_it.clear()
            self.report_error(
                "Could not read this clip" if sound else "Could not read this photo", message, details
            )

        self.predictions.start(work, done, on_failed=failed)

    def try_text(self, text: str) -> None:
        """Classify a typed text with the current model (off the UI thread) and show the scores."""
        if self.model_id is not None:
            self._ask(lambda ws, model_id: ws.predict_texts(model_id, [text]), "Could not read this text")

    def try_row(self, row: dict) -> None:
        """Ask the current model about a row of the form (off the UI thread), as the service would."""
        if self.model_id is not None:
            self._ask(lambda ws, model_id: ws.predict_rows(model_id, [row]), "Could not read this row")

    def _ask(self, predict, failure_title: str) -> None:
        """Show the first answer of ``predict(ws, model_id)``, run off the UI thread."""
        model_id, ws = self.model_id, self.ws
        self.try_it.looking(None)

        def done(results):
            self.last_prediction = results[0]
            self.try_it.show_prediction(results[0])

        def failed(message, details):
            self.try_it.clear()
            self.report_error(failure_title, message, details)

        self.predictions.start(lambda state: predict(ws, model_id), done, on_failed=failed)

    def _recorded(self, _label: str, wav: bytes) -> None:
        """A clip from the microphone: save it (worker) and classify it."""
        ws = self.ws

        def save(state):
            path = ws.paths.tmp / "try-it-recording.wav"
            path.write_bytes(wav)
            return str(path)

        self.run(save, self.try_file, title="The recording was not saved")

    # -- plumbing ---------------------------------------------------------------------------------------

    def _show_export(self, result: dict, *, compress: bool, bundle: bool) -> None:
        self.export_card.show_export(result, compress=compress, bundle=bundle)

    def shutdown(self) -> None:
        """Stop the service now (the app is closing), then the page's background work."""
        self.service_card.shutdown()
        self.put_to_work.shutdown()
        super().shutdown()
