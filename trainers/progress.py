"""One progress reporter for every trainer: it stops a run when asked and gives each step an ETA."""

from __future__ import annotations

import time
from collections.abc import Callable

from modeldesk.scheduler.partition import Cancelled


def stage_reporter(
    started: float,
    planned_s: float | None,
    progress: Callable | None,
    should_stop: Callable[[], bool] | None,
    on_stage: Callable[[str], None] | None = None,
) -> Callable:
    """``report(stage, fraction, metrics=None)`` for a run that began at ``started`` (``time.monotonic``).

    It raises :class:`Cancelled` when ``should_stop()`` says so, then calls
    ``progress(stage, fraction, eta_s, metrics)``. The ETA starts as what is left of the plan
    (``planned_s``) and follows the bar's own pace more and more as it fills, since stages run at
    different paces. ``on_stage(stage)`` sees every stage (e.g. to note when each began).
    """

    def report(stage: str, fraction: float, metrics=None) -> None:
        if on_stage is not None:
            on_stage(stage)
        if should_stop is not None and should_stop():
            raise Cancelled("training was stopped")
        if progress is None:
            return
        fraction = float(min(max(fraction, 0.0), 1.0))
        elapsed = time.monotonic() - started
        planned = None if planned_s is None else max(float(planned_s) - elapsed, 0.0)
        pace = elapsed * (1 - fraction) / fraction if fraction > 0.05 else None
        if planned is None or pace is None:
            eta = pace if planned is None else planned
        else:
            eta = (1 - fraction) * planned + fraction * pace
        progress(stage, fraction, eta, metrics)

    return report
