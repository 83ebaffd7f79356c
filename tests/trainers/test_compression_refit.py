"""Compression re-fits the head on each candidate's own features: a smaller, 8-bit backbone then
keeps the accuracy that its shifted features would otherwise cost."""

from __future__ import annotations

import pytest

from modeldesk.deploy import Predictor, compress_artifact, load_artifact
from modeldesk.trainers.compression import head_refitter
from modeldesk.trainers.image.classification import train_image_classifier


@pytest.fixture(scope="module")
def fast_model(tmp_path_factory, make_dataset):
    root = tmp_path_factory.mktemp("refit")
    samples = make_dataset(root / "images", per_class=20, seed=5)
    result = train_image_classifier(
        samples, "image-classification/fast", root / "model", root / "cache", threads=2
    )
    return result.artifact_dir, samples


def test_refitted_candidates_are_measured_and_the_chosen_model_predicts_as_its_graph(fast_model, tmp_path):
    artifact_dir, samples = fast_model
    card = load_artifact(artifact_dir).card
    assert card["features_output"] and head_refitter(card) is not None
    training = [(s.path, s.label) for s in samples if s.split == "train"]
    validation = [(s.path, s.label) for s in samples if s.split != "train"]
    report = compress_artifact(
        artifact_dir,
        tmp_path / "small",
        calibration=[p for p, _ in training[:24]],
        validation=validation,
        threads=(1,),
        training=training,
        refit_head=head_refitter(card),
        latency_runs=3,
        candidates=["int8-qdq-perchannel-128", "int8-qdq-perchannel-128-refit"],
    )
    rows = {row["name"]: row for row in report["candidates"]}
    plain, refit = rows["int8-qdq-perchannel-128"], rows["int8-qdq-perchannel-128-refit"]
    assert refit["accuracy"] is not None and refit["latency_ms"] > 0
    assert refit["accuracy"] >= plain["accuracy"] - 1e-9  # re-fitting never makes it worse on these shapes
    assert refit["accuracy"] > 0.8  # three drawn classes: far above chance (1/3)
    assert refit["plain_name"] == "8-bit, 128 px, head re-fitted (qdq, per channel)"
    assert refit["words"].startswith("8-bit numbers, photos at 128 px, head re-fitted")
    assert all(
        row["latency_ms_by_threads"].get("1") for row in report["candidates"] if row["accuracy"] is not None
    )
    chosen = load_artifact(report["path"])
    assert chosen.card["compression"]["chosen"] == report["chosen"]
    # judged across folds: every validation image by heads fitted without it, the original's too
    assert report["folds"] >= 2 and report["judged_examples"] == len(validation)
    assert 0 <= report["loss_bound"] <= report["loss_limit"] or report["chosen"] == "fp32"
    predictor = Predictor(report["path"], device="cpu")
    answers = predictor.predict([path for path, _ in validation])
    accuracy = sum(a["label"] == label for a, (_, label) in zip(answers, validation)) / len(validation)
    assert accuracy > 0.8


def test_a_grid_pooled_model_with_views_shrinks_and_keeps_its_meaning(tmp_path, make_dataset):
    """The accurate/best templates' grid pooling adapts to the map size, so they get smaller-input
    candidates too; their heads (fitted on every view) are re-fitted the same way."""
    import numpy as np
    import onnx

    from modeldesk.deploy.compress import parse_candidate
    from modeldesk.deploy.resize import fixed_grid_pooling
    from modeldesk.trainers.image.classification_templates import GRID_S16X4_S32X3
    from modeldesk.trainers.templates import Template

    template = Template(
        name="image-classification/test-grid",
        task="image-classification",
        description="test",
        backbone="efficientnet-lite0",
        features=GRID_S16X4_S32X3,
        head_params={"l2": 1e-2, "max_iter": 100},
        search_space={"views": [("identity", "hflip")]},
    )
    samples = make_dataset(tmp_path / "images", per_class=12, seed=3)
    result = train_image_classifier(samples, template, tmp_path / "model", tmp_path / "cache", threads=2)
    artifact = load_artifact(result.artifact_dir)
    assert artifact.card["views"] == ["identity", "hflip"]
    assert fixed_grid_pooling(onnx.load(str(artifact.model_path)), 224) == []
    training = [(s.path, s.label) for s in samples]
    validation = [(s.path, s.label) for s in samples if s.split != "train"]
    report = compress_artifact(
        result.artifact_dir,
        tmp_path / "small",
        calibration=[p for p, _ in training[:12]],
        validation=validation,
        threads=(1,),
        training=training,
        refit_head=head_refitter(artifact.card),
        latency_runs=1,
        candidates=[
            "fp32-160",
            "fp32-160-refit",
            "int8-qdq-perchannel-1view",
            "int8-qdq-perchannel-160-1view-refit",
        ],
    )
    rows = {row["name"]: row for row in report["candidates"]}
    assert all(row["code"] not in ("skipped", "failed") for row in rows.values()), rows
    assert rows["fp32-160-refit"]["accuracy"] > 0.8  # three drawn classes: far above chance (1/3)
    assert "one pass per photo" in rows["int8-qdq-perchannel-160-1view-refit"]["words"]
    if parse_candidate(report["chosen"]).one_view:
        assert load_artifact(report["path"]).card["views"] == ["identity"]

    # One pass per photo: on a mirror-symmetric photo the mirrored view adds nothing, elsewhere it does.
    from modeldesk.deploy.compress import one_view
    from modeldesk.deploy.runtime import create_session

    model = onnx.load(str(artifact.model_path))
    both, single = (create_session(m.SerializeToString(), device="cpu") for m in (model, one_view(model)))
    batch = np.random.default_rng(0).normal(size=(3, 3, 224, 224)).astype(np.float32)
    symmetric = np.concatenate([batch[..., :112], batch[..., :112][..., ::-1]], axis=-1)
    run = lambda session, x: session.run(["probabilities"], {"image": x})[0]  # noqa: E731
    np.testing.assert_allclose(run(single, symmetric), run(both, symmetric), atol=1e-5)
    assert np.abs(run(single, batch) - run(both, batch)).max() > 1e-4
