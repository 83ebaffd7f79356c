"""Automatic compression: try several recipes, measure them here, keep the fastest that stays accurate.

Candidates are static int8 quantization (uint8 activations, int8 weights; per-tensor or per-channel;
QDQ or QOperator graphs), smaller input sizes (the graph is re-exported for 192, 176, 160 or 128 pixels
when its pooling allows it: global or adaptive grid pooling) and their combinations; and, when the
caller can re-fit the model's head
(``refit_head``), each of those with the head re-fitted on that candidate's own features of the training
images, which wins back most of what a smaller input or int8 costs. Each candidate answers every
judging image (with a re-fittable head: every labelled image, each by heads fitted across folds
without it, the original's too), and its latency is measured on this machine, timed interleaved with the
other candidates over several rounds and compared by median (8 images, in the predictor's batches,
ms per image, at each thread count asked for), so that a busy moment cannot favour one candidate.
Above one thread each candidate whose batches hold several images, fp32 too, is also timed with its
batch split into one slice per thread (``onnxruntime-split``: small int8 graphs lose much of their gain
to threads meeting after every operator) and keeps its faster runtime. The verdict is
``deploy.verdict.judge``, shared by every task: the fastest copy whose paired upper bound of loss
against fp32 is within ``max_loss`` is kept, else fp32 is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from . import verdict
from .artifact import ModelArtifact, load_artifact, new_model_id, save_artifact
from .graph import prune_unused
from .image_input import looks
from .inputs import input_class, input_for, output_for
from .preprocess import ImageSpec
from .quantize import Quantizer
from .resize import ResizeError, resize_input
from .runtime import RUNTIMES, SplitBatchSession, create_runtime_session, create_session
from .verdict import (
    CONFIDENCE,
    SPEED_TIE,
    bootstrap_loss_bound,
    explain_kept,
    paired_loss_bound,
    pick_kept,
)

__all__ = ["SPEED_TIE", "explain_kept", "pick_kept"]  # the verdict's, used by the page and tests from here

log = logging.getLogger(__name__)

LATENCY_BATCH = 8
#: Folds of the heads fitted across the judging examples: every example is judged by a head fitted
#: on the other folds (the original's too), so none judges a head it trained.
FOLDS = 5


@dataclass(frozen=True)
class Candidate:
    """One compression recipe: an input size and optionally an int8 quantization format."""

    size: int | None = None  # None keeps the model's own input size
    quant: str | None = None  # None, "qdq" or "qop"
    per_channel: bool = False
    keep_first: bool = False  # keep the first layers in float (mixed precision)
    refit: bool = False  # head re-fitted on this candidate's features of the training images
    one_view: bool = False  # a model with test-time views (mirrored...) runs on the photo as it is only
    variant: str = ""  # a copy the task's judge makes (``metric.variants``), e.g. a smaller memory bank

    def change(self, base_size: int) -> tuple:
        """How far the recipe is from the original, for the verdict's fixed order (``deploy.verdict``):
        full size first, then 8-bit after full precision, a re-fitted head before a fixed one,
        per-channel before per-tensor, float first layers first, QDQ before QOperator."""
        return (
            -(self.size or base_size),
            self.one_view,
            bool(self.quant),
            bool(self.variant),
            not self.refit,
            not self.per_channel,
            not self.keep_first,
            self.quant == "qop",
        )

    @property
    def name(self) -> str:
        parts = ["int8" if self.quant else "fp32"]
        if self.quant:
            parts.append(self.quant)
            parts.append("perchannel" if self.per_channel else "pertensor")
            if self.keep_first:
                parts.append("keepfirst")
        if self.size:
            parts.append(str(self.size))
        if self.one_view:
            parts.append("1view")
        if self.refit:
            parts.append("refit")
        return "-".join(parts) + (f"+{self.variant}" if self.variant else "")

    def plain_name(self) -> str:
        """The recipe as the table of versions names it: ``8-bit, 176 px, head re-fitted (qdq, per
        channel)``; ``Original``; ``Full precision, 160 px``."""
        if self.quant:
            words = ["8-bit"]
        else:
            words = ["Full precision" if self.size or self.one_view or self.refit else "Original"]
        words += [f"{self.size} px"] * bool(self.size)
        words += ["one pass per photo"] * self.one_view + ["head re-fitted"] * self.refit
        words += [self.variant.replace("-", " ")] * bool(self.variant)
        details = [self.quant, "per channel" if self.per_channel else "per tensor"] if self.quant else []
        details += ["first layers in float"] * self.keep_first
        return ", ".join(words) + (f" ({', '.join(details)})" if details else "")

    def describe(self) -> str:
        """The kept copy in a sentence's words: ``8-bit numbers, photos at 176 px, head re-fitted``;
        ``the original``."""
        words = ["8-bit numbers"] * bool(self.quant) + [f"photos at {self.size} px"] * bool(self.size)
        words += ["one pass per photo"] * self.one_view + ["head re-fitted"] * self.refit
        words += [self.variant.replace("-", " ")] * bool(self.variant)
        return ", ".join(words) or "the original"


def default_candidates(base_size: int, *, letterbox: bool = False) -> list[Candidate]:
    """fp32 and six int8 variants at the model's size, then the same at 192 and 160 pixels.

    The int8 variants: QDQ and QOperator graphs, per-tensor and per-channel weights, and per-channel
    with the first layers kept in float. The search skips a smaller size whose fp32 model already
    loses too much, and a recipe at a smaller size that already lost too much at full size.
    A letterboxing model (a detector) keeps its size: its graph holds the cell grid of that size.
    """
    quant = [Candidate(quant=q, per_channel=pc) for q in ("qdq", "qop") for pc in (False, True)]
    quant += [Candidate(quant=q, per_channel=True, keep_first=True) for q in ("qdq", "qop")]
    sizes = [] if letterbox else [s for s in (192, 160) if s < base_size]
    out = [Candidate()] + quant
    for size in sizes:
        out.append(Candidate(size=size))
        out.extend(replace(c, size=size) for c in quant)
    return out


def refit_candidates(base_size: int) -> list[Candidate]:
    """The re-fitted recipes: per-channel QDQ int8 at the model's size and smaller. Full precision at a
    smaller size is left out: 8-bit at the same size runs faster and was as accurate (sign_digits, 779
    photos across folds: 8-bit 0.910 against 0.908 at 192 px, 0.901 against 0.900 at 176), and each extra
    copy is one more place for the verdict's sequence to stop.

    176 px sits between 192 (on sign_digits the smallest within a point: re-fitted 8-bit 0.927 against
    fp32 0.923) and 160 (0.907, too far) and runs about a sixth faster than 192.

    8-bit at full size with the trained head, tried first in the sequence, did no better: on one
    held-out split of sign_digits it was refused (fast template: 0.5 points lost on 779 photos, bound
    1.73; accurate: 0.6, bound 1.52) where its re-fitted twin scored 0.4 points above and 0.3 below the
    original, and it stopped the sequence before any copy was kept."""
    sizes = [None] + [s for s in (192, 176, 160, 128) if s < base_size]
    return [Candidate(size=s, quant="qdq", per_channel=True, refit=True) for s in sizes]


def one_view_candidates(base_size: int, *, refit: bool) -> list[Candidate]:
    """For a model with test-time views: the same recipes run on the photo as it is only, which
    halves (or more) the work; with ``refit``, the head re-fitted on those features, at smaller
    sizes too.

    Measured with views judged on their own photos' rows (best template, sign_digits, 779 photos across
    folds, 2 threads, quiet 2-core machine): re-fitted 8-bit one-pass 4.7x faster, 0.4 points below
    the original, bound 1.39: refused, where the re-fitted 8-bit copy with every view (2.15x, bound
    0.30) passed; the 192 px one-pass copy (6.4x, 1.2 points below) was then not tested."""
    out = [Candidate(one_view=True)]
    out += [Candidate(quant=q, per_channel=True, one_view=True) for q in ("qdq", "qop")]
    if refit:
        out += [replace(c, one_view=True) for c in refit_candidates(base_size)]
    return out


def parse_candidate(name: str) -> Candidate:
    """Inverse of ``Candidate.name`` (``fp32``, ``fp32-160``, ``int8-qdq-perchannel-192-refit``,
    ``fp32+smaller-bank``...)."""
    if "+" in name:
        base, variant = name.split("+", 1)
        return replace(parse_candidate(base), variant=variant)
    if name.endswith("-refit"):
        return replace(parse_candidate(name[: -len("-refit")]), refit=True)
    if name.endswith("-1view"):
        return replace(parse_candidate(name[: -len("-1view")]), one_view=True)
    parts = name.split("-")
    size = int(parts[-1]) if parts[-1].isdigit() else None
    if parts[0] == "fp32" and len(parts) <= 2:
        return Candidate(size=size)
    rest = parts[3:-1] if size else parts[3:]
    if (
        parts[0] == "int8"
        and len(parts) >= 3
        and parts[1] in ("qdq", "qop")
        and parts[2] in ("perchannel", "pertensor")
        and rest in ([], ["keepfirst"])
    ):
        return Candidate(
            size=size, quant=parts[1], per_channel=parts[2] == "perchannel", keep_first=bool(rest)
        )
    raise ValueError(f"unknown compression candidate {name!r}")


def _run_all(session, input_name: str, output_name: str, tensors, batch: int) -> np.ndarray:
    feeds = tensors if isinstance(tensors, dict) else {input_name: tensors}
    total = len(next(iter(feeds.values())))
    chunks = [
        session.run([output_name], {k: v[i : i + batch] for k, v in feeds.items()})[0]
        for i in range(0, total, batch)
    ]
    return np.concatenate(chunks) if chunks else np.zeros((0, 0), np.float32)


def _format_all(session, output, feeds: dict, batch: int) -> list[dict]:
    """Every validation item's prediction as the predictor formats it."""
    total = len(next(iter(feeds.values())))
    if getattr(output, "one_per_run", False):  # a segmentation mask has its own photo's size
        batch = 1
    out = []
    for i in range(0, total, batch):
        out += output.format(session.run(output.names, {k: v[i : i + batch] for k, v in feeds.items()}))
    return out


