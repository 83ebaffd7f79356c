"""Anomaly detection: trains on good photos only, catches planted defects, and the exported graph
answers exactly as training computed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from modeldesk.app.cli import main
from modeldesk.deploy import Predictor, load_artifact
from modeldesk.trainers.anomaly.bank import greedy_coreset
from modeldesk.trainers.anomaly.features import PatchComputer
from modeldesk.trainers.anomaly.graph import GRID_OUTPUT, HEATMAP_OUTPUT, SCORE_OUTPUT, scoring_model
from modeldesk.trainers.anomaly.scoring import (
    auroc,
    counts_at,
    false_alarm_bound,
    false_alarm_plan,
    false_alarm_threshold,
    promise_sentence,
)
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.tasks import get_task, get_trainer
from modeldesk.trainers.templates import get_template

from .anomaly_data import write_inspection_folder


def _samples(root, defects_split="test"):
    out = []
    for i, path in enumerate(sorted(p for p in root.rglob("*.png") if p.parent.name != "masks")):
        label = "good" if path.parent.name == "good" else path.parent.name
        split = ("train", "train", "val", "test")[i % 4] if label == "good" else defects_split
        out.append(LabeledSample(hashlib.sha256(path.read_bytes()).hexdigest(), str(path), label, split))
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory, shared_cache_dir):
    """The memory-bank template trained on good photos only; defects are held out for measuring."""
    tmp = tmp_path_factory.mktemp("anomaly")
    root = write_inspection_folder(tmp / "photos", n_good=20, n_defect=6, seed=5)
    samples = _samples(root)
    result = get_trainer("anomaly-detection").train(
        samples, "anomaly-detection/accurate", tmp / "model", shared_cache_dir
    )
    return result, samples, root


def test_the_task_is_registered_and_listed_by_the_cli():
    task = get_task("anomaly-detection")
    assert task.trainable and task.input_kind == "image"
    from modeldesk.app.cli import task_names

    assert "anomaly-detection" in task_names()


def test_good_only_training_catches_planted_defects(trained):
    result, samples, _ = trained
    metrics = result.metrics
    assert metrics["defects"] == 6 and metrics["auroc"] >= 0.9  # chance is 0.5
    assert metrics["catch_rate"] >= 0.8
    card = load_artifact(result.artifact_dir).card
    assert card["target"] == "anomaly" and card["bank_patches"] > 0
    # the photos with defects never fed the memory bank
    assert card["training"]["samples"]["bank"] == sum(
        1 for s in samples if s.label == "good" and s.split == "train"
    )


def test_exported_graph_equals_the_apps_score_and_heatmap(trained, shared_cache_dir):
    result, samples, _ = trained
    artifact = load_artifact(result.artifact_dir)
    template = get_template(artifact.card["template"])
    from modeldesk.trainers.backbones import get_backbone
    from modeldesk.trainers.feature_cache import FeatureCache

    backbone = get_backbone(template.backbone)
    cache = FeatureCache(shared_cache_dir)
    chosen = [s for s in samples if s.split == "test"][:3] + [s for s in samples if s.split == "val"][:1]
    namespace = (backbone.key, template.neck.maps_name, "identity")
    flat = np.stack([cache.get(namespace, s.key) for s in chosen])
    # rebuild the app's scorer from the graph's own constants: the bank is the graph's initializer
    from onnx import numpy_helper

    inits = {
        t.name: numpy_helper.to_array(t)
        for t in __import__("onnx").load(artifact.model_path).graph.initializer
    }
    bank_t = inits["anomaly/bank_t"]
    normal = {"bank": (-0.5 * bank_t).T}
    # the stride-8 channels' weight: the graph's own projection
    patches = PatchComputer(template.neck, backbone, inits.get("patch/projection"))(flat)
    from modeldesk.deploy.runtime import create_session

    session = create_session(
        scoring_model(
            template.neck,
            patches.shape[-1],
            normal,
            template.top_k,
            0.0,
            template.score_border,
            sigma=template.smooth_sigma,
        ).SerializeToString(),
        device="cpu",
    )
    app_score, app_heat, _ = session.run([SCORE_OUTPUT, HEATMAP_OUTPUT, GRID_OUTPUT], {"patches": patches})
    exported = Predictor(artifact).predict([s.source for s in chosen])
    np.testing.assert_allclose([p["score"] for p in exported], app_score, rtol=1e-4)
    np.testing.assert_allclose(np.stack([p["heatmap"] for p in exported]), app_heat, rtol=1e-4, atol=1e-4)
    assert [p["anomalous"] for p in exported] == [bool(v >= artifact.card["threshold"]) for v in app_score]
    assert result.metrics["export_max_rel_diff"] < 1e-3


def test_service_answer_has_score_and_a_heatmap_png_at_the_photos_size(trained):
    import base64
    import io

    from PIL import Image

    result, samples, _ = trained
    predictor = Predictor(result.artifact_dir)
    source = next(s.source for s in samples if s.label != "good")
    prediction = predictor.predict([source])[0]
    plain = predictor.output.respond(prediction, {})
    assert set(plain) >= {"score", "anomalous", "threshold", "label"} and "heatmap" not in plain
    json.dumps(plain)
    with_png = predictor.output.respond(prediction, {"heatmap": "1"})
    png = Image.open(io.BytesIO(base64.b64decode(with_png["heatmap_png"])))
    assert png.size == Image.open(source).size


def test_evaluate_cli_on_an_inspection_folder_gives_the_keys(trained, tmp_path, capsys):
    result, _, _ = trained
    folder = write_inspection_folder(tmp_path / "unseen", n_good=6, n_defect=4, seed=9)
    code = main(
        ["evaluate", str(result.artifact_dir), str(folder), "--json", "--workspace", str(tmp_path / "ws")]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    for key in ("auroc", "pixel_auroc", "catch_rate", "false_alarm_rate"):
        assert out[key] is not None, key
    assert out["pixel_auroc"] > 0.8 and out["defects"] == 4 and out["good"] == 6


def test_gaussian_template_trains_on_good_photos_alone(tmp_path, shared_cache_dir):
    root = write_inspection_folder(tmp_path / "photos", n_good=10, n_defect=1, seed=6)
    goods = [s for s in _samples(root) if s.label == "good"]
    result = get_trainer("anomaly-detection").train(
        goods, "anomaly-detection/fast", tmp_path / "m", shared_cache_dir
    )
    assert result.metrics["defects"] == 0 and result.metrics["catch_rate"] is None
    assert any("no defect photos" in w for w in result.warnings)


def test_the_fast_template_learns_each_spot_and_its_graph_equals_training(tmp_path, shared_cache_dir):
    """One Gaussian per patch position (PaDiM): catches planted blobs from good photos only, and the
    exported graph's scores are training's."""
    root = write_inspection_folder(tmp_path / "photos", n_good=20, n_defect=6, seed=5)
    result = get_trainer("anomaly-detection").train(
        _samples(root), "anomaly-detection/fast", tmp_path / "m", shared_cache_dir
    )
    assert result.metrics["auroc"] >= 0.9 and result.metrics["export_max_rel_diff"] < 1e-3
    whiten = next(
        t
        for t in __import__("onnx").load(load_artifact(result.artifact_dir).model_path).graph.initializer
        if t.name == "anomaly/whiten"
    )
    assert list(whiten.dims) == [32 * 32, 48, 48]  # one whitening per stride-8 cell of 256 px


def test_position_gaussian_fitted_in_batches_equals_the_whole():
    from modeldesk.trainers.anomaly.bank import PositionGaussian

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5, 3)) * [1.0, 2.0, 0.5] + 3.0
    whole, parts = PositionGaussian(), PositionGaussian()
    whole.add(X)
    parts.add(X[:17]), parts.add(X[17:])
    mean, W = parts.whitening(shrink=0.0)
    np.testing.assert_allclose(mean, whole.whitening(shrink=0.0)[0], rtol=1e-5)
    # whitened patches of position 2 have unit covariance
    Z = (X[:, 2] - mean[2]) @ W[2]
    np.testing.assert_allclose(np.cov(Z, rowvar=False), np.eye(3), atol=1e-4)


def test_threshold_rules_and_counts():
    good = np.arange(500, dtype=float)
    cut = false_alarm_threshold(good, 0.01)  # 500 photos: 1 may be flagged for 1% (90% sure)
    assert (good >= cut).sum() == 1
    assert (good >= false_alarm_threshold(good, 0.0)).sum() == 0
    assert (good[:100] >= false_alarm_threshold(good[:100], 0.01)).sum() == 0  # too few: above them all
    counts = counts_at([0, 0, 1, 1], [0.1, 0.9, 0.8, 0.2], 0.5, ["good", "good", "a", "b"])
    assert counts["caught"] == 1 and counts["false_alarms"] == 1 and counts["per_kind"]["a"]["caught"] == 1
    assert auroc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]) == 1.0 and auroc([0, 1], [0.5, 0.5]) == 0.5


def test_coreset_covers_far_points():
    rng = np.random.default_rng(0)
    points = np.concatenate([rng.normal(0, 0.01, (500, 8)), [[5.0] * 8]]).astype(np.float32)
    chosen = greedy_coreset(points, 3, rng)
    assert 500 in chosen  # the outlier is the farthest point from any start: picked first or second


def test_the_service_answers_score_anomalous_and_on_request_a_heatmap_png(trained):
    import base64
    import io

    from PIL import Image
    from starlette.testclient import TestClient

    from modeldesk.deploy.service import create_app

    result, samples, _ = trained
    source = next(s.source for s in samples if s.label != "good")
    data = Path(source).read_bytes()
    with TestClient(
        create_app(load_artifact(result.artifact_dir), threads=1), base_url="http://127.0.0.1"
    ) as client:
        plain = client.post("/v1/predict", content=data, headers={"content-type": "image/png"})
        assert plain.status_code == 200, plain.text
        answer = plain.json()["predictions"][0]
        assert set(answer) >= {"score", "anomalous"} and "heatmap_png" not in answer
        asked = client.post("/v1/predict?heatmap=1", content=data, headers={"content-type": "image/png"})
        png = Image.open(io.BytesIO(base64.b64decode(asked.json()["predictions"][0]["heatmap_png"])))
        assert png.size == Image.open(source).size and png.mode == "RGBA"


def test_mirrored_padding_keeps_the_graph_equal_to_training(tmp_path, shared_cache_dir):
    import dataclasses

    template = get_template("anomaly-detection/fast")
    padded = dataclasses.replace(template, neck=dataclasses.replace(template.neck, pad=32))
    root = write_inspection_folder(tmp_path / "photos", n_good=8, n_defect=2, seed=7)
    result = get_trainer("anomaly-detection").train(_samples(root), padded, tmp_path / "m", shared_cache_dir)
    assert result.metrics["export_max_rel_diff"] < 1e-4
    assert load_artifact(result.artifact_dir).card["preprocessing"]["size"] == 256  # the input keeps its size


def test_the_too_few_good_photos_message_names_the_real_keys():
    """Class keys on the Label page are digits (the one beside each class), never a letter."""
    import re

    from modeldesk.errors import UserError

    trainer = get_trainer("anomaly-detection")
    with pytest.raises(UserError) as caught:
        trainer.check([LabeledSample("k", "a.png", "good")])
    message = str(caught.value)
    assert "number key" in message and not re.search(r"press [A-Z]\b", message)
    root = Path(__file__).resolve().parents[2]
    for folder in ("trainers", "app"):  # no message outside the UI names a letter key for a class
        for source in (root / folder).rglob("*.py"):
            assert not re.search(r"press [A-Z]\b", source.read_text()), source


@pytest.mark.parametrize("photos, rate", [(59, 0.01), (500, 0.01), (400, 0.05)])
def test_the_promised_false_alarm_rate_holds_on_unseen_good_parts(photos, rate):
    """Synthetic good scores, uniform on [0, 1): a threshold t flags 1 - t of all unseen good parts.
    Over many draws of the held-back photos, the rate exceeds the promise at most 1 time in 10; the
    rule it replaced (flag the top ``rate`` share of the held-back photos) broke its promise far more."""
    rng = np.random.default_rng(0)
    plan = false_alarm_plan(photos, rate)
    promised = plan["promised"]
    broken = old_broken = 0
    draws = 3000
    for _ in range(draws):
        held = rng.random(photos)
        broken += (1 - false_alarm_threshold(held, rate)) > promised
        old = np.sort(held)[-1 - int(np.floor(rate * photos))]
        old_broken += (1 - old) > rate
    assert broken / draws <= 0.1 + 0.02
    assert old_broken / draws > 0.3


def test_too_few_good_photos_say_the_lowest_rate_that_can_be_promised():
    plan = false_alarm_plan(59, 0.01)
    assert plan["allowed"] == 0 and plan["promised"] == pytest.approx(1 - 0.1 ** (1 / 59), rel=1e-6)
    assert plan["needed"] == 230 and false_alarm_plan(230, 0.01)["promised"] == 0.01
    assert false_alarm_bound(59, 0) == pytest.approx(plan["lowest"])
    words = promise_sentence(plan)
    assert words.startswith("With 59 good photos held back") and "can promise is 3.8% (90% sure)" in words
    assert "1% needs 230 held back" in words
    assert "at or under 1% of good parts" in promise_sentence(false_alarm_plan(500, 0.01))


def test_the_stride8_channels_weigh_as_the_template_says():
    from modeldesk.trainers.anomaly.features import weighted_projection

    a, b = np.zeros((1, 6), np.float32), np.zeros((1, 6), np.float32)
    b[0, 0], b[0, 4] = 1.0, 1.0  # one step along a stride-8 channel (the first 2) and one along another
    diag = weighted_projection(6, None, first=2, weight=0.5)
    assert diag.shape == (6, 6) and np.allclose((b - a) @ diag, [[0.5, 0, 0, 0, 1.0, 0]])
    assert weighted_projection(6, None) is None  # nothing to weigh: no MatMul in the graph
    projected = weighted_projection(6, 3, first=2, weight=0.5)
    assert np.allclose(projected[:2], 0.5 * weighted_projection(6, 3)[:2])
    assert get_template("anomaly-detection/accurate").stride8_weight == 0.5
