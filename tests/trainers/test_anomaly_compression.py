"""Compressing an anomaly model: a copy (8-bit backbone, smaller memory bank, fewer dimensions) re-chooses
its own threshold and is judged on image AUROC and on its yes/no answers against the original; one that
is really worse is refused."""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from modeldesk.deploy import compress as compress_module
from modeldesk.deploy import load_artifact
from modeldesk.deploy.compress import compress_artifact
from modeldesk.deploy.predictor import Predictor
from modeldesk.deploy.quantize import Quantizer
from modeldesk.errors import UserError
from modeldesk.trainers.anomaly.compression import (
    BANK_SHARE,
    CANDIDATES,
    MIN_BANK,
    AnomalyJudge,
    candidates_for,
    judging_photos,
    smaller_bank,
)
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.tasks import get_trainer

from .anomaly_data import write_inspection_folder


def _samples(root):
    out = []
    for i, path in enumerate(sorted(p for p in root.rglob("*.png") if p.parent.name != "masks")):
        label = "good" if path.parent.name == "good" else path.parent.name
        split = ("train", "train", "val", "test")[i % 4] if label == "good" else "test"
        out.append(LabeledSample(hashlib.sha256(path.read_bytes()).hexdigest(), str(path), label, split))
    return out


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("anomaly-compress")
    root = write_inspection_folder(tmp / "photos", n_good=40, n_defect=12, seed=11)
    return _samples(root), tmp


def _train(photos, template, cache_dir):
    samples, tmp = photos
    out = tmp / template.rsplit("/", 1)[-1]
    result = get_trainer("anomaly-detection").train(samples, template, out, cache_dir)
    return load_artifact(result.artifact_dir), samples, tmp


@pytest.fixture(scope="module")
def model(photos, shared_cache_dir):
    """A per-position Gaussian model (the fast template)."""
    return _train(photos, "anomaly-detection/fast", shared_cache_dir)


@pytest.fixture(scope="module")
def bank_model(photos, shared_cache_dir):
    """A memory-bank model (the accurate template)."""
    return _train(photos, "anomaly-detection/accurate", shared_cache_dir)


def _compress(artifact, samples, out, candidates, judge=None):
    photos = judging_photos(samples)
    return compress_artifact(
        artifact,
        out,
        calibration=[s.path for s in samples if s.split == "train"],
        validation=photos,
        candidates=candidates,
        metric=judge or AnomalyJudge.for_model(artifact.card, photos),
        threads=(1,),
        latency_runs=3,
    )


@pytest.fixture
def copies_faster(monkeypatch):
    """Every copy times at half the original's ms (the verdict then decides on accuracy alone; no test
    asserts a wall-clock time)."""

    def timed(runs, rounds=9):
        return {key: 10.0 if key[0] == "fp32" else 5.0 for key in runs}

    monkeypatch.setattr(compress_module, "time_interleaved", timed)


def _answers(path, samples):
    predictor = Predictor(load_artifact(path))
    return predictor.predict([p for p, _ in judging_photos(samples)])


def test_judging_photos_leave_out_the_bank_and_refuse_too_few(model):
    artifact, samples, _ = model
    photos = judging_photos(samples)
    bank = {s.path for s in samples if s.split == "train" and s.target == "good"}
    assert photos and not bank & {path for path, _ in photos}
    assert sum(1 for _, label in photos if label != "good") == 12
    with pytest.raises(UserError, match="too few"):
        judging_photos([s for s in samples if s.target == "good" or s.path.endswith("00.png")])


def test_a_copy_that_is_really_worse_is_refused(model, monkeypatch):
    """A "compressed" copy whose model of normal is wrong (Gaussian mean moved) loses AUROC and the
    original's yes/no answers: the verdict keeps the original."""
    artifact, samples, tmp = model
    graph = onnx.load(str(artifact.model_path))

    def damaged(self, fmt="qdq", per_channel=False, keep_first=False):
        copy = onnx.ModelProto()
        copy.CopyFrom(graph)
        for init in copy.graph.initializer:
            if init.name == "anomaly/mean":
                rng = np.random.default_rng(0)
                value = numpy_helper.to_array(init)
                init.CopyFrom(
                    numpy_helper.from_array(
                        value + 3 * rng.standard_normal(value.shape).astype(np.float32) * value.std(),
                        init.name,
                    )
                )
        return copy.SerializeToString()

    monkeypatch.setattr(Quantizer, "quantize", damaged)
    result = _compress(artifact, samples, tmp / "worse", [CANDIDATES[0]])
    copy = next(r for r in result["candidates"] if r["name"] == CANDIDATES[0])
    assert result["chosen"] == "fp32"
    assert copy["code"] == "less_accurate" and not copy["kept"]
    assert result["metric"] == "auroc"