class _InBatches:
    """A session whose ``run`` goes through its feeds ``batch`` items at a time, as the predictor
    would: the latency of a large model is timed on the same items as the others', in its own batches."""

    def __init__(self, session, batch: int):
        self.session, self.batch = session, int(batch)

    def run(self, output_names, feeds: dict):
        total = len(next(iter(feeds.values())))
        for start in range(0, total, self.batch):
            self.session.run(output_names, {k: v[start : start + self.batch] for k, v in feeds.items()})

    def close(self) -> None:
        getattr(self.session, "close", lambda: None)()


def _batch_of(feeds: dict, n: int) -> dict:
    """``n`` items of every feed, repeating the validation items as needed."""
    return {k: np.ascontiguousarray(np.resize(v, (n, *v.shape[1:]))) for k, v in feeds.items()}


def time_interleaved(runs: dict, *, rounds: int = 9) -> dict:
    """Milliseconds per item for each named ``(session, output_name, feeds)``: every round runs each one
    in turn, in an order that rotates between rounds, and the median over rounds is kept. A busy moment
    then slows every candidate alike instead of favouring the one timed while the machine was quiet.

    Each timed run follows an untimed run of the same session: the first run after another session's
    pays for that session's threads still spinning and for caches filled with its weights (measured at
    2 threads: fp32 11.7 against 5.9 ms per image, int8 6.1 against 2.5), which is not what a model
    serving alone costs and made the int8 graphs look 1.9x faster instead of 2.3x."""
    names = list(runs)
    for name in names:  # warm-up
        session, output, feeds = runs[name]
        for _ in range(2):
            session.run([output], feeds)
    times: dict = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            session, output, feeds = runs[name]
            session.run([output], feeds)
            t0 = time.perf_counter()
            session.run([output], feeds)
            times[name].append(time.perf_counter() - t0)
    return {
        name: 1000.0 * float(np.median(t)) / len(next(iter(runs[name][2].values())))
        for name, t in times.items()
    }


