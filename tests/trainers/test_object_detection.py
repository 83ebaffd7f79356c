"""Object detection: letterboxing, metrics, and a detector trained on drawn shapes finds them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PIL import Image

from modeldesk.deploy import Predictor, load_artifact
from modeldesk.deploy.preprocess import ImageSpec, image_size, preprocess_image
from modeldesk.errors import UserError
from modeldesk.trainers.detection.features import DetectionNeck
from modeldesk.trainers.detection.metrics import average_precision, best_threshold, box_iou, detection_report
from modeldesk.trainers.detection.templates import TEMPLATES
from modeldesk.trainers.detection.trainer import PARITY_TOLERANCE, ObjectDetectionTrainer

from .detection_data import make_detection_samples

# A small, quick variant of the fast template: 160 px letterbox, a 10 x 10 grid.
SMALL = dataclasses.replace(
    TEMPLATES[0],
    name="object-detection/test-small",
    neck=DetectionNeck(size=160, stride=16, levels=("stride16", "stride32")),
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, shared_cache_dir):
    folder = tmp_path_factory.mktemp("boxes")
    samples = make_detection_samples(folder, n=30, seed=1)
    result = ObjectDetectionTrainer().train(samples, SMALL, folder / "model", shared_cache_dir)
    return samples, result


def test_letterbox_keeps_the_aspect_ratio_and_pads_with_zero(tmp_path):
    path = tmp_path / "wide.png"
    Image.new("RGB", (200, 100), (250, 250, 250)).save(path)
    tensor = preprocess_image(path, ImageSpec(size=64, resize="letterbox"))
    assert tensor.shape == (3, 64, 64)
    assert np.allclose(tensor[:, :32], (250 - 127) / 128) and np.all(tensor[:, 32:] == 0)


def test_image_size_follows_exif_orientation(tmp_path):
    path = tmp_path / "turned.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90: a 300x200 file shows as 200x300
    Image.new("RGB", (300, 200)).save(path, exif=exif)
    assert image_size(path) == (200, 300)


def test_average_precision_and_report_on_known_cases():
    truth = [[("a", 0, 0, 10, 10)], [("a", 0, 0, 10, 10)]]
    perfect = [
        [{"label": "a", "score": 0.9, "box": [0, 0, 10, 10]}],
        [{"label": "a", "score": 0.8, "box": [0, 0, 10, 10]}],
    ]
    report = detection_report(truth, perfect, ["a"], 0.5)
    assert report["map50"] == pytest.approx(1.0) and report["map"] == pytest.approx(1.0)
    assert report["misses"] == 0 and report["false_boxes"] == 0
    # IoU 0.64: right at 0.5..0.6, wrong from 0.65 up -> map50 1, COCO map 3/10
    shifted = [[{"label": "a", "score": 0.9, "box": [0, 0, 8, 8]}]] * 2
    report = detection_report(truth, shifted, ["a"], 0.5)
    assert box_iou([[0, 0, 8, 8]], [[0, 0, 10, 10]])[0, 0] == pytest.approx(0.64)
    assert report["map50"] == pytest.approx(1.0) and report["map"] == pytest.approx(0.3)
    # a false box scored above the true one: precision 1/2 at recall 1 -> AP 0.5
    assert average_precision(np.array([False, True]), np.array([0.9, 0.8]), 1) == pytest.approx(0.5)
    wrong = [[{"label": "a", "score": 0.9, "box": [50, 50, 60, 60]}], []]
    report = detection_report(truth, wrong, ["a"], 0.5)
    assert report["map50"] == 0 and report["misses"] == 2 and report["false_boxes"] == 1


def test_best_threshold_drops_the_low_scoring_false_boxes():
    truth = [[("a", 0, 0, 10, 10)]]
    predictions = [
        [
            {"label": "a", "score": 0.9, "box": [0, 0, 10, 10]},
            {"label": "a", "score": 0.3, "box": [40, 40, 50, 50]},
        ]
    ]
    assert 0.3 < best_threshold(truth, predictions) <= 0.9


def test_boxless_samples_are_refused(tmp_path):
    samples = make_detection_samples(tmp_path, n=2)
    with pytest.raises(UserError, match="box"):
        ObjectDetectionTrainer().check([dataclasses.replace(s, target=None) for s in samples])


def test_detector_finds_the_drawn_shapes(trained):
    samples, result = trained
    assert result.metrics["split"] == "test"
    assert result.metrics["map50"] >= 0.8
    assert set(result.metrics["per_class"]) == {"disc", "square"}
    predictor = Predictor(result.artifact_dir)
    test = [s for s in samples if s.split == "test"]
    found = total = 0
    for sample, prediction in zip(test, predictor.predict([s.path for s in test])):
        for box in sample.target:
            total += 1
            same = [p["box"] for p in prediction["boxes"] if p["label"] == box.label]
            if same and box_iou(same, [[box.x0, box.y0, box.x1, box.y1]]).max() >= 0.5:
                found += 1
    assert found >= 0.8 * total


def test_exported_boxes_match_the_training_path(trained):
    _, result = trained
    # the graph's boxes against the numpy decoding of the same head on the same cached features
    assert result.metrics["export_max_abs_diff_px"] <= PARITY_TOLERANCE


def test_card_and_predictions_speak_original_pixels(trained, tmp_path):
    samples, result = trained
    card = load_artifact(result.artifact_dir).card
    assert card["target"] == "boxes" and card["preprocessing"]["resize"] == "letterbox"
    assert 0 < card["score_threshold"] < 1
    # the same photo at twice the size: boxes scale with it
    path = tmp_path / "big.png"
    image = Image.open(samples[-1].path)
    image.resize((image.width * 2, image.height * 2), Image.NEAREST).save(path)
    small, big = Predictor(result.artifact_dir).predict([samples[-1].path, str(path)])
    assert small["boxes"] and len(big["boxes"]) >= 1
    assert np.allclose(np.array(big["boxes"][0]["box"]) / 2, small["boxes"][0]["box"], atol=3)
    for box in big["boxes"]:
        x0, y0, x1, y1 = box["box"]
        assert 0 <= x0 < x1 <= image.width * 2 and 0 <= y0 < y1 <= image.height * 2


def test_evaluate_reports_detection_metrics_and_mistakes(trained):
    samples, result = trained
    metrics = ObjectDetectionTrainer().evaluate(
        result.artifact_dir, [s for s in samples if s.split != "train"]
    )
    assert {"map50", "map", "per_class", "precision", "recall", "misses", "false_boxes", "mistakes"} <= set(
        metrics
    )
    assert metrics["map50"] >= 0.8
    assert all(set(m) >= {"key", "truth", "boxes", "misses", "false_boxes"} for m in metrics["images"])


def test_compressed_detector_keeps_its_boxes(trained, tmp_path, monkeypatch):
    """int8 (QDQ, per channel) judged as the app does (against the original on the photos outside
    training); each fp32 box has an int8 box of its label within IoU 0.7 (the stated tolerance: int8 features move boxes by
    a few pixels; 0.78 worst seen). The int8 copy is timed as faster, so that the copy whose boxes are
    compared is always the int8 one (on a busy machine it could come out slower and the test compared the
    original with itself)."""
    from modeldesk.app.pipeline import compression_metric
    from modeldesk.deploy import compress, compress_artifact
    from modeldesk.trainers.detection.compression import judging_photos

    def int8_faster(runs, *, rounds=9):
        return {key: 10.0 if "fp32" in str(key) else 1.0 for key in runs}

    monkeypatch.setattr(compress, "time_interleaved", int8_faster)
    samples, result = trained
    artifact = load_artifact(result.artifact_dir)
    out = compress_artifact(
        artifact,
        tmp_path / "int8",
        calibration=[s.path for s in samples if s.split == "train"],
        validation=judging_photos(samples, minimum=10),  # the 12 photos outside training
        candidates=["int8-qdq-perchannel"],
        threads=(1,),
        max_loss=1.0,
        metric=compression_metric(artifact),
        latency_runs=2,
    )
    rows = {row["name"]: row for row in out["candidates"]}
    assert rows["fp32"]["accuracy"] >= 0.8 and rows["int8-qdq-perchannel"]["accuracy"] is not None
    assert out["chosen"] == "int8-qdq-perchannel", rows["int8-qdq-perchannel"].get("reason")
    test = [s.path for s in samples if s.split == "test"]
    fp32 = Predictor(result.artifact_dir).predict(test)
    int8 = Predictor(out["path"]).predict(test)
    for a, b in zip(fp32, int8):
        for box in a["boxes"]:
            same = [p["box"] for p in b["boxes"] if p["label"] == box["label"]]
            assert same and box_iou([box["box"]], same).max() >= 0.7


def test_box_voting_averages_the_overlapping_cells_boxes():
    """Two cells see the same object: the kept box is their score-weighted mean; a far cell stays apart."""
    from modeldesk.trainers.detection.head import cell_points
    from modeldesk.trainers.detection.trainer import detect_numpy

    points = cell_points(4, 16)  # a 64 px letterbox, 4 x 4 cells
    scores = np.zeros((16, 1))
    sides = np.zeros((16, 4))
    scores[5], scores[9], scores[15] = 0.9, 0.6, 0.8
    sides[5] = np.log([10, 10, 12, 12])  # cell 5 at (24, 24): box 14..36 x 14..36
    sides[9] = np.log([8, 24, 16, 2])  # cell 9 at (24, 40): box 16..40 x 16..42 (IoU 0.56: NMS drops it)
    sides[15] = np.log([4, 4, 4, 4])  # cell 15 at (56, 56): a small box far away
    plain = detect_numpy(scores, sides - np.log(16), points, 16, 64, 64, 64, ["a"], vote_iou=None)
    voted = detect_numpy(scores, sides - np.log(16), points, 16, 64, 64, 64, ["a"], vote_iou=0.5)
    assert [p["score"] for p in plain] == [0.9, 0.8] == [p["score"] for p in voted]
    np.testing.assert_allclose(plain[0]["box"], [14, 14, 36, 36])
    np.testing.assert_allclose(
        voted[0]["box"], (0.9 * np.array([14, 14, 36, 36]) + 0.6 * np.array([16, 16, 40, 42])) / 1.5
    )
    np.testing.assert_allclose(voted[1]["box"], plain[1]["box"])