def test_the_judge_rechooses_the_threshold_and_refuses_a_copy_that_flags_differently():
    judge = AnomalyJudge(threshold=0.95, held=20)
    targets = ["good"] * 20 + ["scratch"] * 10
    original = [{"score": s} for s in np.r_[np.linspace(0.1, 0.9, 20), np.linspace(1.1, 2.0, 10)]]
    judge(original, targets)
    assert judge.refusal() == ""
    scaled = [{"score": p["score"] * 1.3} for p in original]  # every score moved: same photos flagged
    assert judge(scaled, targets) == 1.0
    assert judge.refusal() == "" and judge.chosen["threshold"] == pytest.approx(0.9 * 1.3)
    # three defects now score like good parts: at its own threshold it misses them
    blurred = [{"score": 0.5 if i in (20, 21, 22) else p["score"]} for i, p in enumerate(original)]
    assert judge(blurred, targets) < 1.0
    assert "answers 3 of 30 photos wrong that the original answers right" in judge.refusal()


def test_an_8_bit_backbone_keeps_the_ranking(model):
    artifact, samples, tmp = model
    result = _compress(artifact, samples, tmp / "int8", [CANDIDATES[0]])
    rows = {r["name"]: r for r in result["candidates"]}
    assert rows[CANDIDATES[0]]["accuracy"] is not None
    assert abs(rows[CANDIDATES[0]]["accuracy"] - rows["fp32"]["accuracy"]) <= 0.05
    assert result["claim"]


def test_the_app_offers_compression_for_anomaly_models(model):
    """The Deploy page and ``modeldesk export --compress`` ask these: offered, judged by AUROC, 8-bit only."""
    from modeldesk.app.pipeline import compression_candidates, compression_metric, compression_refusal

    artifact, samples, _ = model
    assert compression_refusal(artifact) == ""
    photos = judging_photos(samples)
    judge = compression_metric(artifact, photos)
    assert isinstance(judge, AnomalyJudge) and judge.threshold == artifact.card["threshold"]
    assert judge.held == photos.held > 0 and all(label == "good" for _, label in photos[: photos.held])
    assert compression_candidates(artifact) == [
        *CANDIDATES,
        "fp32+fewer-dimensions",
        f"{CANDIDATES[0]}+fewer-dimensions",
    ]
    assert candidates_for({"method": "memory-bank"})[3:] == [
        "fp32+smaller-bank",
        f"{CANDIDATES[0]}+smaller-bank",
    ]


def test_a_copy_whose_scores_all_shift_is_kept_with_its_own_threshold(model, monkeypatch, copies_faster):
    """An "8-bit" copy whose every score is 1.3 times the original's ranks and flags the photos alike
    once it re-chooses its threshold: it is kept, and its graph and card carry its own threshold."""
    artifact, samples, tmp = model
    graph = onnx.load(str(artifact.model_path))

    def scaled(self, fmt="qdq", per_channel=False, keep_first=False):
        copy = onnx.ModelProto()
        copy.CopyFrom(graph)
        for init in copy.graph.initializer:
            if init.name == "anomaly/whiten":  # every distance to normal, so every score, times 1.3
                init.CopyFrom(numpy_helper.from_array(1.3 * numpy_helper.to_array(init), init.name))
        return copy.SerializeToString()

    monkeypatch.setattr(Quantizer, "quantize", scaled)
    result = _compress(artifact, samples, tmp / "scaled", [CANDIDATES[0]])
    assert result["chosen"] == CANDIDATES[0], result["candidates"][1]["reason"]
    kept = load_artifact(result["path"])
    assert kept.card["threshold"] == pytest.approx(1.3 * artifact.card["threshold"], rel=1e-3)
    # the original's threshold was set on its bank photos' out-of-fold scores too: the copy kept its margin
    assert artifact.card["threshold_photos"]["out_of_fold"] > 0
    assert kept.card["heatmap_range"][1] == pytest.approx(kept.card["threshold"])
    original, copy = _answers(artifact.path, samples), _answers(kept.path, samples)
    assert [p["anomalous"] for p in copy] == [p["anomalous"] for p in original]
    assert [p["score"] for p in copy] == pytest.approx([1.3 * p["score"] for p in original], rel=1e-4)


