"""The cross-fitted anomaly threshold: every good photo of the bank is scored by a model of normal fitted
without it, so all good photos set the threshold and count in its promise; held-back photos alone
when the time budget runs out first."""

from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pytest
from PIL import Image

from modeldesk.deploy import load_artifact
from modeldesk.trainers.anomaly.crossfit import FOLDS, fold_of
from modeldesk.trainers.anomaly.scoring import false_alarm_plan, false_alarm_threshold
from modeldesk.trainers.base import Run
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.tasks import get_trainer
from modeldesk.trainers.templates import get_template

from .anomaly_data import plant_blob, texture, write_inspection_folder


def _key(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _goods(root, held_every: int = 5) -> list:
    """The good photos: every ``held_every``-th in the validation split (held back), the rest train."""
    paths = sorted((root / "good").glob("*.png"))
    return [
        LabeledSample(_key(p), str(p), "good", "val" if i % held_every == 0 else "train")
        for i, p in enumerate(paths)
    ]


def _fit(samples, template, cache_dir, tmp_path, budget=None):
    """The trainer's run up to the fitted model of normal and its threshold (no export)."""
    trainer = get_trainer("anomaly-detection")
    template = get_template(template)
    run = Run(
        template=template,
        out_dir=tmp_path / "model",
        cache_dir=cache_dir,
        budget=float(budget or template.time_budget_s),
        device="cpu",
        model_id=None,
        should_stop=None,
        options=dict(trainer.train_options),
    )
    run.labeled, run.labels = trainer.prepare(run, samples)
    run.data = trainer.features(run)
    return run, trainer.fit(run)


def test_the_promise_counts_every_good_photo_not_only_the_held_back_ones(tmp_path, shared_cache_dir):
    root = write_inspection_folder(tmp_path / "photos", n_good=100, n_defect=0, seed=3)
    samples = _goods(root)
    held = sum(1 for s in samples if s.split == "val")
    result = get_trainer("anomaly-detection").train(
        samples, "anomaly-detection/fast", tmp_path / "m", shared_cache_dir
    )
    card = load_artifact(result.artifact_dir).card
    promise = card["false_alarm_promise"]
    assert (promise["photos"], promise["held"], promise["out_of_fold"]) == (100, held, 100 - held)
    assert card["threshold_photos"]["folds"] == FOLDS and card["threshold_photos"]["out_of_fold"] == 80
    # 100 good photos promise 2.3%; the 20 held back alone could promise no better than 10.9%
    assert promise["promised"] == pytest.approx(false_alarm_plan(100, 0.01)["promised"])
    assert promise["promised"] < 0.5 * false_alarm_plan(held, 0.01)["promised"]
    assert "checked in turns" in " ".join(result.warnings)


def test_every_bank_photo_is_scored_by_a_model_that_never_saw_it(tmp_path, shared_cache_dir):
    """An odd good photo (a dark blob, labeled good), imported twice: scored against a bank that held
    it, or its copy, it would look as usual as the others; out of fold it stands out, and the threshold
    is set above it."""
    root = write_inspection_folder(tmp_path / "photos", n_good=24, n_defect=0, seed=4)
    rng = np.random.default_rng(1)
    odd, _ = plant_blob(texture(rng), rng, radius=12)
    Image.fromarray(odd, "L").save(root / "good" / "odd.png")
    shutil.copy(root / "good" / "odd.png", root / "good" / "odd_copy.png")
    samples = [
        LabeledSample(s.key, s.path, s.label, "train" if "odd" in s.path else s.split) for s in _goods(root)
    ]
    run, fitted = _fit(samples, "anomaly-detection/accurate", shared_cache_dir, tmp_path)
    bank = run.data.bank
    odd_rows = [i for i, s in enumerate(bank) if "odd" in s.path]
    assert len(odd_rows) == 2 and len({fold_of(bank[i].key) for i in odd_rows}) == 1
    out_of_fold = fitted.scores["out_of_fold"]
    assert out_of_fold is not None and not np.isnan(out_of_fold).any()
    usual = np.delete(out_of_fold, odd_rows)
    in_bank = fitted.scorer(run.data.maps_of([bank[i] for i in odd_rows]))[0]
    for row, seen in zip(odd_rows, in_bank):
        assert out_of_fold[row] > usual.max()  # it stands out against the goods it was not fitted with
        assert out_of_fold[row] > 1.5 * seen  # against the final bank, which holds it, it does not
    assert fitted.threshold > out_of_fold[odd_rows].max()


def test_held_back_photos_alone_set_the_threshold_when_the_time_budget_runs_out(tmp_path, shared_cache_dir):
    root = write_inspection_folder(tmp_path / "photos", n_good=20, n_defect=0, seed=8)
    samples = _goods(root)
    held = sum(1 for s in samples if s.split == "val")
    run, fitted = _fit(samples, "anomaly-detection/fast", shared_cache_dir, tmp_path)
    assert fitted.threshold_photos["out_of_fold"] == 16 and fitted.promise["photos"] == 20

    run, fitted = _fit(samples, "anomaly-detection/fast", shared_cache_dir, tmp_path, budget=1e-3)
    assert fitted.scores["out_of_fold"] is None
    assert fitted.threshold_photos == {**fitted.threshold_photos, "out_of_fold": 0, "folds": 0}
    assert fitted.promise["photos"] == held and fitted.promise["out_of_fold"] == 0
    assert fitted.threshold == false_alarm_threshold(fitted.scores["held"], 0.01)
    assert any(
        "time budget ran out" in w and f"{held} held-back good photos alone" in w for w in run.warnings
    )


def test_the_estimate_counts_the_folds(tmp_path, shared_cache_dir):
    root = write_inspection_folder(tmp_path / "photos", n_good=20, n_defect=0, seed=2)
    trainer = get_trainer("anomaly-detection")
    for template in ("anomaly-detection/fast", "anomaly-detection/accurate"):
        estimate = trainer.estimate(_goods(root), template, shared_cache_dir)
        seconds = estimate["plan"]["seconds"]
        assert seconds["threshold folds"] > 0
        assert estimate["eta_s"] == pytest.approx(sum(seconds.values()), abs=0.1)
        few = trainer.estimate(_goods(root)[:6], template, shared_cache_dir)  # too few photos for folds
        assert "threshold folds" not in few["plan"]["seconds"]


def test_a_per_position_gaussian_too_large_to_fit_per_fold_falls_back(
    tmp_path, shared_cache_dir, monkeypatch
):
    from modeldesk.trainers.anomaly import trainer as anomaly_trainer

    root = write_inspection_folder(tmp_path / "photos", n_good=20, n_defect=0, seed=8)
    monkeypatch.setattr(anomaly_trainer, "MAX_FOLD_BYTES", 90 << 20)  # the fast template's sums: 90 MiB
    run, fitted = _fit(_goods(root), "anomaly-detection/fast", shared_cache_dir, tmp_path)
    assert fitted.threshold_photos["out_of_fold"] == 16
    monkeypatch.setattr(anomaly_trainer, "MAX_FOLD_BYTES", (90 << 20) - 1)
    run, fitted = _fit(_goods(root), "anomaly-detection/fast", shared_cache_dir, tmp_path)
    assert fitted.scores["out_of_fold"] is None and fitted.promise["photos"] == 4
    assert any("too large to fit 5 times in memory" in w for w in run.warnings)
