"""The image-classification trainer end to end on small synthetic data, and its bad-input messages."""

from __future__ import annotations

import json

import numpy as np
import pytest

from modeldesk.deploy.artifact import load_artifact
from modeldesk.deploy.preprocess import ImageSpec, preprocess_batch
from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.features import extract_feature_views
from modeldesk.trainers.heads import LogisticRegressionHead
from modeldesk.trainers.image.classification import (
    build_classifier_graph,
    check_samples,
    train_image_classifier,
)
from modeldesk.trainers.templates import Template, get_template, list_templates

CARD_KEYS = {
    "id",
    "task",
    "labels",
    "preprocessing",
    "template",
    "metrics",
    "versions",
    "created",
    "input_name",
    "output_name",
    "warnings",
}


@pytest.mark.parametrize("template", list_templates("image-classification"), ids=lambda t: t.name)
def test_every_template_trains_a_model_that_beats_chance(
    template, tmp_path, shared_cache_dir, synthetic_samples
):
    stages = []
    result = train_image_classifier(
        synthetic_samples,
        template,
        tmp_path / "model",
        shared_cache_dir,
        device="cpu",
        threads=2,
        model_id="m-test",
        progress=lambda stage, fraction, eta, metrics: stages.append((stage, fraction)),
    )
    assert result.metrics["split"] == "test" and result.metrics["n"] == 9
    assert result.metrics["accuracy"] >= 0.8  # chance is 1/3
    assert result.metrics["export_max_abs_diff"] < 1e-4
    assert result.metrics["export_vs_training_features_max_abs_diff"] < 1e-4
    assert result.skipped == []
    assert result.plan["eta_s"] > 0 and result.plan["actual_s"] > 0 and result.plan["devices"]
    fractions = [f for _, f in stages]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0

    card = json.loads((result.artifact_dir / "model.json").read_text())
    assert CARD_KEYS <= set(card)
    assert card["id"] == "m-test" and card["task"] == "image-classification"
    assert card["labels"] == ["checks", "disc", "stripes"] and card["template"] == template.name
    assert card["preprocessing"] == ImageSpec().to_dict()
    assert set(card["versions"]) >= {"modeldesk", "onnxruntime", "onnx", "numpy"}

    artifact = load_artifact(result.artifact_dir)
    session = create_session(artifact.model_path, device="cpu")
    (inp,), outs = session.get_inputs(), session.get_outputs()
    assert (inp.name, [o.name for o in outs]) == ("image", ["probabilities", "familiarity"])  # + "not sure"
    test = [s for s in synthetic_samples if s.split == "test"]
    proba = session.run(["probabilities"], {"image": preprocess_batch([s.path for s in test])})[0]
    assert proba.shape == (len(test), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)
    predicted = [card["labels"][i] for i in proba.argmax(axis=1)]
    # the exported model was refitted on every labeled image, the test ones included
    assert card["training"]["final_fit"] == len(synthetic_samples) == result.metrics["final_model"]["samples"]
    assert np.mean([p == s.label for p, s in zip(predicted, test)]) >= 0.8
    interval = card["metrics"]["interval"]
    assert interval["low"] <= result.metrics["accuracy"] <= interval["high"] and interval["n"] == 9
    assert interval["too_wide"] and any("only 9 images were tested" in w for w in result.warnings)


@pytest.mark.parametrize("views", [("identity",), ("identity", "hflip")])
def test_exported_graph_equals_head_on_training_features(
    views, tmp_path, backbone, shared_cache_dir, synthetic_samples
):
    template = get_template("image-classification/accurate")
    samples = synthetic_samples[::4]
    cache = FeatureCache(shared_cache_dir)
    extracted = extract_feature_views(
        backbone,
        [(s.key, s.path) for s in samples],
        cache,
        views=views,
        features=template.features,
        threads=2,
    )
    y = [s.label for s in samples]
    head = LogisticRegressionHead(l2=1e-2).fit(
        np.concatenate([extracted[v].features for v in views]), y * len(views)
    )
    expected = np.mean([head.predict_proba(extracted[v].features) for v in views], axis=0)
    model = build_classifier_graph(backbone, template, head, views, shared_cache_dir / "graphs")
    session = create_session(model.SerializeToString(), device="cpu")
    got = session.run(["probabilities"], {"image": preprocess_batch([s.path for s in samples])})[0]
    np.testing.assert_allclose(got, expected, atol=1e-5)


