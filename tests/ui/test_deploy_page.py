"""The Deploy page on a really trained model: try it, serve it, export, bundle, cancel a compression."""

from __future__ import annotations

import httpx
import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication

from modeldesk.app.workspace import Workspace
from modeldesk.deploy.compress import parse_candidate
from modeldesk.ui.pages.deploy import DeployPage
from modeldesk.ui.widgets.camera import cameras
from modeldesk.ui.wording import human_size, top_scores, verdict, why_words


def candidate_words(name: str) -> str:
    return parse_candidate(name).plain_name()


def chosen_words(name: str) -> str:
    return parse_candidate(name).describe()


@pytest.fixture(scope="module")
def trained(tmp_path_factory, make_images):
    """A workspace with project 'colors' and one model trained by the real trainer; a fresh photo."""
    root = tmp_path_factory.mktemp("deploy")
    ws = Workspace(root / "ws")
    ws.create_project("colors", "image-classification")
    ws.import_data("colors", make_images(root / "data", {"red": 8, "green": 8, "blue": 8}, size=64))
    model = ws.train("colors", "image-classification/fast")["model"]
    # a new photo drawn like the training ones (another seed): the page's flow is under test here,
    # not how a 24-photo model extrapolates to a flat colour it never saw
    photo = next((make_images(root / "new", {"green": 1}, size=80, seed=99) / "green").iterdir())
    yield ws, model, photo
    ws.jobs.close()
    ws.close()


@pytest.fixture
def page(qtbot, trained):
    ws = trained[0]
    widget = DeployPage(ws)  # not qtbot.addWidget: pytest-qt would delete it before this teardown
    widget.show()
    widget.set_project("colors")
    qtbot.waitUntil(lambda: widget.loaded, timeout=10000)
    yield widget
    qtbot.waitUntil(lambda: not widget.tasks.busy, timeout=60000)
    widget.shutdown()
    widget.close()
    widget.deleteLater()


def test_plain_words():
    assert human_size(18_561_059) == "18.6 MB"
    assert human_size(512) == "512 bytes"
    assert candidate_words("fp32") == "Original"
    assert candidate_words("int8-qdq-perchannel-192") == "8-bit, 192 px (qdq, per channel)"
    # every part of a name is said in words, the recipes compression adds included
    assert (
        candidate_words("int8-qdq-perchannel-176-refit") == "8-bit, 176 px, head re-fitted (qdq, per channel)"
    )
    assert (
        candidate_words("int8-qop-perchannel-1view-refit")
        == "8-bit, one pass per photo, head re-fitted (qop, per channel)"
    )
    assert candidate_words("fp32-160-refit") == "Full precision, 160 px, head re-fitted"
    assert (
        candidate_words("int8-qdq-perchannel-keepfirst") == "8-bit (qdq, per channel, first layers in float)"
    )
    assert chosen_words("int8-qdq-perchannel-176-refit") == "8-bit numbers, photos at 176 px, head re-fitted"
    assert chosen_words("fp32") == "the original"
    assert verdict({"kept": True, "code": "kept"}) == "✓ Kept"
    assert (
        verdict({"code": "less_accurate", "reason": "rejected: accuracy 0.5 is more than 1 point"})
        == "Less accurate"
    )
    tie = {
        "code": "as_fast_less_accurate",
        "reason": "about as fast as int8-refit (within 5%) but less accurate",
    }
    assert verdict(tie) == "Less accurate"
    assert why_words(tie) == "About as fast as the kept copy, but less accurate"
    assert why_words({"code": "less_accurate", "loss_bound": 2.34}) == (
        "May lose up to 2.3 points of accuracy: more than allowed"
    )
    detector = {"code": "less_accurate", "loss_bound": 2.34, "score": "box score (mAP50)"}
    assert why_words(detector) == "May lose up to 2.3 points of box score (mAP50): more than allowed"
    assert verdict({"code": "untested"}) == "Not checked"
    assert top_scores({"label": "a", "score": 0.6, "scores": {"b": 0.3, "a": 0.6, "c": 0.1}}, k=2) == [
        ("a", 0.6),
        ("b", 0.3),
    ]


