"""Compressing an anomaly model: a copy is judged on image AUROC and on its yes/no answers against the
original, and one that is really worse is refused."""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from modeldesk.deploy import load_artifact
from modeldesk.deploy.compress import compress_artifact
from modeldesk.deploy.quantize import Quantizer
from modeldesk.errors import UserError
from modeldesk.trainers.anomaly.compression import CANDIDATES, AnomalyJudge, judging_photos
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
def model(tmp_path_factory, shared_cache_dir):
    tmp = tmp_path_factory.mktemp("anomaly-compress")
    root = write_inspection_folder(tmp / "photos", n_good=40, n_defect=12, seed=11)
    samples = _samples(root)
    result = get_trainer("anomaly-detection").train(
        samples, "anomaly-detection/fast", tmp / "model", shared_cache_dir
    )
    return load_artifact(result.artifact_dir), samples, tmp


def _compress(artifact, samples, out, candidates):
    photos = judging_photos(samples)
    return compress_artifact(
        artifact,
        out,
        calibration=[s.path for s in samples if s.split == "train"],
        validation=photos,
        candidates=candidates,
        metric=AnomalyJudge(artifact.card["threshold"]),
        threads=(1,),
        latency_runs=3,
    )


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


def test_the_judge_refuses_a_copy_that_ranks_alike_but_flags_differently():
    judge = AnomalyJudge(threshold=1.0)
    targets = ["good"] * 20 + ["scratch"] * 10
    original = [{"score": s} for s in np.r_[np.linspace(0.1, 0.9, 20), np.linspace(1.1, 2.0, 10)]]
    judge(original, targets)
    assert judge.refusal() == ""
    scaled = [{"score": p["score"] * 1.3} for p in original]  # same order, same AUROC
    assert judge(scaled, targets) == judge.score(original, targets) == 1.0
    assert "answers good/defect as the original does" in judge.refusal()


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

    artifact = model[0]
    assert compression_refusal(artifact) == ""
    judge = compression_metric(artifact)
    assert isinstance(judge, AnomalyJudge) and judge.threshold == artifact.card["threshold"]
    assert compression_candidates(artifact) == list(CANDIDATES)
