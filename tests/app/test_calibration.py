"""Estimates follow this machine's speed now and learn from the runs here (no wall clock involved:
the slowdown is given or comes from a fake probe)."""

from __future__ import annotations

import pytest

from modeldesk.app.calibration import (
    CORRECTION_LIMIT,
    PRIOR_SLOWDOWN,
    calibrate,
    calibrated_seconds,
    correction,
    learn,
    load_factor,
)
from modeldesk.app.run_time import RunProgress
from modeldesk.scheduler import speed


def test_before_any_run_the_raw_estimate_scales_with_the_slowdown_against_the_priors(tmp_path):
    assert correction(tmp_path, "image-classification/fast") == pytest.approx(1 / PRIOR_SLOWDOWN)
    # at the slowdown the priors were measured at, they hold as they are
    at_priors = calibrated_seconds(tmp_path, "image-classification/fast", 30.0, factor=PRIOR_SLOWDOWN)
    quiet = calibrated_seconds(tmp_path, "image-classification/fast", 30.0, factor=1.0)
    busy = calibrated_seconds(tmp_path, "image-classification/fast", 30.0, factor=6.0)
    assert at_priors == pytest.approx(30.0) and quiet < at_priors < busy
    assert busy == pytest.approx(30.0 * load_factor(6.0)) and load_factor(6.0) < 6.0 / PRIOR_SLOWDOWN


def test_a_run_teaches_the_next_estimate_of_its_recipe_only(tmp_path):
    # raw estimate 10 s, machine 4x slower than the reference, the run took 60 s
    learn(tmp_path, "sound-classification/fast", 10.0, 4.0, 60.0)
    assert calibrated_seconds(tmp_path, "sound-classification/fast", 10.0, factor=4.0) == pytest.approx(60.0)
    # at another load the lesson still holds, scaled by that load
    assert calibrated_seconds(tmp_path, "sound-classification/fast", 10.0, factor=2.0) == pytest.approx(
        60.0 * load_factor(2.0) / load_factor(4.0)
    )
    assert correction(tmp_path, "sound-classification/accurate") == pytest.approx(1 / PRIOR_SLOWDOWN)


def test_one_odd_run_cannot_move_the_correction_without_limit(tmp_path):
    learn(tmp_path, "text-classification/fast", 1.0, 1.0, 1000.0)
    assert correction(tmp_path, "text-classification/fast") == pytest.approx(
        CORRECTION_LIMIT / PRIOR_SLOWDOWN
    )
    learn(tmp_path, "text-classification/accurate", 0.0, 1.0, 5.0)  # nothing to learn from
    assert correction(tmp_path, "text-classification/accurate") == pytest.approx(1 / PRIOR_SLOWDOWN)


def test_calibrate_keeps_the_raw_figure_and_the_slowdown_in_the_plan(tmp_path, monkeypatch):
    monkeypatch.setattr("modeldesk.app.calibration.slowdown", lambda: 3.0)
    estimate = calibrate(tmp_path, "image-classification/fast", {"eta_s": 15.0, "plan": {"devices": []}})
    assert estimate["plan"]["raw_eta_s"] == 15.0 and estimate["plan"]["slowdown"] == 3.0
    assert estimate["eta_s"] == pytest.approx(15.0 * load_factor(3.0), abs=0.05)
    assert calibrate(tmp_path, "x/y", {"eta_s": None, "plan": {}})["eta_s"] is None  # nothing made up


def test_the_slowdown_is_measured_once_in_a_while_and_kept_within_limits():
    speed.forget()
    calls, clock = [], [100.0]

    def probe():
        calls.append(1)
        return 1000 * speed.REFERENCE_S  # a hiccup, not a machine 1000x slower

    try:
        first = speed.slowdown(now=lambda: clock[0], probe=probe)
        clock[0] += speed.REUSE_S / 2
        again = speed.slowdown(now=lambda: clock[0], probe=probe)
        clock[0] += speed.REUSE_S
        speed.slowdown(now=lambda: clock[0], probe=probe)
    finally:
        speed.forget()
    assert first == again == speed.LIMITS[1] and len(calls) == 2


def test_run_etas_follow_the_calibrated_plan_then_the_measured_pace():
    events, now = [], [0.0]
    bar = RunProgress(
        lambda stage, fraction, eta_s=None, metrics=None: events.append((fraction, eta_s)),
        scoring_s=10.0,
        clock=lambda: now[0],
        scale=3.0,  # the machine is three times slower than the raw estimate says
    )
    bar.training("Extracting features", 0.0, eta_s=30.0)
    assert events[-1] == (0.0, pytest.approx(120.0))  # (30 + 10) x 3, not the raw 40
    now[0] = 30.0  # three quarters of the bar after 30 s: the plan (90 s left) still weighs most
    bar.training("Tuning", 0.75 / (30 / 40), eta_s=1.0)  # the trainer's own ETA is ignored
    fraction, eta = events[-1]
    assert fraction == pytest.approx(0.75) and eta == pytest.approx(0.4375 * 90 + 0.5625 * 10)
    now[0] = 150.0  # overdue: the pace measured so far alone
    bar.scoring(5, 10)
    assert events[-1][1] == pytest.approx(150 * 0.125 / 0.875)