def test_dropping_a_photo_shows_the_prediction(qtbot, page, trained):
    _, _, photo = trained
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(photo))])
    event = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    page.drop.dropEvent(event)
    qtbot.waitUntil(lambda: page.last_prediction is not None, timeout=30000)
    assert page.last_prediction["label"] == "green"
    assert page.answer.text().startswith("green")
    assert page.scores.rows[0][0] == "green"
    assert [score for _, (score,) in page.scores.rows] == sorted(
        (score for _, (score,) in page.scores.rows), reverse=True
    )


def test_a_photo_unlike_the_training_ones_is_answered_not_sure(qtbot, page, tmp_path):
    import numpy as np
    from PIL import Image

    noise = tmp_path / "noise.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (80, 80, 3), dtype=np.uint8)).save(noise)
    page.try_file(str(noise))
    qtbot.waitUntil(lambda: page.last_prediction is not None, timeout=30000)
    assert page.last_prediction["sure"] is False
    assert page.answer.text().startswith("Not sure") and page.last_prediction["label"] in page.answer.text()


def test_service_starts_answers_and_stops(qtbot, page, trained):
    _, _, photo = trained
    assert page.camera_button.isVisible() == bool(cameras())
    with qtbot.waitSignal(page.status_changed, timeout=30000):
        qtbot.mouseClick(page.service_button, Qt.LeftButton)
    url = page.service.url
    assert url.startswith("http://127.0.0.1:")
    assert url in page.service_url.text()
    assert page.service_button.text() == "Stop service" and page.console_button.isEnabled()
    qtbot.mouseClick(page.copy_button, Qt.LeftButton)
    assert QGuiApplication.clipboard().text() == url
    assert "v1/predict" in page.service_hint.text()
    with open(photo, "rb") as stream:
        answer = httpx.post(
            url + "v1/predict", files={"file": ("photo.png", stream, "image/png")}, timeout=30
        )
    assert answer.status_code == 200, answer.text
    assert "green" in answer.text
    with qtbot.waitSignal(page.status_changed, timeout=30000):
        qtbot.mouseClick(page.service_button, Qt.LeftButton)
    assert page.service is None and page.service_button.text() == "Start service"
    with pytest.raises(httpx.TransportError):
        httpx.get(url + "healthz", timeout=2)


def test_export_and_bundle_write_into_the_chosen_folder(qtbot, page, tmp_path):
    page.out_dir.setText(str(tmp_path / "out"))
    qtbot.mouseClick(page.export_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: page.last_export is not None, timeout=60000)
    exported = tmp_path / "out" / "colors-model"
    assert (exported / "model.onnx").is_file() and (exported / "model.json").is_file()
    assert str(exported) in page.export_result.text()
    qtbot.waitUntil(lambda: page.export_button.isEnabled(), timeout=10000)
    page.last_export = None
    qtbot.mouseClick(page.bundle_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: page.last_export is not None, timeout=60000)
    assert (tmp_path / "out" / "colors-bundle").is_dir()
    assert "Bundle ready" in page.export_result.text()


def test_compression_can_be_cancelled(qtbot, page, tmp_path):
    page.out_dir.setText(str(tmp_path / "out"))
    qtbot.mouseClick(page.compress_button, Qt.LeftButton)
    assert not page.compress_button.isEnabled()
    qtbot.waitUntil(lambda: page.progress.isVisible(), timeout=5000)
    qtbot.mouseClick(page.progress.cancel_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: page.compress_button.isEnabled(), timeout=120000)
    assert page.export_result.text() == "Cancelled."
    assert page.last_export is None
    assert not (tmp_path / "out" / "colors-model-small").exists()


