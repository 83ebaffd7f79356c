"""The text, sound and anomaly estimates add up their stages as the runs perform them: a stage's
seconds follow the work it does (texts, clip views, coreset steps) and every stage is counted once."""

from __future__ import annotations

import pytest

from modeldesk.scheduler import CostModel
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.templates import get_template


def _texts(n: int) -> list[LabeledSample]:
    return [
        LabeledSample(str(i), f"some words here number {i} " * 4, "ab"[i % 2], "train" if i % 4 else "test")
        for i in range(n)
    ]


def test_the_text_plan_counts_the_encoders_set_up_once_where_the_job_loads_it(monkeypatch):
    from modeldesk.trainers.text import plan as text_plan

    cost = CostModel(None)
    cost.record(text_plan.EMBED_WORK, "cpu", 1, 1, n_items=100, seconds=1.0)
    template = get_template("text-classification/accurate")
    samples = _texts(200)

    def plan(setup_s: float, missing) -> dict:
        monkeypatch.setattr(text_plan, "ENCODER_SETUP_S", setup_s)
        return text_plan.plan_run(samples, template, cost, missing, 1e6)

    # texts to read: training loads the encoder, and the scoring after it reuses the process's
    cold, slow_cold = plan(0.0, len), plan(30.0, len)
    assert cold["embeddings"] == slow_cold["embeddings"] == ["usem3"]
    assert slow_cold["seconds"]["embeddings"] - cold["seconds"]["embeddings"] == pytest.approx(30.0)
    assert slow_cold["seconds"]["scoring"] == cold["seconds"]["scoring"]
    assert slow_cold["eta_s"] - cold["eta_s"] == pytest.approx(30.0)
    # every embedding cached: training reads none, so the scoring is where the encoder is loaded
    cached, slow_cached = plan(0.0, lambda s: 0), plan(30.0, lambda s: 0)
    assert slow_cached["seconds"]["embeddings"] == cached["seconds"]["embeddings"] == 0.0
    assert slow_cached["seconds"]["scoring"] - cached["seconds"]["scoring"] == pytest.approx(30.0)


def _clips(n: int) -> list[LabeledSample]:
    return [LabeledSample(f"clip{i}", f"/nowhere/{i}.wav", "ab"[i % 2], "train") for i in range(n)]


def test_the_sound_estimate_grows_with_the_clips_as_its_stages_do(tmp_path):
    from modeldesk.trainers.sound.features import DEFAULT_SECONDS_PER_VIEW, WORK_KEY
    from modeldesk.trainers.sound.trainer import FIT_S_PER_CLIP, FIXED_S, SoundClassificationTrainer

    trainer = SoundClassificationTrainer()
    template = get_template("sound-classification/fast")
    settings = len(template.search_space.get("l2", [0]))
    small = trainer.estimate(_clips(100), template, tmp_path, device="cpu", threads=2)
    large = trainer.estimate(_clips(400), template, tmp_path, device="cpu", threads=2)
    views = large["plan"]["features_to_compute"] - small["plan"]["features_to_compute"]
    assert views >= 300  # at least one view of each clip
    per_clip_work = views * DEFAULT_SECONDS_PER_VIEW / 2 + 300 * FIT_S_PER_CLIP * settings
    assert large["eta_s"] - small["eta_s"] == pytest.approx(per_clip_work, abs=0.11)
    assert small["eta_s"] > FIXED_S
    # scoring reads clips at the features' throughput: the prior's, then the one measured here
    assert small["plan"]["devices"][0]["items_per_s"] == pytest.approx(2 / DEFAULT_SECONDS_PER_VIEW)
    CostModel(FeatureCache(tmp_path).root).record(WORK_KEY, "cpu", 1, 2, n_items=50, seconds=10.0)
    measured = trainer.estimate(_clips(100), template, tmp_path, device="cpu", threads=2)
    assert measured["plan"]["devices"][0]["items_per_s"] == pytest.approx(5.0)
    assert measured["eta_s"] > small["eta_s"]


def _photos(n: int) -> list[LabeledSample]:
    return [LabeledSample(f"photo{i}", f"/nowhere/{i}.jpg", "good", "train") for i in range(n)]


