"""The trainers' shared progress reporter: stops when asked, ETA from the plan then from the pace."""

from __future__ import annotations

import pytest

from modeldesk.scheduler.partition import Cancelled
from modeldesk.trainers import progress as progress_module
from modeldesk.trainers.progress import stage_reporter


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    return now


def test_the_eta_starts_from_the_plan_and_follows_the_pace_as_the_bar_fills(clock):
    seen = []
    report = stage_reporter(100.0, 60.0, lambda *args: seen.append(args), None)
    clock[0] = 110.0
    report("Extracting features", 0.0)
    assert seen[-1] == ("Extracting features", 0.0, 50.0, None)  # what is left of the plan
    clock[0] = 120.0
    report("Training", 0.5, {"loss": 1.0})  # the bar says 20 s more, the plan 40 s: halfway between
    assert (
        seen[-1][:2] == ("Training", 0.5)
        and seen[-1][2] == pytest.approx(30.0)
        and seen[-1][3] == {"loss": 1.0}
    )
    clock[0] = 190.0
    report("Evaluating", 0.9)  # past the plan: only the pace is left
    assert seen[-1][2] == pytest.approx(0.9 * 90 * 0.1 / 0.9)


def test_without_a_plan_the_pace_alone_and_fractions_are_clamped(clock):
    seen = []
    report = stage_reporter(100.0, None, lambda *args: seen.append(args), None)
    report("Reading", 0.0)
    assert seen[-1][2] is None
    clock[0] = 110.0
    report("Reading", 1.7)
    assert seen[-1][1:3] == (1.0, 0.0)


def test_a_stop_request_cancels_at_the_next_step_and_every_stage_is_seen(clock):
    stages, stop = [], [False]
    report = stage_reporter(100.0, 10.0, None, lambda: stop[0], on_stage=stages.append)
    report("Training", 0.2)
    stop[0] = True
    with pytest.raises(Cancelled):
        report("Exporting", 0.9)
    assert stages == ["Training", "Exporting"]