def test_candidates_table_from_a_compression_result(qtbot, page):
    result = {
        "path": "/x/colors-model-small",
        "size_bytes": 5_079_629,
        "chosen": "int8-qdq-perchannel-192",
        "chosen_words": "8-bit numbers, photos at 192 px",
        "accuracy_fp32": 0.931,
        "accuracy_compressed": 0.927,
        "folds": 5,
        "loss_bound": 0.8,
        "confidence": 0.95,
        "claim": "At most 0.8 points less accurate than the original, 95% sure, on 1,026 photos.",
        "speedup": 3.5,
        "candidates": [
            {
                "name": "fp32",
                "size_bytes": 18_559_379,
                "latency_ms": 17.2,
                "accuracy": 1.0,
                "kept": False,
                "reason": "accurate enough but slower than int8-qdq-perchannel-192",
                "code": "slower",
            },
            {
                "name": "int8-qdq-pertensor",
                "size_bytes": 4_791_073,
                "latency_ms": 9.2,
                "accuracy": 0.83,
                "kept": False,
                "loss_bound": 11.2,
                "reason": "rejected: it may be up to 11.2 points less accurate (95% sure, on 1,026 photos)",
                "code": "less_accurate",
            },
            {
                "name": "int8-qdq-perchannel-192",
                "size_bytes": 5_077_552,
                "latency_ms": 4.9,
                "accuracy": 1.0,
                "kept": True,
                "reason": "kept: fastest within the accuracy limit",
                "code": "kept",
            },
        ],
    }
    page._show_export(result, compress=True, bundle=False)
    assert (
        "smaller, faster copy" in page.export_result.text() and "8-bit numbers" in page.export_result.text()
    )
    assert not page.candidates.isVisible(), "the versions tried are behind Show details"
    page.export_card.details.click()
    assert page.candidates.isVisible() and page.candidates.rowCount() == 3
    assert (
        "May lose up to 11.2 points" in page.candidates.item(1, 5).text()
    )  # every version not kept says why
    assert "slower than the kept copy" in page.candidates.item(0, 5).text()
    assert "fp32" not in page.candidates.item(0, 5).text() + page.candidates.item(1, 5).text()
    assert "95% sure" in page.candidates.item(1, 5).toolTip()  # the technical reason stays in the tooltip
    assert page.candidates.item(2, 4).text() == "✓ Kept"
    assert page.candidates.item(1, 4).text() == "Less accurate"
    assert page.candidates.item(0, 1).text() == "18.6 MB"
    assert "3.5× faster" in page.export_result.text()
    text = page.export_result.text()
    assert "At most 0.8 points less accurate than the original, 95% sure, on 1,026 photos" in text
    assert "Right 92.7% of the time against 93.1%" in text and "did not learn from it" in text
    assert page.candidates.horizontalHeaderItem(3).text() == "Accuracy"


def test_in_a_narrow_window_the_reasons_wrap_and_rows_grow_to_show_them(qtbot, page):
    long_reason = {
        "name": "fp32-160-refit",
        "plain_name": "Full precision, 160 px, head re-fitted",
        "size_bytes": 15_036_000,
        "latency_ms": 3.6,
        "accuracy": 0.95,
        "kept": False,
        "reason": "not tested: 8-bit, 176 px, slower, already failed the accuracy check",
        "code": "untested",
    }
    kept = {
        "name": "int8-qdq-perchannel-1view-refit",
        "plain_name": "8-bit, one pass per photo, head re-fitted (qdq, per channel)",
        "size_bytes": 6_803_000,
        "latency_ms": 2.3,
        "accuracy": 0.98,
        "kept": True,
        "reason": "kept: fastest within the accuracy limit",
        "code": "kept",
    }
    page._show_export(
        {
            "path": "/x/small",
            "size_bytes": 6_803_000,
            "chosen": kept["name"],
            "accuracy_fp32": 0.97,
            "accuracy_compressed": 0.98,
            "speedup": 5.1,
            "candidates": [long_reason, kept],
        },
        compress=True,
        bundle=False,
    )
    page.export_card.details.click()
    page.resize(760, 540)
    table = page.candidates
    assert "head re-fitted" in table.item(1, 0).text() and "1view" not in table.item(1, 0).text()

    def whole():
        return all(table.rowHeight(r) >= table.sizeHintForRow(r) for r in range(table.rowCount()))

    qtbot.waitUntil(
        lambda: table.columnWidth(5) < table.fontMetrics().horizontalAdvance(table.item(0, 5).text())
    )
    qtbot.waitUntil(whole, timeout=2000)  # the wrapped reason is not cut
    assert table.rowHeight(0) > table.rowHeight(1)


