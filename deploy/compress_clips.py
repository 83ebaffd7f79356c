"""Compression of models that take one item per run (sound clips): fp32 against static int8.

The int8 candidate quantizes the convolutions of the embedding network (uint8 activations, int8
weights per channel, QDQ), calibrated on training clips one at a time; the front end before it (the
spectrogram) and the head after it stay in float. Both candidates are measured here, on this machine:
milliseconds per clip (timed interleaved, at each thread count) and, clip by clip, right or wrong on
the judging clips. The verdict is the
one every task shares (``deploy.verdict.judge``): int8 is kept only when it is faster and the upper
bound of its loss against fp32 on the same clips is within ``max_loss`` (on a shared 2-core machine
int8 was measured no faster for the speech embedding, so fp32 is the usual, honest outcome).

With ``refit_head`` the clips are judged as photos are (``deploy.compress``): every labeled clip, each
answered, by fp32 and by int8 alike, through a head of the model's kind fitted on the original's
features of the other folds' clips, so that no clip judges a head that was fitted on it (a head judged
on its own training clips answers them with margins that hide what int8 changes).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)

from . import verdict
from .artifact import ModelArtifact, load_artifact, new_model_id, save_artifact
from .compress import (
    FOLDS,
    claim_keys,
    deal_folds,
    fitted_head,
    parse_candidate,
    time_interleaved,
    with_features,
    with_head,
)
from .inputs import input_for
from .runtime import create_session
from .verdict import CONFIDENCE, paired_loss_bound

log = logging.getLogger(__name__)

FLOAT_PREFIXES = ("mel/", "head/", "pool/")


class ItemReader(CalibrationDataReader):
    """Feeds prepared items to the calibrator one run at a time."""

    def __init__(self, input_name: str, model_input, items: list):
        self.feeds = [{input_name: model_input.collate([item])} for item in items]
        self._position = 0

    def get_next(self):
        if self._position >= len(self.feeds):
            return None
        self._position += 1
        return self.feeds[self._position - 1]

    def rewind(self):
        self._position = 0


def _int8(model_path: Path, reader: ItemReader, tmp: Path) -> bytes:
    model = onnx.load(str(model_path))
    keep = [n.name for n in model.graph.node if n.name.startswith(FLOAT_PREFIXES) or n.op_type != "Conv"]
    out = tmp / "int8.onnx"
    quantize_static(
        str(model_path),
        str(out),
        reader,
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        nodes_to_exclude=keep,
        extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
    )
    return out.read_bytes()


def _answers(blob: bytes, artifact: ModelArtifact, model_input, items, truth, threads: int) -> np.ndarray:
    """Right or wrong, clip by clip."""
    session = create_session(
        blob, device="cpu", threads=threads, spin=False
    )  # only answers: no busy-waiting on a shared machine
    name, output = artifact.input_name, artifact.output_name
    labels = artifact.labels
    predicted = [
        labels[int(np.argmax(session.run([output], {name: model_input.collate([x])})[0]))] for x in items
    ]
    return np.array([p == t for p, t in zip(predicted, truth)], bool)


class FoldHeads:
    """Heads of the model's kind fitted across folds of the judging clips on the original's features
    (``deploy.compress.deal_folds``): each clip is answered by the head fitted without its fold."""

    def __init__(self, artifact: ModelArtifact, model_input, items, truth, refit_head, threads: int):
        self.fold_of, self.folds = deal_folds(truth, artifact.labels, FOLDS)
        self.heads: list = []
        if not self.folds:
            return
        original = onnx.load_from_string(artifact.model_bytes())
        blob, feature = with_features(original)
        session = create_session(blob, device="cpu", threads=threads, spin=False)
        X = np.concatenate(
            [session.run([feature], {artifact.input_name: model_input.collate([x])})[0] for x in items]
        )
        truth = np.array(truth)
        for fold in range(self.folds):
            fitted = self.fold_of != fold
            self.heads.append(
                fitted_head(
                    refit_head,
                    X[fitted],
                    list(truth[fitted]),
                    artifact.labels,
                    original,
                    artifact.output_name,
                )
            )

    def answers(self, blob: bytes, artifact: ModelArtifact, model_input, items, truth, threads: int):
        """Right or wrong, clip by clip, each by ``blob`` with the head fitted without the clip's fold."""
        model = onnx.load_from_string(blob)
        right = np.zeros(len(items), bool)
        for fold, inits in enumerate(self.heads):
            judged = np.flatnonzero(self.fold_of == fold)
            right[judged] = _answers(
                with_head(model, inits),
                artifact,
                model_input,
                [items[i] for i in judged],
                [truth[i] for i in judged],
                threads,
            )
        return right


#: Clips each candidate is timed on (each its own median over the rounds; their mean is kept).
TIMED_CLIPS = 3


def _latencies(blobs: dict, artifact: ModelArtifact, model_input, items, threads, runs: int) -> dict:
    """``name -> {threads: ms per clip}``, every candidate timed interleaved with the others
    (``compress.time_interleaved``): timed one after the other, a busy moment on a shared machine
    made fp32 look 10x slower than int8 in one run and 1.5x in the next."""
    out: dict = {name: {} for name in blobs}
    sample = items[:TIMED_CLIPS]
    for t in threads:
        runs_by_key = {}
        for name, blob in blobs.items():
            session = create_session(blob, device="cpu", threads=t)
            for i, x in enumerate(sample):
                runs_by_key[(name, i)] = (
                    session,
                    artifact.output_name,
                    {artifact.input_name: model_input.collate([x])},
                )
        measured = time_interleaved(runs_by_key, rounds=runs)
        for name in blobs:
            ms = [measured[(name, i)] for i in range(len(sample))]
            out[name][str(t)] = round(float(np.mean(ms)), 4)
    return out