def sample(label, split="train", i=0):
    return LabeledSample(
        key=f"k{label}{split}{i}", source=f"/nowhere/{label}{i}.png", target=label, split=split
    )


@pytest.mark.parametrize(
    "samples, message",
    [
        ([], "no images to train on"),
        ([sample(None), sample(None, i=1)], "none of the 2 images has a label"),
        ([sample("cat"), sample("cat", i=1)], r"all labeled images are in one class \('cat'\)"),
        ([sample("cat"), sample("cat", i=1), sample("dog")], r"class 'dog' has only one image"),
    ],
)
def test_bad_input_gets_a_clear_message(samples, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        train_image_classifier(samples, "image-classification/fast", tmp_path / "m", tmp_path / "c")


def test_class_without_training_images_is_moved_with_a_warning():
    samples = [sample("cat"), sample("cat", i=1), sample("dog", "test"), sample("dog", "val", 1)]
    labeled, labels, warnings = check_samples(samples)
    assert labels == ["cat", "dog"]
    assert all(s.split == "train" for s in labeled if s.label == "dog")
    assert any("'dog' had no training images" in w for w in warnings)


def test_unreadable_image_is_skipped_and_named(tmp_path, shared_cache_dir, synthetic_samples):
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    samples = list(synthetic_samples) + [LabeledSample("brokenkey", str(broken), "disc", "train")]
    result = train_image_classifier(
        samples, "image-classification/fast", tmp_path / "m", shared_cache_dir, device="cpu", threads=2
    )
    assert [entry["file"] for entry in result.skipped] == [str(broken)]
    assert any("could not be read" in w for w in result.warnings)
    assert result.metrics["accuracy"] >= 0.8


def test_estimate_counts_only_uncached_features(tmp_path, shared_cache_dir, synthetic_samples):
    from modeldesk.trainers.image.classification import estimate_training

    template = get_template("image-classification/fast")
    cold = estimate_training(synthetic_samples, template, tmp_path / "empty", device="cpu")
    assert cold["plan"]["features_to_compute"] == len(synthetic_samples) and cold["eta_s"] > 0
    train_image_classifier(
        synthetic_samples, template, tmp_path / "m", shared_cache_dir, device="cpu", threads=2
    )
    warm = estimate_training(synthetic_samples, template, shared_cache_dir, device="cpu")
    assert warm["plan"]["features_to_compute"] == 0 and warm["eta_s"] < cold["eta_s"]


def test_templates_registry():
    names = [t.name for t in list_templates()]
    assert {"image-classification/fast", "image-classification/accurate"} <= set(names)
    assert {t.name for t in list_templates("object-detection")} == {
        "object-detection/fast",
        "object-detection/accurate",
        "object-detection/small-objects",
    }
    with pytest.raises(ValueError, match="unknown template 'nope'"):
        get_template("nope")
    for template in list_templates():
        # every template has the common fields (a task may bring its own dataclass, see trainers.templates)
        assert template.name.startswith(template.task + "/")
        if template.task.startswith("image-"):
            assert isinstance(template, Template)
        info = template.to_dict()
        assert info["name"] == template.name and info["task"] == template.task
        json.dumps(info)
        assert info["description"] and info["time_budget_s"] > 0


def test_head_fitting_time_is_learned_from_a_real_run_per_template(tmp_path, synthetic_samples):
    from modeldesk.scheduler import CostModel
    from modeldesk.trainers.image.classification import HEAD_PRIOR, HEAD_PRIORS, _head_key, _head_seconds

    cache_dir = tmp_path / "cache"
    fast, best = get_template("image-classification/fast"), get_template("image-classification/best")
    cost = CostModel(cache_dir)
    assert cost.get(_head_key(fast), "cpu", 1, 1) is None
    assert _head_seconds(cost, 24_000, fast) == 24_000 / HEAD_PRIOR  # the priors first
    assert _head_seconds(cost, 24_000, best) == 24_000 / HEAD_PRIORS[best.name]
    train_image_classifier(
        synthetic_samples, "image-classification/fast", tmp_path / "m", cache_dir, device="cpu", threads=2
    )
    cost = CostModel(cache_dir)
    measured = cost.get(_head_key(fast), "cpu", 1, 1)
    assert measured is not None and measured["items_per_s"] > 0
    assert _head_seconds(cost, 24_000, fast) == pytest.approx(24_000 / measured["items_per_s"])
    assert cost.get(_head_key(best), "cpu", 1, 1) is None  # another template keeps its own prior
