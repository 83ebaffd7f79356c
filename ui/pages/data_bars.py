"""The Data page's input bars beside importing: type a text (text projects), record a clip (sound
projects), capture photos with the webcam (image projects). Mixed into :class:`DataPage`, which
provides ``recorder_slot``, ``run``, ``refresh``, ``project`` and ``ws``."""

from __future__ import annotations


class DataBars:
    """The bars for each input kind; each appears only for its kind (and only with its device)."""

    table = None  # the rows as a table, for a kind whose UiKind names a sample_table
    values_only = False  # the project predicts a number: the examples-per-class card stays hidden

    # -- a table instead of the gallery (table rows) --------------------------------------------

    def _show_sample_table(self, info: dict, stats: dict, ids) -> object:
        """The widget that shows the samples: the kind's table (made on first use, read again when
        rows came or went, filtered to the bar's ``ids``), else the gallery."""
        from ..kinds import sample_table, ui_kind

        kind = info.get("input_kind")
        table_class = sample_table(kind)
        self.table_stats = stats
        if table_class is None:
            self.values_only = False
            return self.gallery
        if self.table is None:
            self.table = table_class(self)
            self.table.changed.connect(lambda: (self.refresh(), self.status_changed.emit()))
            self.table.loaded.connect(self._table_words)
            self.gallery_stack.addWidget(self.table)
        if ui_kind(kind).drop_text:
            self.drop_hint.setText(ui_kind(kind).drop_text)
        self.tip.setText("Tip: each column's title shows its type; right-click a title to change it.")
        self._table_words()
        self.table.show_project(self.project, stats["samples"])
        self.table.show_only(ids)
        return self.table

    def _table_words(self) -> None:
        """A table predicting a number has values, not classes: no class counts, no class words."""
        stats = self.table_stats
        self.values_only = self.table.model.numeric_target
        if self.values_only:
            self.warning.hide()
            self._set_label_filter_items([])  # every value is not a class to show
            self.header.set_subtitle(f"{stats['samples']:,} rows · {stats['labeled']:,} with a value")
        self._fit_width()

    # -- typing texts (text projects) and recording clips (sound projects) ---------------------

    def _show_text_adder(self, text: bool, labels: list[str]) -> None:
        from ..widgets.text_adder import TextAdder

        if text and self.text_adder is None:
            self.text_adder = TextAdder()
            self.text_adder.submitted.connect(self.add_text)
            self.recorder_slot.addWidget(self.text_adder)
        if self.text_adder is not None:
            self.text_adder.setVisible(text)
            if text:
                self.text_adder.set_classes(labels)

    def make_capture(self):
        """The webcam bar; tests and previews replace it to capture generated frames."""
        from ..widgets.camera_capture import CaptureWidget

        return CaptureWidget()

    def _show_capture(self, images: bool, labels: list[str]) -> None:
        if images and self.capture is None:
            self.capture = self.make_capture()
            # Owned by the page even without a camera: a widget only Python holds is destroyed by the
            # garbage collector, on whichever thread runs it, which crashes Qt.
            self.capture.setParent(self)
            self.capture.hide()
            if not self.capture.has_camera:  # no camera: no button (import works as ever)
                return
            self.capture.captured.connect(self.add_photos)
            self.recorder_slot.addWidget(self.capture)
        if self.capture is not None and self.capture.has_camera:
            self.capture.setVisible(images)
            if images:
                self.capture.set_classes(labels)

    def add_photos(self, label: str, photos: list) -> None:
        """Store the camera's photos in ``label`` (worker thread), then refresh."""
        if self.project is None:
            return
        project, ws = self.project, self.ws
        self.run(
            lambda _state: ws.add_photos(project, label, photos),
            lambda report: (self.refresh(), self.status_changed.emit()),
            title="The photos were not saved",
        )

    def add_text(self, text: str, label: str) -> None:
        """Store a typed text (worker thread), then refresh."""
        if self.project is None:
            return
        project, ws = self.project, self.ws
        self.run(
            lambda _state: ws.add_text(project, text, label),
            lambda report: (self.refresh(), self.status_changed.emit()),
            title="The text was not added",
        )

    def make_recorder(self):
        """The record bar; tests and previews replace it to record from a generated signal."""
        from ..widgets.recorder import RecorderWidget

        return RecorderWidget()

    def _show_recorder(self, sound: bool, labels: list[str]) -> None:
        if sound and self.recorder is None:
            self.recorder = self.make_recorder()
            self.recorder.recorded.connect(self.add_recording)
            self.recorder_slot.addWidget(self.recorder)
        if self.recorder is not None:
            self.recorder.setVisible(sound)
            if sound:
                self.recorder.set_classes(labels)

    def add_recording(self, label: str, wav: bytes) -> None:
        """Store a recorded clip in ``label`` (worker thread), then refresh."""
        if self.project is None:
            return
        project, ws = self.project, self.ws
        self.run(
            lambda _state: ws.add_recording(project, label, wav),
            lambda report: (self.refresh(), self.status_changed.emit()),
            title="The recording was not saved",
        )
