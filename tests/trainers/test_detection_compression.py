"""Compression's judgement of a detector's smaller copy: against the original's boxes on the labeled
photos its head was not fitted on, and refused on too few photos."""

from __future__ import annotations

import dataclasses

import pytest

from modeldesk.datasets.records import Box
from modeldesk.deploy import compress_artifact, load_artifact
from modeldesk.errors import UserError
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.detection.compression import MIN_PHOTOS, DetectionJudge, judging_photos
from modeldesk.trainers.detection.features import DetectionNeck
from modeldesk.trainers.detection.templates import TEMPLATES
from modeldesk.trainers.detection.trainer import ObjectDetectionTrainer

from .detection_data import make_detection_samples

SMALL = dataclasses.replace(
    TEMPLATES[0],
    name="object-detection/test-small",
    neck=DetectionNeck(size=160, stride=16, levels=("stride16", "stride32")),
)


def _pred(box, score=0.9, label="cat"):
    return {"label": label, "score": score, "box": list(box)}


def test_judge_refuses_a_copy_that_loses_the_originals_boxes():
    targets = [(Box("cat", 0, 0, 10, 10),), (Box("cat", 20, 20, 40, 40), Box("cat", 50, 50, 60, 60))]
    original = [
        {"boxes": [_pred((0, 0, 10, 10))]},
        {"boxes": [_pred((20, 20, 40, 40)), _pred((50, 50, 60, 60), 0.8), _pred((1, 1, 5, 5), 0.1)]},
    ]
    judge = DetectionJudge(["cat"], threshold=0.5)
    assert judge(original, targets) == pytest.approx(1.0) and judge.refusal() == ""
    assert judge(original, targets) == pytest.approx(1.0) and judge.refusal() == ""  # the same boxes again
    # a copy whose second-best box moved: one of the original's three boxes is no longer drawn
    moved = [original[0], {"boxes": [_pred((20, 20, 40, 40)), _pred((70, 70, 90, 90), 0.8)]}]
    score = judge(moved, targets)
    assert score < 1.0 and judge.agreement < 0.95
    assert "reproduces the original's boxes" in judge.refusal()
    assert judge.agreements[0] == 1.0 and len(judge.agreements) == 3


def test_a_copys_map50_loss_gets_a_paired_bootstrap_bound():
    from modeldesk.deploy.verdict import bootstrap_loss_bound

    targets = [(Box("cat", 0, 0, 10, 10),) for _ in range(60)]
    original = [{"boxes": [_pred((0, 0, 10, 10))]} for _ in range(60)]
    copy = [{"boxes": [_pred((30, 30, 40, 40))]} if i % 10 == 0 else original[i] for i in range(60)]
    judge = DetectionJudge(["cat"], threshold=0.5)
    lost = judge.score(original, targets) - judge.score(copy, targets)
    assert lost > 0.05  # it misses 6 of the 60 cats
    bound = bootstrap_loss_bound(judge.score, original, copy, targets, 0.95)
    assert lost < bound < lost + 0.15  # above the loss seen, by a margin that 60 photos allow
    assert bootstrap_loss_bound(judge.score, original, original, targets, 0.95) == 0.0
    assert judge.reference is None  # scoring records nothing: the verdict may resample freely


def test_a_copy_is_judged_only_on_photos_the_head_was_not_fitted_on():
    """The copies keep the trained head: a photo it was fitted on would compare the copy with an original
    that learned that photo, so only the validation and test photos judge."""
    box = (Box("cat", 0, 0, 5, 5),)
    splits = ["train"] * 40 + ["val"] * 12 + ["test"] * 18
    samples = [LabeledSample(f"k{i}", f"p{i}.png", box, split) for i, split in enumerate(splits)]
    samples.append(LabeledSample("u", "u.png", (), "val"))  # no boxes: nothing to judge with
    photos = judging_photos(samples)
    assert [path for path, _ in photos] == [f"p{i}.png" for i in range(40, 70)]
    with pytest.raises(UserError, match=f"at least {MIN_PHOTOS} labeled photos in the validation and test"):
        judging_photos(samples[:60])  # 20 photos outside training
    assert len(judging_photos(samples[:60], minimum=20)) == 20
    with pytest.raises(UserError, match="trained on every labeled photo"):
        judging_photos([LabeledSample(f"k{i}", f"p{i}.png", box, "val") for i in range(40)])


@pytest.fixture(scope="module")
def trained(tmp_path_factory, shared_cache_dir):
    folder = tmp_path_factory.mktemp("boxes")
    samples = make_detection_samples(folder, n=30, seed=1)
    result = ObjectDetectionTrainer().train(samples, SMALL, folder / "model", shared_cache_dir)
    return samples, result


def test_compression_keeps_the_original_when_the_judge_refuses(trained, tmp_path, monkeypatch):
    from modeldesk.deploy import verdict

    judged, real = [], verdict.judge
    monkeypatch.setattr(verdict, "judge", lambda *a, **k: judged.append(a) or real(*a, **k))
    samples, result = trained
    artifact = load_artifact(result.artifact_dir)
    judge = DetectionJudge(
        artifact.labels, artifact.card["score_threshold"], min_agreement=1.01
    )  # refuse all
    out = compress_artifact(
        artifact,
        tmp_path / "int8",
        calibration=[s.path for s in samples if s.split == "train"],
        validation=judging_photos(samples, minimum=10),  # 12 of the 30 made photos are outside training
        candidates=["int8-qdq-perchannel"],
        threads=(1,),
        max_loss=1.0,
        metric=judge,
        latency_runs=2,
    )
    rows = {row["name"]: row for row in out["candidates"]}
    assert judge.agreements[0] == 1.0  # the original was scored first: it is the reference
    assert rows["int8-qdq-perchannel"]["code"] == "less_accurate"
    assert "reproduces the original's boxes" in rows["int8-qdq-perchannel"]["reason"]
    assert out["chosen"] == "fp32" and out["metric"] == "map50"
    assert len(judged) == 1  # the one verdict every task shares
    assert "loss_bound" not in rows["int8-qdq-perchannel"]  # refused for its boxes before any bound
    # what export --compress --json and the Deploy page state: the bound proven (none lost: the original),
    # at what confidence, on how many photos, of the detector's own score
    assert out["loss_bound"] == 0 and 0.5 < out["confidence"] <= 0.95
    assert out["judged_examples"] == sum(s.split != "train" for s in samples) == 12
    assert "box score (mAP50)" in out["claim"]
    assert f"{out['judged_examples']} photos it was not trained on" in out["claim"]
