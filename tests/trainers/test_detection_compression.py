"""Compression's judgement of a detector's smaller copy: against the original's boxes on every labeled
photo, each by a head fitted across folds without it (else on the photos its head was not fitted on),
and refused on too few photos."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest

from modeldesk.datasets.records import Box
from modeldesk.deploy import compress_artifact, load_artifact
from modeldesk.deploy.inputs import input_for
from modeldesk.deploy.runtime import create_session
from modeldesk.errors import UserError
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.detection.compression import (
    MIN_PHOTOS,
    DetectionJudge,
    detection_judging,
    fit_fold_heads,
    folds_by_content,
    judging_photos,
)
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


def test_judge_refuses_a_copy_whose_boxes_slid_off_the_originals():
    """A shift of a fifth of the box keeps every box at IoU 0.5 but not at 0.75: mAP50 cannot see it."""
    targets = [(Box("cat", 0, 0, 20, 20),) for _ in range(10)]
    original = [{"boxes": [_pred((0, 0, 20, 20))]} for _ in range(10)]
    judge = DetectionJudge(["cat"], threshold=0.5)
    judge(original, targets)
    slid = [{"boxes": [_pred((4, 0, 24, 20), 0.8)]} if i < 4 else original[i] for i in range(10)]
    assert judge(slid, targets) == pytest.approx(1.0) and judge.agreement == pytest.approx(1.0)
    assert judge.agreement_75 == pytest.approx(0.6, abs=0.01)  # 101-point interpolated AP
    assert "sit less exactly where the original's do: 60%" in judge.refusal()
    nudged = [{"boxes": [_pred((1, 0, 21, 20))]} if i < 4 else original[i] for i in range(10)]
    judge(nudged, targets)  # IoU 0.82: the same place at 0.75
    assert judge.agreement_75 == pytest.approx(1.0) and judge.refusal() == ""


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


def test_folds_are_dealt_by_content_hash_whatever_the_order():
    keys = [f"{i:02x}{'ab' * 10}" for i in range(23)]
    fold_of = folds_by_content(keys)
    assert sorted(np.bincount(fold_of).tolist()) == [4, 4, 5, 5, 5]
    shuffled = keys[::-1]
    assert dict(zip(shuffled, folds_by_content(shuffled))) == dict(zip(keys, fold_of))


@pytest.fixture(scope="module")
def fold_heads(trained, shared_cache_dir):
    """The trained detector's head fitted across folds of its 30 photos, and the photos each fit used."""
    from modeldesk.trainers.detection import trainer

    samples, result = trained
    fitted_on, real_fit = [], trainer._Fitter.fit

    def spying_fit(self, indices, params):
        fitted_on.append({self.photos.samples[i].key for i in indices})
        return real_fit(self, indices, params)

    trainer._Fitter.fit = spying_fit
    reported = []
    try:
        folds = fit_fold_heads(
            load_artifact(result.artifact_dir),
            samples,
            shared_cache_dir,
            template=SMALL,
            progress=lambda done, total: reported.append((done, total)),
        )
    finally:
        trainer._Fitter.fit = real_fit
    assert reported == [(k, 5) for k in range(1, 6)]  # the Deploy page's bar moves while the folds fit
    return folds, fitted_on


def test_no_photo_is_judged_by_a_head_that_trained_on_it(trained, fold_heads, tmp_path):
    """Each fold's head learned only the other folds' photos, and compression answers each photo with
    the head of its own fold: here fold 0's real head draws boxes and every other fold's is silenced,
    so a photo gets boxes exactly when it belongs to fold 0."""
    from onnx import numpy_helper

    samples, result = trained
    folds, fitted_on = fold_heads
    keys = np.array([s.key for s in folds.samples])
    assert len(folds.samples) == 30 and sorted(set(folds.fold_of.tolist())) == [0, 1, 2, 3, 4]
    assert len(folds.heads) == len(fitted_on) == 5
    for fold, learned in enumerate(fitted_on):
        assert learned == set(keys[folds.fold_of != fold])  # never its own photos

    def silenced(inits):
        out = []
        for init in inits:
            if init.name.endswith("head/B"):
                init = numpy_helper.from_array(np.full_like(numpy_helper.to_array(init), -50.0), init.name)
            out.append(init)
        return out

    artifact = load_artifact(result.artifact_dir)
    seen = []

    class Recording(DetectionJudge):
        def __call__(self, predictions, targets):
            seen.append(predictions)
            return super().__call__(predictions, targets)

    judge = Recording(artifact.labels, artifact.card["score_threshold"])
    judge.use_folds(
        dataclasses.replace(folds, heads=[folds.heads[0]] + [silenced(h) for h in folds.heads[1:]])
    )
    out = compress_artifact(
        artifact,
        tmp_path / "copy",
        calibration=[s.path for s in samples if s.split == "train"],
        validation=[(s.path, s.target) for s in folds.samples],
        candidates=[],
        threads=(1,),
        metric=judge,
        latency_runs=1,
    )
    assert out["folds"] == 5 and out["judged_examples"] == 30
    drew = [bool(p["boxes"]) for p in seen[0]]  # the original's answers, every score kept
    assert drew == (folds.fold_of == 0).tolist()