def compress_item_artifact(
    artifact,
    out_dir,
    *,
    calibration: list,
    validation: list,
    threads=(1, 2),
    max_loss: float = 0.01,
    candidates=None,
    progress=None,
    latency_runs: int = 10,
    confidence: float = CONFIDENCE,
    refit_head=None,
) -> dict:
    """Like :func:`deploy.compress.compress_artifact`, for inputs that run one item at a time.

    ``calibration``: training files; ``validation``: (file, label) pairs; ``refit_head(X, y) -> head``:
    a head of the model's kind, to judge every clip by heads fitted across folds without it (give
    every labeled clip then: :class:`FoldHeads`); without it the clips are judged by the model's own
    head. Returns the same keys (``path``, ``size_bytes``, ``candidates``, ``chosen``,
    ``chosen_words``, ``accuracy_fp32``, ``accuracy_compressed``, ``speedup``, ``reason``,
    ``loss_bound``, ``confidence``, ``claim``, ``folds``...).
    """
    artifact = artifact if isinstance(artifact, ModelArtifact) else load_artifact(artifact)
    if not validation:
        raise ValueError("compression needs labelled validation clips to check accuracy")
    model_input = input_for(artifact.card)
    items = [model_input.load(path) for path, _ in validation]
    truth = [str(label) for _, label in validation]
    cal = [model_input.load(path) for path in list(calibration)[:64]]
    wanted = [
        c if isinstance(c, str) else getattr(c, "name", str(c))
        for c in (candidates or ["fp32", "int8-qdq-perchannel"])
    ]
    threads = tuple(sorted({int(t) for t in threads}))
    top = threads[-1]
    fold_heads = FoldHeads(artifact, model_input, items, truth, refit_head, top) if refit_head else None
    answer = fold_heads.answers if fold_heads and fold_heads.folds else _answers
    folds = fold_heads.folds if fold_heads else 0
    rows: list[dict] = []
    blobs: dict[str, bytes] = {}
    answers: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory(prefix="modeldesk-quant-") as tmp:
        for index, name in enumerate(["fp32"] + [c for c in wanted if c != "fp32"]):
            row = {
                "name": name,
                "quantization": None if name == "fp32" else "qdq",
                "size_bytes": None,
                "latency_ms": None,
                "latency_ms_1t": None,
                "latency_ms_by_threads": {},
                "accuracy": None,
                "kept": False,
                "reason": "",
                "code": "",
            }
            try:
                if name == "fp32":
                    blob = artifact.model_bytes()
                elif name == "int8-qdq-perchannel" and cal:
                    blob = _int8(
                        artifact.model_path, ItemReader(artifact.input_name, model_input, cal), Path(tmp)
                    )
                else:
                    row["reason"] = (
                        "skipped: not available for this kind of model"
                        if cal
                        else "skipped: no calibration clips"
                    )
                    row["code"] = "skipped"
                    blob = None
                if blob is not None:
                    row["size_bytes"] = len(blob)
                    answers[name] = answer(blob, artifact, model_input, items, truth, top)
                    row["accuracy"] = float(np.mean(answers[name]))
                    blobs[name] = blob
            except Exception as exc:  # one broken recipe must not end the search; it is reported
                log.exception("compression candidate %s failed", name)
                row["code"] = "failed"
                row["reason"] = (
                    f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                )
            row["plain_name"] = parse_candidate(name).plain_name()
            rows.append(row)
            if progress is not None:
                progress(index + 1, len(wanted) + ("fp32" not in wanted), row["plain_name"])
    for name, by_threads in _latencies(blobs, artifact, model_input, items, threads, latency_runs).items():
        row = next(r for r in rows if r["name"] == name)
        row["latency_ms_by_threads"], row["latency_ms"] = by_threads, by_threads[str(top)]
        row["latency_ms_1t"] = by_threads.get("1")
    fp32 = rows[0]
    bounds: dict[str, Callable[..., float]] = {
        name: (lambda level, mine=mine: paired_loss_bound(answers["fp32"], mine, level))
        for name, mine in answers.items()
    }
    decision = verdict.judge(
        rows,
        bounds,
        examples=len(items),
        max_loss=max_loss,
        confidence=confidence,
        noun="clips",
    )
    best = decision["chosen"]
    card = dict(artifact.card)
    card.update(
        {
            "id": new_model_id(),
            "warnings": list(card.get("warnings", [])),
            "compression": {
                "source_id": artifact.id,
                "chosen": best["name"],
                "quantization": best["quantization"],
                "accuracy_fp32": fp32["accuracy"],
                "accuracy": best["accuracy"],
                "latency_ms": best["latency_ms"],
                "latency_ms_fp32": fp32["latency_ms"],
                "validation_clips": len(items),
                "folds": folds,
                "calibration_clips": len(cal),
                **claim_keys(decision),
            },
        }
    )
    path = save_artifact(Path(out_dir), blobs[best["name"]], card)
    return {
        "path": str(path),
        "size_bytes": load_artifact(path).size_bytes(),
        "candidates": rows,
        "chosen": best["name"],
        "chosen_words": parse_candidate(best["name"]).describe(),
        "accuracy_fp32": fp32["accuracy"],
        "accuracy_compressed": best["accuracy"],
        "speedup": round(fp32["latency_ms"] / best["latency_ms"], 3),
        "speedup_by_threads": {
            t: round(fp32["latency_ms_by_threads"][t] / ms, 3)
            for t, ms in best["latency_ms_by_threads"].items()
        },
        "reason": best["reason"],
        "folds": folds,
        **claim_keys(decision),
    }
