"""Estimates that hold on this machine, as busy as it is now.

The trainers' estimates add up figures measured here before (the cost model) and priors written in
the code for a reference machine; neither knows how busy the machine is now. Before a run,
:func:`calibrated_seconds` multiplies the raw estimate by the machine's slowdown measured now
(``scheduler.speed``: a quick measured pass) and by what runs here taught: actual seconds per raw
estimated second at the reference speed, per recipe (or per kind of compression). Before any run
the priors' own slowdown stands in (they were measured on two busy cores).
"""

from __future__ import annotations

from modeldesk.scheduler import CostModel
from modeldesk.scheduler.cost import set_measurement_scale
from modeldesk.scheduler.speed import slowdown

# Cost-model key of the learned correction: "items" are actual seconds at the reference speed, so
# its items_per_s is actual / (raw estimate x slowdown).
CALIBRATION_WORK = "estimate-calibration"
#: the slowdown the priors in the code were measured at (two busy cores: the probe took ~1.5x its
#: quiet time; e.g. 6 ms a photo through the backbone against 4 ms quiet)
PRIOR_SLOWDOWN = 1.5
#: a learned correction stays within this factor of the priors' (one odd run must not mislead all)
CORRECTION_LIMIT = 4.0
#: weight of a new run in the learned correction (a recipe runs a few times at most: learn quickly)
LEARN_WEIGHT = 0.5


def _key(what: str) -> str:
    return f"{CALIBRATION_WORK}/{what}"


def correction(cache_dir, what: str) -> float:
    """Actual seconds per raw estimated second at the reference speed for ``what`` (a template name,
    or ``compression/<kind>``): learned from the runs here, else ``1 / PRIOR_SLOWDOWN``."""
    prior = 1.0 / PRIOR_SLOWDOWN
    learned = CostModel(cache_dir).items_per_s(_key(what), "cpu", 1, 1, exact=True)
    if not learned:
        return prior
    return min(max(learned, prior / CORRECTION_LIMIT), prior * CORRECTION_LIMIT)


#: a job slows down less than the probe as the load grows (its threads, its waits on disk): the job's
#: factor is the probe's (against the priors') to this power. Fitted on bench/estimates.py at load
#: averages 19-24 on 2 cores: probe 7x the priors' with jobs ~7x, probe 13x with jobs ~7.6x.
LOAD_EXPONENT = 0.85


def load_factor(factor: float) -> float:
    """How much longer than the priors say a job takes at probe slowdown ``factor``."""
    return (factor / PRIOR_SLOWDOWN) ** LOAD_EXPONENT


def calibrated_seconds(cache_dir, what: str, raw_s: float, factor: float | None = None) -> float:
    """``raw_s`` as this machine will take it now (``factor``: the slowdown, measured when None)."""
    factor = slowdown() if factor is None else factor
    return float(raw_s) * correction(cache_dir, what) * PRIOR_SLOWDOWN * load_factor(factor)


def measure_load(threads: int | None = None) -> float:
    """The slowdown now for a job of ``threads`` threads (None: every core); from here on this process
    keeps what it measures (a trainer's estimate probing its encoder, say) in the priors' units, so that
    :func:`calibrate` scales it only once."""
    factor = slowdown(threads=threads)
    set_measurement_scale(load_factor(factor))
    return factor


def calibrate(cache_dir, what: str, estimate: dict, factor: float | None = None) -> dict:
    """An estimate ``{"eta_s", "plan"}`` with ``eta_s`` calibrated (see :func:`calibrated_seconds`); the
    plan keeps ``raw_eta_s`` and the ``slowdown`` it was made at (``factor``: measured when None)."""
    raw = estimate.get("eta_s")
    if not isinstance(raw, (int, float)) or raw <= 0:
        return estimate
    factor = slowdown() if factor is None else factor
    eta = round(calibrated_seconds(cache_dir, what, raw, factor), 1)
    plan = {**(estimate.get("plan") or {}), "eta_s": eta, "raw_eta_s": raw, "slowdown": round(factor, 2)}
    return {**estimate, "eta_s": eta, "plan": plan}


def learn(cache_dir, what: str, raw_s, factor, actual_s) -> None:
    """Fold a finished run (raw estimate, the slowdown at its start, its wall time) into the correction."""
    if not all(isinstance(v, (int, float)) and v > 0 for v in (raw_s, factor, actual_s)):
        return
    cost = CostModel(cache_dir, alpha=LEARN_WEIGHT)
    actual_at_reference = actual_s / (PRIOR_SLOWDOWN * load_factor(factor))
    cost.record(_key(what), "cpu", 1, 1, n_items=actual_at_reference, seconds=raw_s, normalise=False)