def test_a_fold_head_in_a_copy_answers_as_a_detector_built_with_it(trained, fold_heads, shared_cache_dir):
    """A fold's head put in a copy (the original, and an 8-bit copy) gives the boxes of the same copy
    made from a detector graph built with that fold's head and refiner, on a photo."""
    from modeldesk.deploy.compress import _TensorCache, with_head
    from modeldesk.deploy.graph import prune_unused
    from modeldesk.deploy.quantize import Quantizer
    from modeldesk.trainers.backbones import get_backbone
    from modeldesk.trainers.detection.graph import build_detector_graph

    samples, result = trained
    folds, _ = fold_heads
    artifact = load_artifact(result.artifact_dir)
    head, refiner = folds.fitted[2]
    built = build_detector_graph(
        get_backbone(SMALL.backbone),
        SMALL.neck,
        head,
        len(artifact.labels),
        shared_cache_dir / "graphs",
        refiner=refiner,
        dedupe_iou=SMALL.dedupe_iou,
        test_views=SMALL.test_views,
    )
    trained_graph = prune_unused(onnx.load(str(artifact.model_path)))
    photo = next(s for s, fold in zip(folds.samples, folds.fold_of) if fold == 2)
    model_input = input_for(artifact.card)
    feeds = model_input.feeds([model_input.load(photo.path)], artifact.input_name)
    calibration = _TensorCache(
        artifact.spec, [s.path for s in samples[:8]], [], (), artifact.card, artifact.input_name
    ).feeds("calibration", artifact.spec.size)

    def int8(graph):
        return Quantizer(graph, calibration, input_name=artifact.input_name).quantize("qdq", True, False)

    pairs = [
        (built.SerializeToString(), with_head(trained_graph, folds.heads[2])),
        (int8(prune_unused(built)), with_head(onnx.load_from_string(int8(trained_graph)), folds.heads[2])),
    ]
    for made, swapped in pairs:
        answers = [
            create_session(blob, device="cpu", threads=1).run([artifact.output_name], feeds)[0]
            for blob in (made, swapped)
        ]
        assert len(answers[0]) and answers[0].shape == answers[1].shape
        np.testing.assert_allclose(answers[0], answers[1], atol=1e-4)


def test_a_detector_with_few_unseen_photos_gets_a_verdict(
    trained, fold_heads, shared_cache_dir, tmp_path, monkeypatch
):
    """12 of the 30 photos lie outside training, under the 30 the unseen-photo check asks: judged across
    folds, all 30 judge the copies, through the one verdict every task shares."""
    from modeldesk.deploy import verdict
    from modeldesk.trainers.detection import compression

    samples, result = trained
    artifact = load_artifact(result.artifact_dir)
    with pytest.raises(UserError, match=f"at least {MIN_PHOTOS} labeled photos in the validation and test"):
        judging_photos(samples)
    monkeypatch.setattr(compression, "fit_fold_heads", lambda *a, **k: fold_heads[0])
    judge, photos = detection_judging(artifact, samples, shared_cache_dir, template=SMALL)
    assert len(photos) == 30 and judge.fold_heads is fold_heads[0].heads
    judged, real = [], verdict.judge
    monkeypatch.setattr(verdict, "judge", lambda *a, **k: judged.append(k) or real(*a, **k))
    out = compress_artifact(
        artifact,
        tmp_path / "int8",
        calibration=[s.path for s in samples if s.split == "train"],
        validation=photos,
        candidates=["int8-qdq-perchannel"],
        threads=(1,),
        metric=judge,
        latency_runs=1,
    )
    assert len(judged) == 1 and judged[0]["examples"] == 30
    assert out["judged_examples"] == 30 and "on 30 photos" in out["claim"]
    rows = {row["name"]: row for row in out["candidates"]}
    assert rows["fp32"]["accuracy"] > 0.5, rows
    assert rows["int8-qdq-perchannel"]["accuracy"] is not None, rows["int8-qdq-perchannel"]["reason"]


def test_too_few_photos_with_boxes_are_refused_with_the_number_needed(trained, shared_cache_dir):
    samples, result = trained
    artifact = load_artifact(result.artifact_dir)
    with pytest.raises(UserError, match=f"29 with boxes are too few.*label boxes on at least {MIN_PHOTOS}"):
        detection_judging(artifact, samples[:29], shared_cache_dir, template=SMALL)
    # a template this version does not know: the trained head, on the 12 photos outside training
    with pytest.raises(UserError, match="at least 30 labeled photos in the validation and test splits"):
        detection_judging(artifact, samples, shared_cache_dir)