def test_the_smaller_bank_keeps_the_first_patches_chosen(bank_model):
    artifact = bank_model[0]
    graph = onnx.load(str(artifact.model_path))
    bank = {i.name: numpy_helper.to_array(i) for i in graph.graph.initializer}["anomaly/bank_t"]
    small = {i.name: numpy_helper.to_array(i) for i in smaller_bank(graph).graph.initializer}
    keep = max(MIN_BANK, round(BANK_SHARE * bank.shape[1]))
    assert small["anomaly/bank_t"].shape == (bank.shape[0], keep)
    np.testing.assert_array_equal(small["anomaly/bank_t"], bank[:, :keep])
    np.testing.assert_allclose(small["anomaly/bank_sq"], (bank[:, :keep] ** 2).sum(axis=0) / 4, rtol=1e-4)


def test_a_smaller_bank_as_good_is_kept(bank_model, copies_faster):
    artifact, samples, tmp = bank_model
    result = _compress(artifact, samples, tmp / "smaller", ["fp32+smaller-bank"])
    rows = {r["name"]: r for r in result["candidates"]}
    assert result["chosen"] == "fp32+smaller-bank", rows["fp32+smaller-bank"]["reason"]
    assert rows["fp32+smaller-bank"]["size_bytes"] < rows["fp32"]["size_bytes"]
    kept = load_artifact(result["path"])
    assert kept.card["bank_patches"] == max(MIN_BANK, round(BANK_SHARE * artifact.card["bank_patches"]))
    assert "smaller bank" in result["words"]
    copy = _answers(kept.path, samples)
    held = judging_photos(samples).held
    assert all(p["anomalous"] == (p["score"] >= kept.card["threshold"]) for p in copy)
    assert sum(p["anomalous"] for p in copy[:held]) <= max(1, 0.01 * held)  # its own threshold holds


def test_a_smaller_bank_that_is_really_worse_is_refused(bank_model, copies_faster):
    """A "smaller bank" of patches unlike any photo's loses the ranking: the original is kept."""
    artifact, samples, tmp = bank_model
    judge = AnomalyJudge.for_model(artifact.card, judging_photos(samples))

    def noise(model):
        copy = smaller_bank(model)
        rng = np.random.default_rng(0)
        for init in copy.graph.initializer:
            if init.name in ("anomaly/bank_t", "anomaly/bank_sq"):
                value = numpy_helper.to_array(init)
                noisy = value.std() * rng.standard_normal(value.shape).astype(np.float32)
                init.CopyFrom(numpy_helper.from_array(np.abs(noisy) if value.ndim == 1 else noisy, init.name))
        return copy

    judge.variants["smaller-bank"] = noise
    result = _compress(artifact, samples, tmp / "noise", ["fp32+smaller-bank"], judge)
    row = next(r for r in result["candidates"] if r["name"] == "fp32+smaller-bank")
    assert result["chosen"] == "fp32" and row["code"] == "less_accurate"


def test_fewer_dimensions_keep_the_ranking(model):
    artifact, samples, tmp = model
    result = _compress(artifact, samples, tmp / "fewer", ["fp32+fewer-dimensions"])
    rows = {r["name"]: r for r in result["candidates"]}
    assert rows["fp32+fewer-dimensions"]["accuracy"] >= rows["fp32"]["accuracy"] - 0.05
    assert rows["fp32+fewer-dimensions"]["size_bytes"] < rows["fp32"]["size_bytes"]