class _TensorCache:
    """Calibration/validation/training feeds per input size: ``{input name: batch}`` made by the
    card's input kind (``deploy.inputs``), i.e. through ``deploy.preprocess`` as the predictor does
    (a detector's original image sizes come along)."""

    def __init__(
        self,
        spec: ImageSpec,
        calibration: list,
        validation: list,
        training: Sequence = (),
        card: dict | None = None,
        input_name: str = "image",
    ):
        self.spec = spec
        self.calibration = list(calibration)
        self.validation = list(validation)
        self.training = list(training)
        self.card = card or {"labels": ["?"], "preprocessing": spec.to_dict()}
        self.input_name = input_name
        self._cache: dict[tuple[str, int], dict] = {}

    def feeds(self, kind: str, size: int) -> dict:
        if kind == "validation" and self.same_images():  # judged on the images heads are fitted on
            kind = "training"
        key = (kind, size)
        if key not in self._cache:
            sources = (
                self.calibration
                if kind == "calibration"
                else [p for p, _ in (self.validation if kind == "validation" else self.training)]
            )
            model_input = input_for(self.card_at(size))
            self._cache[key] = model_input.feeds([model_input.load(s) for s in sources], self.input_name)
        return self._cache[key]

    def card_at(self, size: int) -> dict:
        """The card as a copy at ``size`` px would have it. ``"tiles": None``: every photo whole (a
        tiling segmentation model would otherwise keep each large photo decoded in full until the
        batch is made); copies are judged on the whole photos."""
        return {**self.card, "tiles": None, "preprocessing": replace(self.spec, size=size).to_dict()}

    def batch(self, size: int) -> int:
        """Photos per ``session.run`` at ``size`` px: the predictor's own batch for the original."""
        return input_for(self.card_at(size)).batch_size

    def same_images(self) -> bool:
        """Whether the judging images are the training images (the app judges on every labeled one)."""
        return [p for p, _ in self.validation] == [p for p, _ in self.training]

    def get(self, kind: str, size: int) -> np.ndarray:
        """The image batch alone."""
        return self.feeds(kind, size)[self.input_name]


