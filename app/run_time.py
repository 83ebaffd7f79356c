"""What a training run takes, every stage in, and one progress bar over all of them.

A run is more than the trainer: the worker process starts and opens the workspace, the trainer runs
(its own estimate covers features, head fitting and export), then every sample of the project is
scored for label suggestions. :func:`scoring_seconds` and :data:`JOB_START_S` add the parts the
trainer does not know; :class:`RunProgress` puts the trainer's bar (0..1) and the scoring on one
bar that never goes backwards, with an ETA that counts what is left of both.
"""

from __future__ import annotations

import time

from modeldesk.app.calibration import calibrated_seconds, learn
from modeldesk.scheduler import CostModel

# Cost-model key: samples scored per second after training (decoding + the whole exported graph).
SCORING_WORK = "label-suggestions"
# Seconds per sample before anything was measured here, in the priors' units (app.calibration): decoding
# plus the whole graph; with the session's start below, 100 sign digits were scored in 0.95 s and 100
# spoken digits in 0.47 s in those units (bench/estimates.py --stages, 2026-12-04; it was 0.012 and 0.5).
SCORING_PRIOR_S = 0.008
# Seconds for the scorer's session to be created, once per run.
SCORING_START_S = 0.25
# The worker process starting (Python, numpy, ONNX Runtime) and opening the workspace: 0.5-0.6 s from
# "running" to the trainer's first event at probe slowdown 0.9-1.2 and 0.4-1.1 s beside a benchmark (0.4-0.6
# s in the priors' units; bench/estimates.py, 2026-12-04): 0.7 s in those units.
JOB_START_S = 0.7


def scoring_key(project, template: str | None = None) -> str:
    """Scoring speed depends on the kind of input (a photo costs far more than a text) and on the
    model's recipe (views and pooling: accurate scored 500 photos in 10 s when fast took 15 s)."""
    return f"{SCORING_WORK}/{project.kind}/{project.target}" + (f"/{template}" if template else "")


def scoring_count(store, project) -> int:
    """How many samples :func:`modeldesk.app.pipeline.prelabel` will score after training."""
    if project.target not in ("label", "boxes"):
        return 0
    samples = [s for s in store.samples(project) if s.path is not None or s.text is not None]
    if project.target == "boxes":
        samples = [s for s in samples if s.path is not None and not s.boxes]
    return len(samples)


def scoring_seconds(
    cache_dir, project, n_samples: int, plan: dict | None = None, template: str | None = None
) -> float:
    """The time to score ``n_samples`` for label suggestions: measured here before; else from the
    training ``plan``'s feature throughput (scoring decodes each sample and runs the same backbone, plus
    ~30% for the head and smaller batches); else a prior."""
    if n_samples <= 0:
        return 0.0
    cost = CostModel(cache_dir)
    rate = cost.items_per_s(scoring_key(project, template), "cpu", 1, 1, exact=True) if template else None
    rate = rate or cost.items_per_s(scoring_key(project), "cpu", 1, 1)  # another recipe's, else none
    if not rate:
        speeds = [d.get("items_per_s") for d in (plan or {}).get("devices") or [] if isinstance(d, dict)]
        known = sum(v for v in speeds if isinstance(v, (int, float)) and v > 0)
        rate = known / 1.3 if known else None
    return SCORING_START_S + n_samples * (1.0 / rate if rate else SCORING_PRIOR_S)


def record_scoring(cache_dir, project, n_samples: int, seconds: float, template: str | None = None) -> None:
    """Fold a real scoring run into the cost model (the next estimate uses it), per recipe and overall."""
    if n_samples > 0 and seconds > 0:
        work = max(
            seconds - SCORING_START_S, 0.5 * seconds
        )  # a quick run still counts (the start is a guess)
        for key in {scoring_key(project), scoring_key(project, template)}:
            CostModel(cache_dir).record(key, "cpu", 1, 1, n_items=n_samples, seconds=work)


