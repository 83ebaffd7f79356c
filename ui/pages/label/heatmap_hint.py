"""The Label page's suggestion for an anomaly model: the photo shown with the model's heatmap over it
(shaded red where it looks unlike the good parts), made off the UI thread. Models of other outputs
show nothing here."""

from __future__ import annotations

import logging

from PySide6.QtGui import QImage

from ...page import LatestTask

log = logging.getLogger(__name__)

NOTE = "Shaded red: where the model finds this photo unlike the good parts."


class HeatmapHint:
    """``show(sample, model_id)`` after the page showed ``sample``; swaps in the photo with its heatmap."""

    def __init__(self, page):
        self.page = page
        self.task = LatestTask(page.tasks, page)

    def show(self, sample, model_id: str | None) -> None:
        if model_id is None or sample is None or sample.path is None:
            return
        from modeldesk.app.anomaly_views import overlay_if_anomaly

        ws, path, sample_id = self.page.ws, str(sample.path), sample.id
        self.page.side.accept_button.setVisible(True)  # hidden below while only the note is shown

        def done(picture):
            current = self.page.sample
            if picture is None or current is None or current.id != sample_id:
                return
            canvas = self.page.canvas
            if canvas is not None:
                size = (current.width, current.height) if current.width and current.height else None
                canvas.set_image(QImage(str(picture)), size)
            side = self.page.side
            suggested = not side.banner.isHidden()
            side.show_suggestion((side.suggestion_label.text() + "<br>" if suggested else "") + NOTE)
            side.accept_button.setVisible(suggested)

        self.task.start(
            lambda state: overlay_if_anomaly(ws, model_id, path),
            done,
            on_failed=lambda message, details: log.warning("heatmap: %s", message),
        )