def test_a_detector_s_compression_is_scored_in_boxes_not_answers(qtbot, page):
    result = {
        "path": "/x/boxes-model-small",
        "size_bytes": 3_000_000,
        "chosen": "int8-qdq-perchannel",
        "metric": "map50",
        "accuracy_fp32": 0.84,
        "accuracy_compressed": 0.83,
        "speedup": 2.1,
        "candidates": [
            {
                "name": "fp32",
                "size_bytes": 12_000_000,
                "latency_ms": 40.0,
                "accuracy": 0.84,
                "kept": False,
                "reason": "slower",
                "code": "slower",
            },
            {
                "name": "int8-qdq-perchannel",
                "size_bytes": 3_000_000,
                "latency_ms": 19.0,
                "accuracy": 0.83,
                "kept": True,
                "reason": "kept",
                "code": "kept",
            },
        ],
    }
    page._show_export(result, compress=True, bundle=False)
    text = page.export_result.text()
    assert "Box score (mAP50) 83% against 84%" in text and "of the time" not in text
    assert page.candidates.horizontalHeaderItem(3).text() == "Box score (mAP50)"


def test_an_anomaly_model_s_compression_is_scored_in_defect_ranking(qtbot, page):
    rows = [
        {"name": "fp32", "size_bytes": 19_000_000, "latency_ms": 40.0, "accuracy": 0.921, "code": "slower"},
        {"name": "int8-qdq-perchannel", "size_bytes": 6_000_000, "latency_ms": 25.0, "accuracy": 0.918},
    ]
    rows[1].update(kept=True, reason="kept", code="kept")
    rows[0].update(kept=False, reason="slower")
    result = {
        "path": "/x/tiles-small",
        "size_bytes": 6_000_000,
        "chosen": "int8-qdq-perchannel",
        "metric": "auroc",
        "accuracy_fp32": 0.921,
        "accuracy_compressed": 0.918,
        "speedup": 1.6,
        "candidates": rows,
    }
    page._show_export(result, compress=True, bundle=False)
    text = page.export_result.text()
    assert "Defect ranking (AUROC) 0.918 against 0.921" in text and "of the time" not in text
    assert page.candidates.horizontalHeaderItem(3).text() == "Defect ranking (AUROC)"


def test_the_webcam_button_shows_only_with_a_camera(qtbot, trained, monkeypatch):
    import modeldesk.ui.widgets.camera as camera

    monkeypatch.setattr(camera, "cameras", lambda: ["a camera"])
    with_camera = DeployPage(trained[0])
    monkeypatch.setattr(camera, "cameras", lambda: [])
    without = DeployPage(trained[0])
    try:
        assert not with_camera.camera_button.isHidden()
        assert without.camera_button.isHidden()
    finally:
        with_camera.deleteLater()
        without.deleteLater()


def test_a_broken_photo_gives_a_readable_error_with_the_log(qtbot, page, tmp_path):
    from PySide6.QtWidgets import QApplication

    from modeldesk.ui.widgets import ErrorDialog

    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n not really a picture")
    page.try_file(str(broken))

    def dialogs():
        return [w for w in QApplication.topLevelWidgets() if isinstance(w, ErrorDialog) and w.isVisible()]

    qtbot.waitUntil(lambda: bool(dialogs()), timeout=30000)
    dialog = dialogs()[0]
    assert dialog.windowTitle() == "Could not read this photo"
    assert "broken.png" in dialog.findChild(type(page.answer), "ErrorMessage").text()
    assert dialog.log_file == page.ws.paths.log and dialog.log_button.isEnabled()
    assert page.answer.text() == ""
    dialog.close()


def test_an_export_folder_that_no_program_opens_is_said(qtbot, page, monkeypatch, tmp_path):
    from PySide6.QtGui import QDesktopServices

    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: False)
    errors = []
    monkeypatch.setattr(
        page, "report_error", lambda title, message, details=None: errors.append((title, message))
    )
    page.export_card.open_link(QUrl.fromLocalFile(str(tmp_path)).toString())
    assert errors and errors[0][0] == "Could not open the folder" and str(tmp_path) in errors[0][1]


