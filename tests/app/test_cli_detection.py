"""Object detection through the CLI: import VOC, train, evaluate on another VOC folder, predict boxes."""

import contextlib
import io
import json

import pytest
from PIL import Image

from modeldesk.app.cli import main
from modeldesk.app.sample_data import make_boxes_folder


@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("ws-detect")

    def run(*args, expect=0):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*map(str, args), "--workspace", str(workspace), "--json"])
        assert code == expect, f"modeldesk {args} exited {code}: {err.getvalue()[-500:]}"
        return json.loads(out.getvalue()) if code == 0 else err.getvalue()

    run("project", "create", "shapes", "--task", "object-detection")
    imported = run("import", "shapes", make_boxes_folder(tmp_path_factory.mktemp("voc"), 30, seed=2))
    assert imported["added"] == 30 and imported["boxes"] >= 30
    unlabeled = make_boxes_folder(tmp_path_factory.mktemp("unlabeled"), 3, seed=9)
    for xml in unlabeled.glob("*.xml"):
        xml.unlink()
    assert run("import", "shapes", unlabeled)["added"] == 3
    result = run("train", "shapes", "--template", "object-detection/fast")
    run.workspace = workspace
    return run, result, tmp_path_factory.mktemp("holdout")


def test_train_prints_detection_metrics(detector):
    _, result, _ = detector
    metrics = result["metrics"]
    assert result["model"].startswith("m-")
    assert metrics["map50"] >= 0.6 and 0 <= metrics["map"] <= metrics["map50"]
    assert {"precision", "recall", "misses", "false_boxes", "threshold"} <= set(metrics)
    assert result["plan"]["eta_s"] > 0 and result["plan"]["actual_s"] > 0


def test_templates_include_detection(detector):
    run, _, _ = detector
    names = {t["name"] for t in run("templates")["templates"]}
    assert {"object-detection/fast", "object-detection/accurate"} <= names


def test_evaluate_on_a_voc_folder_and_predict_boxes(detector):
    run, result, holdout = detector
    folder = make_boxes_folder(holdout, 10, seed=5)
    evaluation = run("evaluate", result["model"], folder)
    assert evaluation["map50"] >= 0.6
    assert set(evaluation["per_class"]) == {"square", "disc"}
    assert all("ap50" in row and "ap" in row for row in evaluation["per_class"].values())
    files = sorted(folder.glob("*.png"))[:4]
    predictions = run("predict", result["model"], *files)["predictions"]
    assert len(predictions) == 4
    for path, prediction in zip(files, predictions):
        width, height = Image.open(path).size
        assert prediction["boxes"], f"no box found in {path.name}"
        for box in prediction["boxes"]:
            assert set(box) == {"label", "score", "box"} and box["label"] in {"square", "disc"}
            x0, y0, x1, y1 = box["box"]
            assert 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height


def test_human_text_names_the_detection_figures(detector):
    from modeldesk.app import formatting

    run, result, _ = detector
    text = formatting.metrics_text(result["metrics"])
    assert "mAP50" in text and "missed objects" in text and "square" in text
    line = formatting.predictions_text(
        [
            {
                "file": "a.png",
                "label": "disc",
                "score": 0.9,
                "scores": {},
                "boxes": [{"label": "disc", "score": 0.9, "box": [1, 2, 30, 40]}],
            }
        ]
    )
    assert line == "a.png: 1 box(es): disc 90% [1, 2, 30, 40]"


def test_detector_proposes_boxes_on_unlabeled_photos_least_confident_first(detector):
    from modeldesk.app.workspace import Workspace

    run, result, _ = detector
    ws = Workspace(run.workspace)
    try:
        proposals = ws.box_proposals("shapes", result["model"])
        assert len(proposals) == 3
        assert sum(len(boxes) for boxes in proposals.values()) >= 3
        for boxes in proposals.values():
            assert all(set(b) == {"label", "score", "box"} for b in boxes)
        order = ws.uncertainty_order("shapes", result["model"])
        assert sorted(order) == sorted(proposals)
        confidence = ws.suggestions("shapes", result["model"])
        assert [confidence[sid][1] for sid in order] == sorted(confidence[sid][1] for sid in order)
    finally:
        ws.close()


def test_moving_the_threshold_updates_the_card_and_the_figures(detector, tmp_path):
    from modeldesk.app.workspace import Workspace
    from modeldesk.deploy import load_artifact

    run, result, _ = detector
    ws = Workspace(run.workspace)
    try:
        exported = ws.export_model(result["model"], tmp_path / "copy")["path"]
        strict = ws.set_score_threshold(exported, 0.97)
        assert load_artifact(exported).card["score_threshold"] == 0.97 and strict["threshold"] == 0.97
        loose = ws.set_score_threshold(exported, 0.1)
        assert loose["recall"] >= strict["recall"] and loose["false_boxes"] >= strict["false_boxes"]
        for figures in (strict, loose):  # the photos the Evaluate page draws follow the threshold
            assert sum(len(m["misses"]) for m in figures["images"]) == figures["misses"]
            assert sum(len(m["false_boxes"]) for m in figures["images"]) == figures["false_boxes"]
            assert all(
                b["score"] >= figures["threshold"] for m in figures["mistakes"] for b in m["false_boxes"]
            )
        with pytest.raises(ValueError, match="between 0 and 1"):
            ws.set_score_threshold(exported, 1.5)
    finally:
        ws.close()