def compress_artifact(
    artifact,
    out_dir,
    *,
    calibration: list,
    validation: list,
    threads=(1, 2),
    max_loss: float = 0.01,
    candidates=None,
    progress=None,
    latency_runs: int = 9,
    tmp_dir=None,
    training=None,
    refit_head=None,
    metric=None,
    confidence: float = CONFIDENCE,
    noun: str = "photos",
) -> dict:
    """Try compression candidates, keep the fastest proven within ``max_loss``, save it to ``out_dir``.

    Parameters
    ----------
    artifact : ModelArtifact or path
        The fp32 artifact.
    out_dir : str or Path
        Where the chosen model is saved as a normal artifact.
    calibration : list of paths
        Training images used to calibrate int8 activation ranges (64-200 is plenty).
    validation : list of (path, target)
        The labelled images that judge the candidates, each copy paired with the original on all of
        them (``deploy.verdict.judge``); the target is a label for classifiers, anything ``metric``
        understands otherwise (a detector's boxes). With ``refit_head``, give every labelled image:
        each is then judged by heads fitted across :data:`FOLDS` folds of the others (the original's
        too), so the images may be the ones the model was trained on.
    threads : tuple of int
        Thread counts at which latency is measured; the largest decides "fastest".
    max_loss, confidence : float
        Largest accepted accuracy drop against fp32 (0.01 = 1 point), proven at ``confidence`` (one-
        sided upper bound); with too few images both are widened (``deploy.verdict.honest_level``).
    noun : str
        What the images are called in the claim ("photos"); a metric's own ``noun`` replaces it.
    candidates : list of str or Candidate, optional
        Restrict the search (names as in the result, e.g. ``"int8-qdq-pertensor-160"``).
    progress : callable, optional
        Called as ``progress(done, total, message)`` after each candidate (its plain name).
    tmp_dir : path-like, optional
        Folder for the quantizer's scratch files (default: the system's temp folder).
    training : list of (path, label), optional
        Training images whose features a re-fitted head learns from.
    refit_head : callable, optional
        ``refit_head(X, y) -> head``: a head of the model's own kind fitted on features ``X`` (N, D) and
        label indices ``y`` (a model with V test-time views gives V * N rows, view after view, and ``y``
        repeated V times), with ``to_onnx(input, output, prefix)``; every initializer that gives
        replaces the model's of the same name and shape under ``head/`` (so a head may carry more
        than its weights, e.g. a novelty reference). With ``training`` (best: the images the model's
        head was fitted on), adds the re-fitted candidates (models whose card names ``features_output``).
    metric : callable, optional
        ``metric(predictions, targets) -> float``, higher is better, on the validation items'
        predictions as the predictor formats them (every score kept: an output's ``threshold`` is
        set to 0). Default: the share of predicted labels equal to the targets. A detector passes
        mAP50 here; ``max_loss`` then applies to it. The original (fp32) is always scored first. A
        metric with a ``refusal()`` method is asked after each candidate it scored; a non-empty
        answer rejects that candidate with that reason (a detector's judge refuses copies that do not
        reproduce the original's boxes). Two more optional parts of such a metric (an anomaly
        model's judge has them): ``variants``, ``{name: transform}`` where ``transform(graph) -> graph``
        makes a copy of the float graph that only the task knows how to make (a smaller memory bank),
        tried as candidates named ``<recipe>+<name>``; and ``adjust(blob) -> (blob, card fields)``,
        asked after each copy it scored, which may change that copy's graph and card (an anomaly copy
        re-chooses its own threshold from its own scores). And ``fold_of`` and ``fold_heads`` (a
        detector's judge has them): each validation item's fold and, per fold, a head's initializers
        fitted without that fold, put in place of each copy's own of the same name to answer it (so
        every item is judged by a head it did not train, and the items may be the training ones).

    Returns
    -------
    dict
        ``path``, ``size_bytes``, ``candidates`` (each ``name``, ``size_bytes``, ``input_size``,
        ``latency_ms`` (at the largest thread count), ``latency_ms_1t``, ``latency_ms_by_threads``,
        ``latency_ms_by_runtime`` (runtime -> thread count -> ms), ``runtime`` (the fastest at the
        largest thread count, which the chosen model's card records for the predictor and service),
        ``accuracy`` (across folds with ``refit_head``), ``loss_bound`` (points, where tested),
        ``plain_name``, ``kept``, ``reason``, and ``code``: ``kept``, ``reference``, ``less_accurate``,
        ``untested``, ``not_faster``, ``slower``, ``as_fast_less_accurate``, ``skipped`` or ``failed``),
        ``chosen``, ``chosen_words``, ``accuracy_fp32``, ``accuracy_compressed``, ``loss_bound`` (the
        proven bound of the kept copy's loss, points), ``confidence``, ``loss_limit`` (points),
        ``judged_examples``, ``claim`` (a sentence),
        ``speedup`` (at the largest thread count, which also decides "fastest"),
        ``speedup_by_threads``, ``reason``, ``metric`` (what "accuracy" measured: ``"accuracy"``, or
        the metric's ``__name__``, e.g. ``"map50"``).
    """
    artifact = artifact if isinstance(artifact, ModelArtifact) else load_artifact(artifact)
    if not input_class(artifact.input_kind).compress_in_batches:  # one item at a time (sound clips)
        from .compress_clips import compress_item_artifact

        return compress_item_artifact(
            artifact,
            out_dir,
            calibration=calibration,
            validation=validation,
            threads=threads,
            max_loss=max_loss,
            candidates=candidates,
            progress=progress,
            latency_runs=latency_runs,
            confidence=confidence,
            refit_head=refit_head,
        )
    if not validation:
        raise ValueError("compression needs labelled validation images to check accuracy")
    threads = tuple(sorted({int(t) for t in threads}))
    spec = artifact.spec
    base = onnx.load(str(artifact.model_path))
    can_refit = bool(refit_head and training and artifact.card.get("features_output"))
    views = looks(artifact.card)
    if candidates is None:
        # With a re-fitted head available, the fixed-head 8-bit variants are left out: re-fitting wins
        # back most of what they lose, and each weaker copy in the verdict's sequence is one more
        # chance for it to stop before the fast copies (deploy.verdict).
        wanted = (
            [Candidate()] + refit_candidates(spec.size)
            if can_refit
            else default_candidates(spec.size, letterbox=spec.resize == "letterbox")
        ) + (one_view_candidates(spec.size, refit=can_refit) if views > 1 else [])
    else:
        wanted = [c if isinstance(c, Candidate) else parse_candidate(c) for c in candidates]
    if not can_refit:
        wanted = [c for c in wanted if not c.refit]
    if views < 2:
        wanted = [c for c in wanted if not c.one_view]
    wanted = [replace(c, size=None) if c.size == spec.size else c for c in wanted]
    if Candidate() in wanted:
        wanted.remove(Candidate())
    wanted.insert(0, Candidate())
    data = _TensorCache(spec, calibration, validation, training or (), artifact.card, artifact.input_name)
    runner = _Runner(prune_unused(base), artifact, data, threads, latency_runs, tmp_dir, refit_head, metric)
    if can_refit:
        runner.plan_folds(FOLDS)
    results, models = [], {}
    try:
        for index, candidate in enumerate(wanted):
            row, blob = runner.run(candidate)
            results.append(row)
            if blob is not None:
                models[candidate.name] = (blob, row["input_size"], candidate)
            if progress is not None:
                progress(index + 1, len(wanted) + 1, candidate.plain_name())
        runner.time_all(results, models)
    finally:
        runner.close()
    decision = verdict.judge(
        results,
        runner.loss_bounds(),
        examples=len(validation),
        max_loss=max_loss,
        confidence=confidence,
        noun=getattr(metric, "noun", noun),  # a detector's: "photos it was not trained on"
        score=getattr(metric, "score_words", "accuracy"),
    )
    folds = runner.folds or len(getattr(metric, "fold_heads", None) or ())
    chosen = _save(artifact, out_dir, results, models, decision, len(calibration), folds, runner.card_changes)
    chosen["metric"] = getattr(metric, "__name__", "metric") if metric is not None else "accuracy"
    return chosen