def test_the_service_port_is_chosen_in_the_app_and_kept(qtbot, page, trained):
    from modeldesk.app.service_handle import free_port

    ws, model, _ = trained
    card = page.service_card
    qtbot.waitUntil(lambda: card.port.value() == ws.service_port(model), timeout=10000)
    wanted = free_port()
    card.port.setValue(wanted)
    with qtbot.waitSignal(page.status_changed, timeout=30000):
        qtbot.mouseClick(page.service_button, Qt.LeftButton)
    assert page.service.url == f"http://127.0.0.1:{wanted}/" and not card.port.isEnabled()
    assert httpx.get(page.service.url + "healthz", timeout=5).status_code == 200
    with qtbot.waitSignal(page.status_changed, timeout=30000):
        qtbot.mouseClick(page.service_button, Qt.LeftButton)
    assert ws.service_port(model) == wanted and card.port.isEnabled()  # served there next time too


def test_each_project_exports_to_its_own_folder_across_restarts(qtbot, tmp_path):
    """Exporting the spam model wrote it into the previous project's folder; a chosen folder was
    forgotten when the app restarted."""
    from pathlib import Path

    from modeldesk.ui.pages.deploy.export_card import ExportCard

    card = ExportCard(None, run=lambda *args, **kwargs: None)
    card.set_model("Spoken digits", None)
    card.last_export = {"path": "somewhere"}
    card.result.setText("Exported the digits model")
    card.result.show()
    assert card.out_dir.text() == str(Path.home() / "ModelDesk exports" / "Spoken digits")
    card.out_dir.setText(str(tmp_path / "digits"))
    card.remember_folder()
    card.set_model("Spam", "m-spam")
    assert card.out_dir.text() == str(Path.home() / "ModelDesk exports" / "Spam")
    assert card.last_export is None and card.result.isHidden()  # nothing of the other model stays
    again = ExportCard(None, run=lambda *args, **kwargs: None)  # the app started anew
    again.set_model("Spoken digits", None)
    assert again.out_dir.text() == str(tmp_path / "digits")


def test_compression_is_offered_only_where_it_can_work(qtbot):
    """A text model offered 'Make smaller & faster', then failed with a message naming a CLI flag."""
    from types import SimpleNamespace

    from modeldesk.ui.pages.deploy.export_card import ExportCard

    refusals = {"m-text": "A text model is already small (0.4 MB)", "m-photos": ""}
    ws = SimpleNamespace(compression_refusal=refusals.get, compressed_in_use=lambda model: None)
    card = ExportCard(ws, run=lambda fn, done=None, **kwargs: done(fn(None)))
    qtbot.addWidget(card.frame)
    card.frame.show()
    card.set_model("reviews", "m-text")
    assert not card.compress_button.isVisible() and card.export_button.isVisible()
    card.set_model("photos", "m-photos")
    assert card.compress_button.isVisible()


def test_a_typed_text_gets_the_answer_the_workspace_gives(qtbot, tmp_path, open_page):
    from modeldesk.app.sample_data import make_text_table

    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("reviews", "text-classification")
        ws.import_data("reviews", make_text_table(tmp_path / "t.csv", per_class=12, seed=0))
        model = ws.train("reviews", "text-classification/fast")["model"]
        page = open_page(DeployPage, ws)
        page.set_project("reviews")
        qtbot.waitUntil(lambda: page.loaded and page.model_id == model, timeout=20_000)
        page.try_text("fast delivery, warm and tasty")
        qtbot.waitUntil(lambda: page.last_prediction is not None, timeout=20_000)
        expected = ws.predict_texts(model, ["fast delivery, warm and tasty"])[0]
        assert page.last_prediction["label"] == expected["label"]
        assert page.last_prediction["scores"] == pytest.approx(expected["scores"])
    finally:
        ws.jobs.close()
        ws.close()