def test_the_anomaly_estimate_counts_the_coreset_search_as_pool_times_bank(tmp_path):
    from modeldesk.trainers.anomaly.bank import MAX_POOL
    from modeldesk.trainers.anomaly.trainer import (
        CORESET_S_PER_MILLION,
        POSITION_GAUSSIAN_S_PER_PHOTO,
        AnomalyDetectionTrainer,
    )

    trainer = AnomalyDetectionTrainer()
    bank_template = get_template("anomaly-detection/accurate")
    assert bank_template.method == "memory-bank"

    def search_s(n: int) -> float:  # the memory bank's estimate less the same photos' without a search
        bank = trainer.estimate(_photos(n), bank_template, tmp_path, device="cpu")
        other = trainer.estimate(_photos(n), "anomaly-detection/fast", tmp_path, device="cpu")
        # the fast recipe's fit: a Gaussian per patch position, photo by photo
        assert other["plan"]["seconds"]["bank"] == pytest.approx(n * POSITION_GAUSSIAN_S_PER_PHOTO)
        # the cross-fitted threshold's folds (tests/trainers/test_anomaly_threshold.py) are not the search
        folds = [e["plan"]["seconds"].get("threshold folds", 0.0) for e in (bank, other)]
        # nor is the export and evaluation, quicker for a Gaussian (a product, not a search)
        export = [e["plan"]["seconds"]["export"] for e in (bank, other)]
        unshared = folds[0] - folds[1] + export[0] - export[1]
        return bank["eta_s"] - unshared - other["eta_s"] + n * POSITION_GAUSSIAN_S_PER_PHOTO

    grid = bank_template.neck.grid**2
    few, many = 10, 60
    expected = {}
    for n in (few, many):
        pool = min(MAX_POOL, n * grid)
        bank = min(bank_template.bank_size, max(1000, int(bank_template.coreset_share * n * grid)), pool)
        expected[n] = min(pool * bank / 1e6 * CORESET_S_PER_MILLION, 0.7 * bank_template.time_budget_s)
    assert expected[many] > 5 * expected[few]  # the test tells the two apart
    assert search_s(few) == pytest.approx(expected[few], abs=0.11)
    assert search_s(many) == pytest.approx(expected[many], abs=0.11)


def test_the_segmentation_estimate_does_not_count_the_load_a_second_time(tmp_path, monkeypatch):
    # The app scales a raw estimate by the machine's slowdown now (app.calibration); a head time taken from
    # numpy's speed measured now would be scaled twice, so the raw estimate must not follow that speed.
    from modeldesk.trainers.segmentation import trainer as seg

    photos = [LabeledSample(f"frame{i}", f"/nowhere/{i}.png", "mask", "train") for i in range(20)]
    template = get_template("segmentation/fast")

    def estimate(flops: float) -> dict:
        monkeypatch.setattr(seg, "measured_flops", lambda: flops)
        return seg.SegmentationTrainer().estimate(photos, template, tmp_path, device="cpu")

    idle, busy = estimate(4 * seg.FLOPS), estimate(seg.FLOPS / 10)
    assert busy["eta_s"] == idle["eta_s"]
    assert busy["plan"]["seconds"]["head"] > 0
    assert sum(idle["plan"]["seconds"].values()) == pytest.approx(idle["eta_s"], abs=0.06)


def test_the_image_estimate_shows_its_stages_and_learns_the_export_measured_here(tmp_path):
    from modeldesk.trainers.image.classification import (
        FINISH_PRIOR_S,
        _finish_key,
        estimate_training,
    )

    photos = [LabeledSample(f"p{i}", f"/nowhere/{i}.jpg", "ab"[i % 2], "train") for i in range(40)]
    template = get_template("image-classification/fast")
    first = estimate_training(photos, template, tmp_path, device="cpu")
    parts = first["plan"]["seconds"]
    assert set(parts) == {"features", "head", "export"}
    assert sum(parts.values()) == pytest.approx(first["eta_s"], abs=0.06)
    assert parts["export"] == FINISH_PRIOR_S
    # the export measured here (0.25 s) replaces the prior, and only that part of the estimate moves
    CostModel(FeatureCache(tmp_path).root).record(_finish_key(template), "cpu", 1, 1, n_items=1, seconds=0.25)
    again = estimate_training(photos, template, tmp_path, device="cpu")
    assert again["plan"]["seconds"]["export"] == pytest.approx(0.25)
    assert again["plan"]["seconds"]["features"] == parts["features"]
    assert again["eta_s"] == pytest.approx(first["eta_s"] - FINISH_PRIOR_S + 0.25, abs=0.06)


def test_the_detection_estimate_adds_up_its_stages(tmp_path):
    from modeldesk.trainers.detection.trainer import EXPORT_S, estimate_detection

    # one box a photo: the estimate counts the boxes, not what they hold; fast looks at each photo twice
    photos = [LabeledSample(f"r{i}", f"/nowhere/{i}.jpg", ("a raccoon",), "train") for i in range(30)]
    estimate = estimate_detection(photos, "object-detection/fast", tmp_path, device="cpu")
    parts = estimate["plan"]["seconds"]
    assert parts["export"] == 2 * EXPORT_S and parts["refine"] > 0 and parts["features"] > 0
    assert sum(parts.values()) == pytest.approx(estimate["eta_s"], abs=0.06)
