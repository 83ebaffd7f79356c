"""Every stage a run performs is in its ETA (the worker start and the scoring for label suggestions
too), and one bar covers them all without ever going backwards."""

from __future__ import annotations

import pytest

from modeldesk.app.run_time import JOB_START_S, RunProgress, scoring_count, whole_run
from modeldesk.app.workspace import Workspace


def test_the_bar_covers_training_then_scoring_and_never_goes_back():
    events, clock = [], iter(float(t) for t in range(100))
    bar = RunProgress(
        lambda stage, fraction, eta_s=None, metrics=None: events.append((stage, fraction, eta_s)),
        scoring_s=10.0,
        clock=lambda: next(clock),
    )
    bar.training("Extracting features", 0.0, eta_s=30.0)
    bar.training("Tuning", 0.8, eta_s=6.0)
    bar.training("Done", 1.0, eta_s=0.0)
    for done in (0, 32, 64, 100):
        bar.scoring(done, 100)
    fractions = [f for _, f, _ in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert events[0][1] == 0.0 and events[0][2] == 40.0  # the ETA counts the scoring from the start
    assert events[2][0] == "Model ready" and events[2][1] == pytest.approx(
        0.75
    )  # 30 s of 40 s: training's share
    assert events[2][2] == 10.0
    assert {stage for stage, _, _ in events[3:]} == {"Scoring your images for label suggestions"}
    assert "Done" not in [stage for stage, _, _ in events]  # not "Done" while work is left


def test_without_scoring_the_trainer_has_the_whole_bar():
    events = []
    bar = RunProgress(lambda stage, fraction, eta_s=None, metrics=None: events.append((stage, fraction)), 0.0)
    bar.training("Extracting features", 0.5, eta_s=3.0)
    bar.training("Done", 1.0, eta_s=0.0)
    assert events == [("Extracting features", 0.5), ("Done", 1.0)]


def test_whole_run_adds_the_start_and_the_scoring_and_keeps_the_parts():
    estimate = whole_run({"eta_s": 20.0, "plan": {"devices": ["cpu"], "eta_s": 20.0}}, scoring_s=5.0)
    assert estimate["eta_s"] == pytest.approx(25.0 + JOB_START_S)
    assert estimate["plan"]["eta_s"] == estimate["eta_s"] and estimate["plan"]["devices"] == ["cpu"]
    assert (estimate["plan"]["training_eta_s"], estimate["plan"]["scoring_eta_s"]) == (20.0, 5.0)
    assert whole_run({"eta_s": None, "plan": {}}, 5.0)["eta_s"] is None  # nothing known: nothing made up


def test_a_run_reports_its_scoring_stage_on_one_rising_bar_and_learns_its_speed(tmp_path, shapes_folder):
    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("shapes", "image-classification")
        ws.import_data("shapes", shapes_folder)
        project = ws.project("shapes")
        before = ws.estimate_training("shapes", "image-classification/fast")
        assert scoring_count(ws.store, project) == 36
        assert before["plan"]["scoring_eta_s"] > 0 and before["plan"]["start_eta_s"] == JOB_START_S
        parts = before["plan"]["training_eta_s"] + before["plan"]["scoring_eta_s"] + JOB_START_S
        # the whole run's raw estimate is its parts; the ETA shown is that, scaled to the machine's load
        assert before["plan"]["raw_eta_s"] == pytest.approx(parts, abs=0.11)
        events = []
        result = ws.train("shapes", "image-classification/fast", progress=events.append)
        progress = [
            e for e in events if isinstance(e.get("fraction"), (int, float)) and e.get("type") != "state"
        ]
        fractions = [e["fraction"] for e in progress]
        assert fractions == sorted(fractions), fractions
        stages = [e.get("stage") for e in progress]
        assert RunProgress.SCORING_STAGE in stages  # images, in words
        assert stages.index(RunProgress.SCORING_STAGE) > stages.index("Model ready")
        plan = result["plan"]
        assert plan["scoring_eta_s"] > 0 and plan["actual_s"] >= plan["training_s"] > 0
        from modeldesk.app.run_time import scoring_key
        from modeldesk.scheduler import CostModel

        measured = CostModel(ws.paths.cache / "features").items_per_s(
            scoring_key(project, "image-classification/fast"), "cpu", 1, 1, exact=True
        )
        assert measured and measured > 0  # the next estimate uses this run's scoring speed, not the prior
    finally:
        ws.jobs.close()
        ws.close()


def test_compression_eta_starts_from_the_plan_and_learns_from_each_run(tmp_path):
    from modeldesk.app.calibration import PRIOR_SLOWDOWN, load_factor
    from modeldesk.app.run_time import (
        blended_eta,
        compression_raw_seconds,
        compression_seconds,
        record_compression,
    )

    # a photo model's versions cost the same for 40 photos or 200: far from proportional to the count
    assert compression_raw_seconds("image", 200) < 5 * compression_raw_seconds("image", 40)
    # a sound model has a few small versions to try: seconds, not the minutes a photo model takes
    assert compression_raw_seconds("audio", 700) < compression_raw_seconds("image", 40) / 3
    busy = compression_seconds(tmp_path, "image", 100, factor=6.0)
    assert busy == pytest.approx(compression_raw_seconds("image", 100) * load_factor(6.0))
    record_compression(tmp_path, "image", 100, 2 * busy, 6.0)  # it took twice the estimate
    assert compression_seconds(tmp_path, "image", 100, factor=6.0) == pytest.approx(2 * busy, rel=1e-6)
    assert compression_seconds(tmp_path, "audio", 10, factor=PRIOR_SLOWDOWN) == pytest.approx(
        compression_raw_seconds("audio", 10)
    )
    assert blended_eta(40.0, 0.0, 0.0) == 40.0
    # 3 quick steps of 29 in 5 s: the pace alone says 43 s left; the plan (35 s left) still weighs most
    assert blended_eta(40.0, 5.0, 3 / 29) == pytest.approx(35 * 26 / 29 + 5 * 26 / 29, rel=1e-6)
    assert blended_eta(40.0, 60.0, 0.99) < 1.0  # late: the pace, not an overdue plan


def test_compression_timing_after_the_last_version_keeps_its_share_of_the_bar():
    from modeldesk.app.run_time import COMPRESSION_SEARCH_SHARE, compression_fraction

    steps = [compression_fraction(done, 29) for done in range(30)]
    assert steps == sorted(steps) and steps[0] == 0.0 and steps[-1] == 1.0
    assert steps[28] == pytest.approx(
        COMPRESSION_SEARCH_SHARE
    )  # every version tried, the timing still to come


def test_a_trainer_that_counts_the_scoring_itself_is_not_counted_twice():
    from modeldesk.app.run_time import trainer_counts_scoring

    text_like = {"eta_s": 30.0, "plan": {"eta_s": 30.0, "seconds": {"search": 20.0, "scoring": 8.0}}}
    assert trainer_counts_scoring(text_like["plan"]) == 8.0
    estimate = whole_run(text_like, scoring_s=50.0)  # the app's own guess is not added on top
    assert estimate["eta_s"] == pytest.approx(30.0 + JOB_START_S) and estimate["plan"]["scoring_eta_s"] == 8.0
    events = []
    bar = RunProgress(
        lambda stage, fraction, eta_s=None, metrics=None: events.append((stage, fraction, eta_s)),
        8.0,
        noun="texts",
        counted=True,
    )
    bar.training("Fitting", 0.0, eta_s=30.0)
    bar.training("Done", 1.0, eta_s=8.0)
    bar.scoring(100, 100)
    assert events[0][2] == 30.0 and events[1][0] == "Model ready"
    assert events[1][1] == pytest.approx(22 / 30) and events[-1] == (
        "Scoring your texts for label suggestions",
        1.0,
        0.0,
    )


def test_scoring_speed_is_kept_per_recipe(tmp_path):
    from types import SimpleNamespace

    from modeldesk.app.run_time import SCORING_START_S, record_scoring, scoring_seconds

    project = SimpleNamespace(kind="image", target="label")
    record_scoring(tmp_path, project, 500, SCORING_START_S + 15.0, "image-classification/fast")
    record_scoring(tmp_path, project, 500, SCORING_START_S + 10.0, "image-classification/accurate")
    fast = scoring_seconds(tmp_path, project, 500, template="image-classification/fast")
    accurate = scoring_seconds(tmp_path, project, 500, template="image-classification/accurate")
    assert fast == pytest.approx(SCORING_START_S + 15.0) and accurate == pytest.approx(SCORING_START_S + 10.0)
    best = scoring_seconds(
        tmp_path, project, 500, template="image-classification/best"
    )  # never run: any recipe's
    assert SCORING_START_S + 10.0 <= best <= SCORING_START_S + 15.0


def test_a_compression_estimate_and_its_lesson_belong_to_its_kind_of_model(tmp_path):
    from modeldesk.app.run_time import compression_raw_seconds, compression_seconds, record_compression

    # a photo classifier's versions are checked by label, cheaper than a detector's boxes or an anomaly map
    assert compression_raw_seconds("image", 100, "label") < compression_raw_seconds("image", 100, "boxes")
    assert compression_raw_seconds("image", 100, "mask") > compression_raw_seconds("image", 100)
    assert compression_raw_seconds("image", 100, "anomaly") == compression_raw_seconds("image", 100)
    before = compression_seconds(tmp_path, "image", 100, 2.0, "boxes")
    label = compression_seconds(tmp_path, "image", 100, 2.0, "label")
    record_compression(tmp_path, "image", 100, 3 * label, 2.0, "label")  # a classifier took 3x its estimate
    assert compression_seconds(tmp_path, "image", 100, 2.0, "label") == pytest.approx(3 * label, rel=1e-6)
    assert compression_seconds(tmp_path, "image", 100, 2.0, "boxes") == pytest.approx(before)


def test_a_sharper_detectors_compression_plans_for_its_larger_photos(tmp_path):
    from modeldesk.app.run_time import compression_seconds, compression_work, record_compression

    small, sharp = (
        {"target": "boxes", "preprocessing": {"kind": "image", "size": size}} for size in (320, 480)
    )
    assert compression_work(small) == 1.0 and compression_work(sharp) == pytest.approx(2.25)
    assert compression_work({"target": "label", "preprocessing": {"size": 480}}) == 1.0
    plain = compression_seconds(tmp_path, "image", 60, 2.0, "boxes")
    assert compression_seconds(tmp_path, "image", 60, 2.0, "boxes", 2.25) == pytest.approx(2.25 * plain)
    # a 480 px one that took 2.25x a 320 px one's plan teaches nothing about the 320 px ones
    record_compression(tmp_path, "image", 60, 2.25 * plain, 2.0, "boxes", 2.25)
    assert compression_seconds(tmp_path, "image", 60, 2.0, "boxes") == pytest.approx(plain, rel=1e-6)