def test_figures_measured_under_load_are_kept_in_the_priors_units(tmp_path):
    """A run measured while the machine was 6x slow must not make the next estimate, made at the
    same load, 6x slow again (its figures are scaled back; the estimate scales them once)."""
    from modeldesk.scheduler import CostModel
    from modeldesk.scheduler.cost import set_measurement_scale

    set_measurement_scale(load_factor(6.0))
    try:
        CostModel(tmp_path).record("features/x", "cpu", 32, 2, n_items=100, seconds=40.0)
        learn(tmp_path, "image-classification/fast", 10.0, 6.0, 90.0)  # a lesson is not a time: kept as is
    finally:
        set_measurement_scale(None)
    raw = 100 / CostModel(tmp_path).items_per_s("features/x", "cpu", 32, 2)
    assert raw == pytest.approx(40.0 / load_factor(6.0))
    assert calibrated_seconds(tmp_path, "image-classification/accurate", raw, factor=6.0) == pytest.approx(
        40.0
    )
    assert correction(tmp_path, "image-classification/fast") == pytest.approx(
        90.0 / (10.0 * PRIOR_SLOWDOWN * load_factor(6.0))
    )


def test_a_probe_an_estimate_times_is_kept_in_the_priors_units(tmp_path, monkeypatch):
    """The text trainer's estimate times its encoder on the loaded machine: scaling that figure by the
    load once more made a 51 s run an estimate of 432 s."""
    from modeldesk.app.calibration import measure_load
    from modeldesk.scheduler import CostModel
    from modeldesk.scheduler.cost import set_measurement_scale

    monkeypatch.setattr("modeldesk.app.calibration.slowdown", lambda **_: 6.0)
    try:
        factor = measure_load()
        CostModel(tmp_path).measure("text-embed", "cpu", 1, 1, lambda *_: 0.5)  # 0.5 s a text, measured now
    finally:
        set_measurement_scale(None)
    raw = 10 / CostModel(tmp_path).items_per_s("text-embed", "cpu", 1, 1)
    assert calibrated_seconds(tmp_path, "text-classification/accurate", raw, factor) == pytest.approx(5.0)


def test_busy_threads_count_the_runnable_ones_but_the_reader(tmp_path):
    """Linux's /proc/loadavg: "load1 load5 load15 runnable/total lastpid"; the reader is one of them."""
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("2.80 3.31 2.33 3/912 29001\n")
    assert speed.busy_threads(samples=3, gap_s=0, path=str(loadavg)) == 2.0
    loadavg.write_text("garbled\n")
    assert speed.busy_threads(samples=3, gap_s=0, path=str(tmp_path / "missing")) is None
    assert speed.busy_threads(samples=3, gap_s=0, path=str(loadavg)) is None


def test_a_quick_pass_that_reads_quiet_does_not_hide_busy_cores():
    """Beside two busy processes on 2 cores the timed pass often reads 1.0 (it just woke up and runs
    first) while a job on both cores takes twice as long: the ready threads count too."""
    quiet_pass = lambda: speed.REFERENCE_S  # noqa: E731
    speed.forget()
    try:
        assert speed.slowdown(probe=quiet_pass, busy=lambda: 2.0) == speed.contention(2.0) > 1.0
        speed.forget()
        assert speed.contention(2.0, cores=2) == 2.0
        assert speed.slowdown(probe=quiet_pass, busy=lambda: 0.0) == 1.0
        speed.forget()
        assert speed.slowdown(probe=lambda: 3 * speed.REFERENCE_S, busy=lambda: None) == 3.0  # a slow CPU
    finally:
        speed.forget()


def test_a_one_thread_job_shares_the_cores_less_than_one_on_every_core():
    """Beside two busy threads on 2 cores a job on both cores runs twice as long, but a one-thread job
    (a table's fits) gets a core and a half's worth of turns shared three ways: 1.5x; beside one busy
    thread it still has a core of its own."""
    assert speed.contention(2.0, cores=2) == 2.0
    assert speed.contention(2.0, cores=2, threads=1) == 1.5
    assert speed.contention(1.0, cores=2, threads=1) == 1.0
    assert speed.contention(0.0, cores=2, threads=1) == 1.0
    assert speed.contention(None, cores=2, threads=1) == 1.0
    speed.forget()
    try:
        quiet_pass = lambda: speed.REFERENCE_S  # noqa: E731
        assert speed.slowdown(probe=quiet_pass, busy=lambda: 2.0, threads=1) == 1.5
        # the measurement is reused; the job's own threads still count
        assert speed.slowdown(probe=quiet_pass, busy=lambda: 0.0) == 2.0
    finally:
        speed.forget()


def test_a_fit_leaves_the_cores_other_programs_use(monkeypatch):
    """numpy's products run on the cores left free (one at least): beside busy cores a parallel product
    waits for its slowest thread."""
    monkeypatch.setattr(speed, "_cores", lambda: 2)
    quiet_pass = lambda: speed.REFERENCE_S  # noqa: E731
    for ready, threads in ((0.0, 2), (1.0, 1), (2.0, 1), (5.0, 1), (None, 2)):
        speed.forget()
        try:
            assert speed.free_cores(probe=quiet_pass, busy=lambda ready=ready: ready) == threads
        finally:
            speed.forget()