def trainer_counts_scoring(plan: dict | None) -> float | None:
    """The scoring seconds a trainer's own estimate already includes (``plan["seconds"]["scoring"]``,
    as the text trainer gives), else None."""
    seconds = (plan or {}).get("seconds")
    value = seconds.get("scoring") if isinstance(seconds, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def whole_run(estimate: dict, scoring_s: float) -> dict:
    """The trainer's ``estimate`` with the worker start and the scoring added to ``eta_s`` (the plan
    keeps the parts: ``training_eta_s``, ``scoring_eta_s``, ``start_eta_s``); a trainer whose estimate
    already counts the scoring (:func:`trainer_counts_scoring`) gets only the start added."""
    training = estimate.get("eta_s")
    if not isinstance(training, (int, float)):
        return estimate
    plan = dict(estimate.get("plan") or {})
    counted = trainer_counts_scoring(plan)
    if counted is not None:
        scoring_s, training = counted, float(training) - counted
    total = round(float(training) + scoring_s + JOB_START_S, 1)
    plan.update(
        {
            "eta_s": total,
            "training_eta_s": training,
            "scoring_eta_s": round(scoring_s, 1),
            "start_eta_s": JOB_START_S,
        }
    )
    return {**estimate, "eta_s": total, "plan": plan}


def run_eta(planned_s: float, elapsed: float, fraction: float) -> float:
    """Seconds left of a run planned at ``planned_s``: what is left of the plan, blended with the pace
    so far as the bar fills (weight ``fraction**2``: a trainer's bar runs ahead of the clock early on,
    the features filling most of it); once the plan is overdue, the pace alone."""
    fraction = min(max(fraction, 0.0), 1.0)
    if fraction <= 0.05:
        return max(planned_s - elapsed, 0.0)
    pace = elapsed * (1 - fraction) / fraction
    if elapsed >= planned_s:
        return pace
    weight = fraction**2
    return (1 - weight) * (planned_s - elapsed) + weight * pace


class RunProgress:
    """One bar over training then scoring: ``training(stage, fraction, eta_s, metrics)`` and
    ``scoring(done, total)`` both end in ``report(stage, fraction, eta_s=..., metrics=...)``.

    The training share of the bar is set by the trainer's first ETA against ``scoring_s``; the
    fraction reported never decreases, and the trainer's "Done" is not shown while scoring follows.
    With ``scale`` (``app.calibration``: this machine's speed now and what runs here taught), the
    whole run's plan is the trainer's first ETA plus the scoring times ``scale``, and every ETA is
    that plan blended with the pace measured so far (:func:`run_eta`), for the whole bar.
    """

    SCORING_STAGE = "Scoring your images for label suggestions"

    def __init__(
        self,
        report,
        scoring_s: float,
        clock=time.monotonic,
        *,
        noun: str = "images",
        counted: bool = False,
        scale: float | None = None,
    ):
        self.report, self.scoring_s, self.clock = report, max(float(scoring_s), 0.0), clock
        self.stage = f"Scoring your {noun} for label suggestions"
        self.counted = counted  # the trainer's ETAs already include the scoring (see trainer_counts_scoring)
        self.share: float | None = None
        self.fraction = 0.0
        self.scoring_started: float | None = None
        self.scale = scale
        self.planned_s: float | None = None  # the whole run, calibrated (with ``scale``)
        self.started = clock()

    def _emit(self, stage, fraction, eta_s, metrics=None) -> None:
        self.fraction = max(self.fraction, min(float(fraction), 1.0))
        if self.planned_s is not None:  # the calibrated plan, following the measured pace
            eta_s = run_eta(self.planned_s, self.clock() - self.started, self.fraction)
        self.report(stage, self.fraction, eta_s=eta_s, metrics=metrics)

    def training(self, stage, fraction, eta_s=None, metrics=None) -> None:
        if self.share is None:  # the trainer's first report carries its whole estimate
            training_s = float(eta_s) if isinstance(eta_s, (int, float)) and eta_s > 0 else 1.0
            if self.counted:
                self.share = max(training_s - self.scoring_s, 0.5 * training_s) / training_s
            else:
                self.share = training_s / (training_s + self.scoring_s) if self.scoring_s else 1.0
            if self.scale and isinstance(eta_s, (int, float)) and eta_s > 0:
                self.planned_s = self.scale * (training_s + (0.0 if self.counted else self.scoring_s))
        if stage == "Done" and self.share < 1.0:
            stage = "Model ready"
        extra = 0.0 if self.counted else self.scoring_s
        left = eta_s + extra if isinstance(eta_s, (int, float)) else None
        self._emit(stage, self.share * float(fraction), left, metrics)

    def scoring(self, done: int, total: int) -> None:
        now = self.clock()
        if self.scoring_started is None:
            self.scoring_started = now
        share = self.share if self.share is not None else 0.0
        part = done / total if total else 1.0
        elapsed = now - self.scoring_started
        left = elapsed * (1 - part) / part if part > 0.1 else max(self.scoring_s - elapsed, 0.0)
        self._emit(self.stage, share + (1 - share) * part, left)


# -- compression -----------------------------------------------------------------------------------

# Seconds a compression takes on the reference machine before one was measured here, as (fixed, per
# labeled sample) per input kind, or per input kind and target where those differ: building and timing
# the ~30 versions of a photo model costs the same for any number of photos, checking them grows with it
# (117 s for 200 photos, about 50 s for 40: 33 + 0.42 a photo, as a detector's and an anomaly model's
# still take: 43 s for 30 raccoon photos, 38 s for 50 tiles at probe slowdown 0.93, 64 and 57 s in the
# priors' units). A photo classifier's took 29 s for 100 sign digits then (44 s in those units: 0.58 of
# that prior), a sound model's 1.2 s for 100 clips (1.8 s; bench/estimates.py, 2026-12-04). A mask
# model's checks run one whole photo at a time: 76-85 s for 20 CamVid photos on a quiet machine and 153 s
# beside two busy processes, where this prior's 33 + 3.5 a photo had planned 123 and 267 s (2026-12-04).
COMPRESSION_PRIORS = {
    "image": (33.0, 0.42),
    # a detector's copies, after its heads are fitted across folds (timed apart, by their own pace): 43 s
    # for 30 raccoon photos at probe slowdown 0.93 (64 s in the priors' units), 91 s for 77 photos beside
    # a benchmark (2026-12-04); each copy now looks in every test view and the one-look copies are
    # judged too: 90 s for 30 photos where (50, 0.5) planned 61 s (bench/estimates.py --only boxes)
    "image/boxes": (70.0, 0.75),
    # a photo classifier's: 28-29 s for 100 sign digits on a quiet machine and 47 s beside two busy
    # processes, where (19, 0.25) planned 49 and 88 s (bench/estimates.py, 2026-12-04)
    "image/label": (14.0, 0.19),
    "image/mask": (23.0, 2.4),
    "audio": (1.0, 0.008),
}
COMPRESSION_PRIOR = (10.0, 0.1)


# Share of a compression's time spent building and checking the versions; the rest (timing every
# built version interleaved, then saving) comes after the last one is counted (measured: 77 of 117 s).
COMPRESSION_SEARCH_SHARE = 0.65


def compression_fraction(done: int, total: int) -> float:
    """How far a compression is, from ``progress(done, total)`` of compress_artifact (its last step,
    the timing, is one count but a third of the time)."""
    if total <= 1:
        return float(done >= total)
    if done >= total:
        return 1.0
    return COMPRESSION_SEARCH_SHARE * done / (total - 1)


#: the letterbox side of the detectors :data:`COMPRESSION_PRIORS` was measured on
BOXES_PRIOR_SIZE = 320


def compression_work(card: dict) -> float:
    """How many times the priors' work compressing the model of ``card`` is: a detector's backbone and
    fold heads run on every pixel of its letterbox, so its work grows with the letterbox's area."""
    if card.get("target") != "boxes":
        return 1.0
    size = (card.get("preprocessing") or {}).get("size") or BOXES_PRIOR_SIZE
    return (size / BOXES_PRIOR_SIZE) ** 2


def compression_raw_seconds(
    input_kind: str, n_samples: int, target: str | None = None, work: float = 1.0
) -> float:
    """A compression's time on the reference machine, from the priors (see :data:`COMPRESSION_PRIORS`):
    the one of ``input_kind/target`` where there is one, else of ``input_kind``; times ``work``
    (:func:`compression_work`)."""
    fixed, per_sample = COMPRESSION_PRIORS.get(
        f"{input_kind}/{target}", COMPRESSION_PRIORS.get(input_kind, COMPRESSION_PRIOR)
    )
    return (fixed + per_sample * max(n_samples, 1)) * work


def _compression_key(input_kind: str, target: str | None) -> str:
    return f"compression/{input_kind}" + (f"/{target}" if target else "")


def compression_seconds(
    cache_dir,
    input_kind: str,
    n_samples: int,
    factor: float | None = None,
    target: str | None = None,
    work: float = 1.0,
) -> float:
    """The time a compression will take here now: the prior scaled by this machine's slowdown
    (``factor``; measured when None) and by what compressions of this kind (and ``target``) taught here."""
    raw = compression_raw_seconds(input_kind, n_samples, target, work)
    return calibrated_seconds(cache_dir, _compression_key(input_kind, target), raw, factor)


def record_compression(
    cache_dir,
    input_kind: str,
    n_samples: int,
    seconds: float,
    factor: float,
    target: str | None = None,
    work: float = 1.0,
) -> None:
    """Teach the next estimate: this compression took ``seconds`` at slowdown ``factor``."""
    raw = compression_raw_seconds(input_kind, n_samples, target, work)
    learn(cache_dir, _compression_key(input_kind, target), raw, factor, seconds)


def blended_eta(planned_s: float, elapsed: float, fraction: float) -> float:
    """Seconds left: the plan at first, then more and more what the pace so far says (a bar whose
    steps take unequal times, e.g. compression's versions, misleads when extrapolated alone)."""
    planned = max(planned_s - elapsed, 0.0)
    if fraction <= 0.05:
        return planned
    fraction = min(fraction, 1.0)
    return (1 - fraction) * planned + fraction * elapsed * (1 - fraction) / fraction
