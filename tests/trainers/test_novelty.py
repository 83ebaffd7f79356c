""" "Unlike anything it was trained on": a classifier trained on drawn colour photos says "not sure" on
noise and on real photos, stays sure on new drawings of its own kind, and every copy of it (the graph
with test-time views, a compressed copy with its head re-fitted) carries the same rule."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from PIL import Image

from modeldesk.deploy import Predictor, load_artifact
from modeldesk.deploy.preprocess import preprocess_batch
from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.compression import head_refitter
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.features import extract_feature_views
from modeldesk.trainers.heads import LogisticRegressionHead
from modeldesk.trainers.image.classification import build_classifier_graph, train_image_classifier
from modeldesk.trainers.novelty import FAMILIARITY_OUTPUT, NoveltyReference
from modeldesk.trainers.templates import get_template

from .conftest import draw_sample


@pytest.fixture(scope="module")
def pictures(tmp_path_factory, photos_dir):
    """(new drawings of the trained kinds, very different pictures: noise, a flat one, two real photos)."""
    root = tmp_path_factory.mktemp("novelty-pictures")
    own = []
    for k, kind in enumerate(("disc", "stripes", "checks")):
        for i in range(4):
            path = root / f"new-{kind}-{i}.png"
            draw_sample(kind, 900_000 + 10 * k + i).save(path)
            own.append(str(path))
    rng = np.random.default_rng(3)
    odd = []
    for i in range(3):
        path = root / f"noise-{i}.png"
        Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(path)
        odd.append(str(path))
    flat = root / "black.png"
    Image.new("RGB", (64, 64)).save(flat)
    return own, odd + [str(flat), str(photos_dir / "chelsea.jpg"), str(photos_dir / "coffee.jpg")]


@pytest.fixture(scope="module")
def fast_model(tmp_path_factory, make_dataset, shared_cache_dir):
    root = tmp_path_factory.mktemp("novelty")
    samples = make_dataset(root / "images", per_class=15, seed=7)
    result = train_image_classifier(
        samples, "image-classification/fast", root / "model", shared_cache_dir, device="cpu", threads=2
    )
    return result.artifact_dir, samples


def test_not_sure_on_pictures_unlike_the_training_ones_and_sure_on_its_own_kind(fast_model, pictures):
    artifact_dir, _ = fast_model
    own, odd = pictures
    card = load_artifact(artifact_dir).card
    assert card["novelty"]["output"] == FAMILIARITY_OUTPUT and card["novelty"]["threshold"] == 0.0
    assert 0.9 <= card["novelty"]["pass_fraction"] < 1 and card["novelty"]["calibrated_on"] == 45
    predictor = Predictor(artifact_dir, device="cpu")
    mine, strange = predictor.predict(own), predictor.predict(odd)
    assert all(p["sure"] for p in mine), [p["familiarity"] for p in mine]
    assert not any(p["sure"] for p in strange), [p["familiarity"] for p in strange]
    # the answers it used to give those pictures: confident, and wrong whatever the label
    assert max(p["score"] for p in strange) > 0.8
    assert {"label", "score", "scores"} <= set(strange[0])  # the contract's keys stay


def test_threshold_lets_the_set_fraction_of_held_out_photos_pass():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 32)) * 3
    X = np.concatenate([c + rng.normal(size=(50, 32)) for c in centres])
    novelty = NoveltyReference(pass_fraction=0.9).fit(X)
    passed = np.mean(novelty.held_out_similarity_ >= novelty.similarity_threshold_)
    assert 0.9 <= passed < 0.95  # the set fraction, not "everything"
    fresh = np.concatenate([c + rng.normal(size=(25, 32)) for c in centres])
    assert np.mean(novelty.familiarity(fresh) >= 0) > 0.8
    assert np.all(novelty.familiarity(rng.normal(size=(20, 32)) * 3) < 0)  # far from every cluster
    with pytest.raises(ValueError, match="not fitted"):
        NoveltyReference().similarity(X)


def test_the_graph_with_test_time_views_gives_the_first_views_familiarity(
    tmp_path, backbone, shared_cache_dir, synthetic_samples
):
    template = get_template("image-classification/accurate")
    views = ("identity", "hflip")
    samples = synthetic_samples[::3]
    extracted = extract_feature_views(
        backbone,
        [(s.key, s.path) for s in samples],
        FeatureCache(shared_cache_dir),
        views=views,
        features=template.features,
        threads=2,
    )
    y = [s.label for s in samples]
    head = LogisticRegressionHead(l2=1e-2).fit(np.concatenate([extracted[v].features for v in views]), y * 2)
    novelty = NoveltyReference().fit(extracted["identity"].features)
    model = build_classifier_graph(
        backbone, template, head, views, shared_cache_dir / "graphs", novelty=novelty
    )
    session = create_session(model.SerializeToString(), device="cpu")
    got = session.run([FAMILIARITY_OUTPUT], {"image": preprocess_batch([s.path for s in samples])})[0]
    np.testing.assert_allclose(got, novelty.familiarity(extracted["identity"].features), atol=1e-4)


def test_a_compressed_copy_refits_its_references_and_threshold_on_its_own_features(
    fast_model, pictures, tmp_path
):
    from modeldesk.deploy.compress import Candidate, _Runner, _TensorCache
    from modeldesk.deploy.graph import prune_unused

    artifact_dir, samples = fast_model
    own, odd = pictures
    artifact = load_artifact(artifact_dir)
    training = [(s.path, s.label) for s in samples if s.split == "train"]
    validation = [(s.path, s.label) for s in samples if s.split != "train"]
    data = _TensorCache(
        artifact.spec, [p for p, _ in training], validation, training, artifact.card, artifact.input_name
    )
    base = onnx.load(str(artifact.model_path))
    runner = _Runner(prune_unused(base), artifact, data, (1,), 1, tmp_path, head_refitter(artifact.card))
    try:
        row, blob = runner.run(Candidate(size=128, quant="qdq", per_channel=True, refit=True))
    finally:
        runner.close()
    assert blob is not None and not row["reason"], row["reason"]
    small = onnx.load_from_string(blob)
    thresholds = [
        numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "head/novelty/threshold"))
        for m in (base, small)
    ]
    assert thresholds[0] != thresholds[1]  # calibrated again, on the 128 px 8-bit features
    session = create_session(blob, device="cpu")
    spec = replace(artifact.spec, size=128)
    familiar = session.run([FAMILIARITY_OUTPUT], {artifact.input_name: preprocess_batch(own, spec)})[0]
    strange = session.run([FAMILIARITY_OUTPUT], {artifact.input_name: preprocess_batch(odd, spec)})[0]
    assert np.mean(familiar >= 0) >= 0.9 and np.all(strange < 0), (familiar, strange)