def one_view(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of a model with test-time views that runs on its first view only (the photo as it
    is). A classifier's views' ``Concat`` (``views/concat``) passes its first input on, and every
    reshape of the stacked rows to (V, N, ...) (``views/...shape``: the mean over views, the
    novelty's first view) reshapes to (1, N, ...). A detector's (``det/tta/``, see
    ``trainers.detection.tta``) passes on the photo and its size, and its fusion counts one view, so
    each box stays as that view gave it. Raises ResizeError when the graph has no such views."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    nodes = {n.name: n for n in copy.graph.node if n.op_type == "Concat"}
    if "det/tta/concat" in nodes:
        concats, count = ["det/tta/concat", "det/tta/size_concat"], "det/tta/count"
        shapes = [t for t in copy.graph.initializer if t.name == count]
    else:
        concats = ["views/concat"] if "views/concat" in nodes else []
        shapes = [
            t for t in copy.graph.initializer if t.name.startswith("views/") and t.name.endswith("shape")
        ]
    if not concats or not shapes:
        raise ResizeError("the model has no test-time views to drop")
    for name in concats:
        concat = nodes[name]
        concat.CopyFrom(
            onnx.helper.make_node("Identity", [concat.input[0]], list(concat.output), name=f"{name}_first")
        )
    for shape in shapes:  # (V, N, ...) reshapes of the stacked views' rows, a detector's view count: now 1
        dims = onnx.numpy_helper.to_array(shape).copy()
        dims.reshape(-1)[0] = 1
        shape.CopyFrom(onnx.numpy_helper.from_array(dims, shape.name))
    return prune_unused(copy)


def deal_folds(truth: Sequence[str], labels: Sequence[str], folds: int = FOLDS) -> tuple[np.ndarray, int]:
    """``(fold of each judging example, number of folds)``: the examples of ``truth`` dealt into
    ``folds`` folds, class by class in a seeded order, so that every fold's complement holds every
    class (fewer folds when a class has fewer examples; ``(zeros, 0)``, i.e. judged as given, below 2
    or when an example's label is not one of the model's ``labels``). Shared by every compressor that
    judges by heads fitted across folds (photos here, clips in ``compress_clips``)."""
    names = np.array([str(t) for t in truth])
    fold_of = np.zeros(len(names), int)
    counts = {label: int(np.sum(names == label)) for label in set(names.tolist())}
    folds = min([folds, *counts.values()])
    if folds < 2 or any(label not in list(map(str, labels)) for label in counts):
        return fold_of, 0
    rng = np.random.default_rng(0)
    for label in sorted(counts):
        members = np.flatnonzero(names == label)
        rng.shuffle(members)
        fold_of[members] = np.arange(len(members)) % folds
    return fold_of, folds


def rows_view_after_view(session, feature: str, input_name: str, tensors: np.ndarray, batch: int):
    """Output ``feature`` of ``session`` for every image of ``tensors``, run ``batch`` images at a
    time, as the rows of a model with V views come for the whole set at once: view after view.

    Each batch gives its own rows view after view, (V * n, ...); joined as they come, a view's rows
    would follow the other views' rows of the previous batch, each row under another image's label."""
    chunks = []
    for start in range(0, len(tensors), batch):
        part = tensors[start : start + batch]
        out = session.run([feature], {input_name: part})[0]
        chunks.append(out.reshape(len(out) // len(part), len(part), *out.shape[1:]))
    joined = np.concatenate(chunks, axis=1)
    return joined.reshape(-1, *joined.shape[2:])


def fitted_head(
    refit_head, X: np.ndarray, truth: Sequence[str], labels: Sequence[str], model, output_name: str
):
    """The initializers of a head of the model's kind (``refit_head(X, y)``) fitted on features ``X``
    of examples labelled ``truth`` (a model with V views: V * N rows, view after view), named as the
    head of ``model`` (an ONNX graph) names them."""
    index = {str(label): i for i, label in enumerate(labels)}
    y = np.array([index[str(label)] for label in truth])
    if len(X) % len(y):
        raise ResizeError("the model's head reads a number of rows that is not a multiple of its examples")
    # A model with test-time views (mirrored, zoomed...) stacks each view's rows after the other's;
    # its head was fitted on every view of every photo, so the re-fitted one is too.
    head = refit_head(X, np.tile(y, len(X) // len(y)))
    return head.to_onnx(_head_input(model), output_name, prefix="head/")[1]


def with_head(model: onnx.ModelProto, inits: list) -> bytes:
    """``model`` with its head's initializers replaced by ``inits`` (same names and shapes)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    current = {init.name: init for init in copy.graph.initializer}
    for init in inits:
        old = current.get(init.name)
        if old is None or list(old.dims) != list(init.dims):
            raise ResizeError("the re-fitted head does not have the model's head layout")
        old.CopyFrom(init)
    return copy.SerializeToString()


def with_features(model: onnx.ModelProto) -> tuple[bytes, str]:
    """``model`` that also outputs the tensor its head reads, and that tensor's name."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    feature = _head_input(copy)
    copy.graph.output.append(onnx.helper.make_tensor_value_info(feature, onnx.TensorProto.FLOAT, None))
    return copy.SerializeToString(), feature


def _head_input(model: onnx.ModelProto) -> str:
    """The tensor the head reads: the one input of the ``head/`` nodes that no head node makes and
    that is not a weight (quantization tools may rename or fold the tensor the card names)."""
    head = [node for node in model.graph.node if node.name.startswith("head/")]
    made = {out for node in head for out in node.output}
    weights = {init.name for init in model.graph.initializer}
    inputs = {
        name for node in head for name in node.input if name and name not in made and name not in weights
    }
    if len(inputs) != 1:
        raise ResizeError("the model's head cannot be told apart from its backbone")
    return inputs.pop()


class _Runner:
    """Builds and measures candidates, reusing resized graphs and calibrations per input size.

    The sessions that only answer (features, heads across folds) do not spin while idle: on a machine
    shared with other work, busy-waiting threads take the cores the other thread of the same run needs;
    the sessions that are timed (:meth:`time_all`) keep the runtime's default, as a service runs."""

    def __init__(
        self,
        base: onnx.ModelProto,
        artifact: ModelArtifact,
        data: _TensorCache,
        threads,
        latency_runs,
        tmp_dir=None,
        refit_head=None,
        metric=None,
    ):
        self.base = base
        self.metric = metric
        self.card = artifact.card
        self.refit_head = refit_head
        self.features_output = artifact.card.get("features_output")
        self.tmp_dir = tmp_dir
        self.spec = artifact.spec
        self.labels = artifact.labels
        self.input_name = artifact.input_name
        self.output_name = artifact.output_name
        self.truth = [str(label) for _, label in data.validation]
        self.data = data
        self.threads = threads
        self.latency_runs = latency_runs
        self.resized: dict[int, onnx.ModelProto | ResizeError] = {}
        self.quantizers: dict = {}  # input size (or ("one_view", size)) -> Quantizer
        self.one_views: dict[int, onnx.ModelProto] = {}
        self.answers: dict[str, Any] = {}  # candidate name -> its answers on the judging images
        self.folds = 0  # judged as given; else across this many folds (plan_folds)
        self.fold_of = np.zeros(len(self.truth), int)
        self.base_features: np.ndarray | None = None
        self.base_heads: dict[int, list] = {}  # fold -> the original's head fitted without it
        self.refit_features: tuple | None = None  # (graph, features) of the last head re-fitted
        self.variants: dict[tuple[str, int], onnx.ModelProto] = {}  # (variant, size) -> the judge's copy
        self.card_changes: dict[str, dict] = {}  # candidate name -> card fields its judge changed

    def graph(self, size: int) -> onnx.ModelProto:
        if size == self.spec.size:
            return self.base
        if size not in self.resized:
            try:
                self.resized[size] = resize_input(
                    self.base, size, input_name=self.input_name, original_size=self.spec.size
                )
            except ResizeError as exc:
                views = list(self.card.get("views") or [])
                if len(views) > 1 and "views/" in str(exc):  # e.g. a zoom's resize matrices
                    exc = ResizeError(
                        f"its {' and '.join(views[1:])} view is made for {self.spec.size} px photos "
                        "(its one-pass copies can be smaller)"
                    )
                self.resized[size] = exc
        resized = self.resized[size]
        if isinstance(resized, ResizeError):
            raise resized
        return resized

    def build(self, candidate: Candidate, size: int) -> bytes:
        if candidate.refit:
            return self.refit(self.build(replace(candidate, refit=False), size), size)
        if candidate.one_view:
            return self.build_one_view(candidate, size)
        graph = self.variant_graph(candidate.variant, size)
        if not candidate.quant:
            return graph.SerializeToString()
        key = (size, candidate.variant) if candidate.variant else size
        return self.quantized(key, graph, size, candidate)

    def quantized(self, key, graph: onnx.ModelProto, size: int, candidate: Candidate) -> bytes:
        """``graph`` quantized as ``candidate`` says, by the quantizer kept under ``key`` (calibrated
        once, on the calibration images at ``size``, in the predictor's batches)."""
        if key not in self.quantizers:
            self.quantizers[key] = Quantizer(
                graph,
                self.data.feeds("calibration", size),
                input_name=self.input_name,
                tmp_dir=self.tmp_dir,
                batch_size=self.data.batch(size),
            )
        return self.quantizers[key].quantize(candidate.quant, candidate.per_channel, candidate.keep_first)

    def variant_graph(self, variant: str, size: int) -> onnx.ModelProto:
        """The float graph at ``size``, made into the judge's ``variant`` (``metric.variants``) if named."""
        if not variant:
            return self.graph(size)
        if (variant, size) not in self.variants:
            transform = (getattr(self.metric, "variants", None) or {}).get(variant)
            if transform is None:
                raise ResizeError(f"this model has no copy called {variant!r}")
            self.variants[(variant, size)] = transform(self.graph(size))
        return self.variants[(variant, size)]

    def build_one_view(self, candidate: Candidate, size: int) -> bytes:
        """``candidate`` without its one-view part, quantized (if so) after the other views were cut."""
        if size not in self.one_views:
            # views cut first: a view built for the original size (a zoom's resize matrices) would
            # keep the whole graph from running at another
            graph = one_view(self.base)
            if size != self.spec.size:
                graph = resize_input(graph, size, input_name=self.input_name, original_size=self.spec.size)
            self.one_views[size] = graph
        graph = self.one_views[size]
        if not candidate.quant:
            return graph.SerializeToString()
        return self.quantized(("one_view", size), graph, size, candidate)

    def plan_folds(self, folds: int) -> None:
        """Deal the judging images into ``folds`` folds, class by class in a seeded order, so that
        every fold's complement holds every class (fewer folds when a class has fewer images; none,
        i.e. judged as given, below 2)."""
        self.fold_of, self.folds = deal_folds(self.truth, self.labels, folds)

    def features(self, model: onnx.ModelProto, kind: str, size: int) -> np.ndarray:
        """The rows the head of ``model`` reads for the ``kind`` images (a model with V views: V * N
        rows, view after view)."""
        blob, feature = with_features(model)
        session = create_session(blob, device="cpu", threads=self.threads[-1], spin=False)
        return rows_view_after_view(
            session, feature, self.input_name, self.data.get(kind, size), self.data.batch(size)
        )

    def fit_head(self, X: np.ndarray, labels: list[str]) -> list:
        """The initializers of a head re-fitted on features ``X`` of images labelled ``labels``."""
        return fitted_head(self.refit_head, X, labels, self.labels, self.base, self.output_name)

    with_head = staticmethod(with_head)

    def refit(self, blob: bytes, size: int) -> bytes:
        """``blob`` with its head's weights re-fitted on its own features of the training images."""
        model = onnx.load_from_string(blob)
        labels = [label for _, label in self.data.training]
        X = self.features(model, "training", size)
        self.refit_features = (blob, X)  # the same backbone's features, for judging it across folds
        return self.with_head(model, self.fit_head(X, labels))

    def across_folds(self, candidate: Candidate, blob: bytes, size: int) -> np.ndarray:
        """Whether each judging image is answered right by ``blob`` with a head fitted on the other
        folds: on its own features for a re-fitted candidate, else (the original's head) on the
        original's features."""
        model = onnx.load_from_string(blob)
        if candidate.refit:
            if self.refit_features is not None and self.data.same_images():
                X, cache = self.refit_features[1], None  # just computed by refit(), same backbone
            else:
                X, cache = self.features(model, "validation", size), None
        else:
            if self.base_features is None:
                self.base_features = self.features(self.base, "validation", self.spec.size)
            X, cache = self.base_features, self.base_heads
        views = len(X) // len(self.truth)
        feeds = self.data.feeds("validation", size)
        truth = np.array(self.truth)
        right = np.zeros(len(truth), bool)
        for fold in range(self.folds):
            judged = self.fold_of == fold
            if cache is not None and fold in cache:
                inits = cache[fold]
            else:
                inits = self.fit_head(X[np.tile(~judged, views)], list(truth[~judged]))
                if cache is not None:
                    cache[fold] = inits
            session = create_session(
                self.with_head(model, inits), device="cpu", threads=self.threads[-1], spin=False
            )
            probabilities = _run_all(
                session,
                self.input_name,
                self.output_name,
                {k: v[judged] for k, v in feeds.items()},
                self.data.batch(size),
            )
            right[judged] = np.array(self.labels)[np.argmax(probabilities, axis=1)] == truth[judged]
        return right

    def skipped(self, candidate: Candidate, reason: str) -> dict:
        """The result row of a candidate that is not measured."""
        row = self.empty_row(candidate)
        row["reason"], row["code"] = reason, "skipped"
        return row

    def empty_row(self, candidate: Candidate) -> dict:
        return {
            "name": candidate.name,
            "plain_name": candidate.plain_name(),
            "change": list(candidate.change(self.spec.size)),
            "input_size": candidate.size or self.spec.size,
            "quantization": candidate.quant,
            "per_channel": candidate.per_channel,
            "keep_first_float": candidate.keep_first,
            "size_bytes": None,
            "latency_ms": None,
            "latency_ms_1t": None,
            "latency_ms_by_threads": {},
            "latency_ms_by_runtime": {},
            "runtime": None,
            "accuracy": None,
            "kept": False,
            "reason": "",
            "code": "",
        }

    def run(self, candidate: Candidate) -> tuple[dict, bytes | None]:
        """The result row for ``candidate`` and its serialized graph (None when skipped or failed); its
        answers on the judging images are kept for the verdict (:meth:`loss_bounds`)."""
        size = candidate.size or self.spec.size
        row = self.empty_row(candidate)
        self.refit_features = None
        if candidate.refit and not self.data.training:
            row["reason"], row["code"] = "skipped: no training images to re-fit the head on", "skipped"
            return row, None
        if candidate.quant and not self.data.calibration:
            row["reason"], row["code"] = "skipped: no calibration images", "skipped"
            return row, None
        try:
            blob = self.build(candidate, size)
            row["size_bytes"] = len(blob)
            if self.folds:
                right = self.across_folds(candidate, blob, size)
                row["accuracy"], self.answers[candidate.name] = float(np.mean(right)), right
            elif getattr(self.metric, "fold_heads", None):
                row["accuracy"], self.answers[candidate.name] = self.score_by_fold_heads(blob, size)
            else:
                session = create_session(blob, device="cpu", threads=self.threads[-1], spin=False)
                row["accuracy"], self.answers[candidate.name] = self.score(
                    session, self.data.feeds("validation", size), size
                )
            adjust = getattr(self.metric, "adjust", None)  # a metric may fit the copy to its own answers
            if adjust is not None and candidate != Candidate():
                blob, self.card_changes[candidate.name] = adjust(blob)
                row["size_bytes"] = len(blob)
        except ResizeError as exc:
            row["reason"], row["code"] = f"skipped: {exc}", "skipped"
            return row, None
        except Exception as exc:  # one broken recipe must not end the search; it is reported
            log.exception("compression candidate %s failed", candidate.name)
            row["reason"] = (
                f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            )
            row["code"] = "failed"
            return row, None
        refusal = getattr(self.metric, "refusal", None)  # a metric may refuse a candidate for its own reason
        reason = refusal() if refusal is not None else ""
        if reason:
            row["reason"], row["code"] = reason, "less_accurate"
        return row, blob

    def score(self, session, feeds: dict, size: int) -> tuple[float, object]:
        """The validation metric of one candidate's session (accuracy unless a metric was given) and its
        answers: right or wrong per image, or the predictions the metric scored."""
        if self.metric is None:
            probabilities = _run_all(session, self.input_name, self.output_name, feeds, self.data.batch(size))
            right = np.array([self.labels[i] for i in np.argmax(probabilities, axis=1)]) == np.array(
                self.truth
            )
            return float(np.mean(right)), right
        predictions = _format_all(session, self.scored_output(size), feeds, self.data.batch(size))
        return float(self.metric(predictions, [t for _, t in self.data.validation])), predictions

    def scored_output(self, size: int):
        """The card's output reader at ``size``, keeping every score (its ``threshold`` at 0)."""
        output = output_for({**self.card, "preprocessing": replace(self.spec, size=size).to_dict()})
        if hasattr(output, "threshold"):
            output.threshold = 0.0
        return output

    def score_by_fold_heads(self, blob: bytes, size: int) -> tuple[float, list]:
        """The metric of ``blob`` with the metric's own heads fitted across folds of the judging
        images (``metric.fold_of``, each image's fold; ``metric.fold_heads``, per fold the head's
        initializers fitted without it, put in place of the graph's of the same name): each image
        answered by the head of its fold on this copy's own features, then scored all together."""
        model = onnx.load_from_string(blob)
        feeds = self.data.feeds("validation", size)
        fold_of = np.asarray(self.metric.fold_of)
        output = self.scored_output(size)
        predictions: list = [None] * len(fold_of)
        for fold, inits in enumerate(self.metric.fold_heads):
            judged = np.flatnonzero(fold_of == fold)
            session = create_session(
                self.with_head(model, inits), device="cpu", threads=self.threads[-1], spin=False
            )
            answers = _format_all(
                session, output, {k: v[judged] for k, v in feeds.items()}, self.data.batch(size)
            )
            for i, answer in zip(judged, answers):
                predictions[i] = answer
        return float(self.metric(predictions, [t for _, t in self.data.validation])), predictions

    def loss_bounds(self) -> dict:
        """``name -> bound(confidence)`` of each measured candidate's loss against the original, paired on
        the same images: the score bound for right/wrong answers, a paired bootstrap for a metric
        (its pure ``score`` when it has one: the judge's call also records the original's boxes)."""
        reference = self.answers.get(Candidate().name)
        if self.metric is None:
            return {
                name: (lambda level, answers=answers: paired_loss_bound(reference, answers, level))
                for name, answers in self.answers.items()
            }
        metric = getattr(self.metric, "score", self.metric)
        targets = [t for _, t in self.data.validation]

        def bound(answers, level: float) -> float:
            assert reference is not None  # judge() asks for a bound only once the original was measured
            return bootstrap_loss_bound(metric, reference, answers, targets, level)

        return {
            name: (lambda level, answers=answers: bound(answers, level))
            for name, answers in self.answers.items()
        }

    def time_all(self, results: list[dict], models: dict) -> None:
        """Latency of every built candidate, all interleaved, at each thread count and, above one thread,
        with each runtime (:data:`runtime.RUNTIMES`); a row keeps its fastest runtime at the largest
        thread count, and the fp32 reference gets the same choice, so speed-ups compare best with best."""
        rows = {row["name"]: row for row in results}
        samples = {}
        for _, size, _ in models.values():
            if size not in samples:
                samples[size] = _batch_of(self.data.feeds("validation", size), LATENCY_BATCH)
        for t in self.threads:
            runs = {}
            for name, (blob, size, _) in models.items():
                batch = self.data.batch(size)  # a large detector runs fewer photos at a time
                # a batch of one is not split: the split runtime would time the plain session again
                for runtime in RUNTIMES if t > 1 and batch > 1 else RUNTIMES[:1]:
                    session = create_runtime_session(blob, runtime, device="cpu", threads=t)
                    if runtime == "onnxruntime" or isinstance(
                        session, SplitBatchSession
                    ):  # else: not splittable
                        if batch < LATENCY_BATCH:
                            session = _InBatches(session, batch)
                        runs[(name, runtime)] = (session, self.output_name, samples[size])
            for (name, runtime), ms in time_interleaved(runs, rounds=self.latency_runs).items():
                rows[name]["latency_ms_by_runtime"].setdefault(runtime, {})[str(t)] = round(ms, 4)
            for session, _, _ in runs.values():
                getattr(session, "close", lambda: None)()
        top = str(self.threads[-1])
        for row in results:
            by_runtime = row["latency_ms_by_runtime"]
            if not by_runtime:
                continue
            row["runtime"] = min(by_runtime, key=lambda r: by_runtime[r].get(top, float("inf")))
            for t in map(str, self.threads):
                row["latency_ms_by_threads"][t] = by_runtime[row["runtime"]].get(
                    t, by_runtime["onnxruntime"][t]
                )
            row["latency_ms"] = row["latency_ms_by_threads"][top]
            row["latency_ms_1t"] = row["latency_ms_by_threads"].get("1")

    def close(self) -> None:
        for quantizer in self.quantizers.values():
            quantizer.close()


def _words(row: dict, fp32: dict) -> str:
    """ "8-bit, 160 px, head re-fitted: 3.6x faster, 0.4 points less accurate" """
    recipe = parse_candidate(row["name"]).describe()
    if row.get("runtime") == "onnxruntime-split":
        recipe += ", one image per thread"
    if row["accuracy"] is None or not row["latency_ms"] or row is fp32:
        return recipe
    speed = fp32["latency_ms"] / row["latency_ms"]
    points = (fp32["accuracy"] - row["accuracy"]) * 100
    change = (
        "as accurate"
        if abs(points) < 0.05
        else f"{points:.1f} points less accurate"
        if points > 0
        else f"{-points:.1f} points more accurate"
    )
    return f"{recipe}: {speed:.1f}x {'faster' if speed >= 1 else 'slower'}, {change}"


def claim_keys(decision: dict) -> dict:
    """The verdict's keys of an export's result and the kept copy's card."""
    return {
        "loss_bound": decision["loss_bound"],
        "confidence": decision["confidence"],
        "loss_limit": decision["loss_limit"],
        "judged_examples": decision["examples"],
        "claim": decision["claim"],
    }


def _save(
    artifact, out_dir, results, models, decision: dict, n_calibration: int, folds: int, card_changes=None
) -> dict:
    """Save the kept candidate of ``decision`` (``deploy.verdict.judge``) and describe the result;
    ``card_changes``: candidate name -> card fields its judge changed (``metric.adjust``)."""
    spec = artifact.spec
    fp32, best = results[0], decision["chosen"]
    for row in results:
        row["words"] = _words(row, fp32)
    blob, size, candidate = models[best["name"]]
    card = dict(artifact.card)
    card.update((card_changes or {}).get(best["name"], {}))
    if candidate.one_view and "test_views" in card:  # a detector's training views stay what they were
        card["test_views"] = list(card["test_views"])[:1]
    elif candidate.one_view:
        card["views"] = list(card.get("views") or ["identity"])[:1]
    card.update(
        {
            "id": new_model_id(),
            "preprocessing": replace(spec, size=size).to_dict(),
            "runtime": {"name": best["runtime"] or "onnxruntime"},
            "warnings": list(card.get("warnings", [])),
            "compression": {
                "source_id": artifact.id,
                "chosen": best["name"],
                "quantization": candidate.quant,
                "per_channel": candidate.per_channel,
                "keep_first_float": candidate.keep_first,
                "input_size": size,
                "head_refitted": candidate.refit,
                "one_view": candidate.one_view,
                "words": best["words"],
                "activations": "uint8" if candidate.quant else "float32",
                "weights": "int8" if candidate.quant else "float32",
                "accuracy_fp32": fp32["accuracy"],
                "accuracy": best["accuracy"],
                "latency_ms": best["latency_ms"],
                "latency_ms_fp32": fp32["latency_ms"],
                "runtime": best["runtime"],
                "runtime_fp32": fp32["runtime"],
                "validation_images": decision["examples"],
                "folds": folds,
                "calibration_images": n_calibration,
                **claim_keys(decision),
            },
        }
    )
    path = save_artifact(Path(out_dir), blob, card)
    return {
        "path": str(path),
        "size_bytes": load_artifact(path).size_bytes(),
        "candidates": results,
        "chosen": best["name"],
        "chosen_words": candidate.describe(),
        "accuracy_fp32": fp32["accuracy"],
        "accuracy_compressed": best["accuracy"],
        "speedup": round(fp32["latency_ms"] / best["latency_ms"], 3),
        "speedup_by_threads": {
            t: round(fp32["latency_ms_by_threads"][t] / ms, 3)
            for t, ms in best["latency_ms_by_threads"].items()
        },
        "reason": best["reason"],
        "words": best["words"],
        "runtime": best["runtime"],
        "folds": folds,
        **claim_keys(decision),
    }
