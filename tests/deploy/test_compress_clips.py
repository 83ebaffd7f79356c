"""Compression of a sound model (``deploy.compress_clips``): the same verdict and the same keys as the
image path, latency per clip at every thread count asked for."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from modeldesk.deploy import compress_artifact
from modeldesk.deploy.artifact import save_artifact
from modeldesk.deploy.audio_input import SAMPLE_RATE, AudioSpec, wav_bytes

LABELS = ["low", "high"]
FREQUENCIES = {"low": 300.0, "high": 2400.0}


def _sound_model() -> onnx.ModelProto:
    """waveform (1, T) -> a bank of 1-D convolutions (the part int8 quantizes) -> mean energy -> 2 classes:
    filter 0 passes the low tone, filter 1 the high one."""
    t = np.arange(64) / SAMPLE_RATE
    window = np.hanning(64)
    bank = np.zeros((8, 1, 64), np.float32)
    for k, freq in enumerate(FREQUENCIES.values()):
        bank[k, 0] = window * np.sin(2 * np.pi * freq * t)
    bank[2:, 0] = np.random.default_rng(0).normal(0, 0.05, (6, 64))
    head = np.zeros((2, 8), np.float32)
    head[0, 0], head[1, 1] = 40.0, 40.0
    inits = [
        numpy_helper.from_array(bank, "bank"),
        numpy_helper.from_array(np.zeros(8, np.float32), "bank_bias"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(head, "head/w"),
        numpy_helper.from_array(np.zeros(2, np.float32), "head/b"),
    ]
    nodes = [
        helper.make_node("Unsqueeze", ["waveform", "axis1"], ["wave3"]),
        helper.make_node(
            "Conv", ["wave3", "bank", "bank_bias"], ["filtered"], kernel_shape=[64], strides=[16]
        ),
        helper.make_node("Relu", ["filtered"], ["energy"]),
        helper.make_node("GlobalAveragePool", ["energy"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["features"]),
        helper.make_node("Gemm", ["features", "head/w", "head/b"], ["logits"], transB=1, name="head/gemm"),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1, name="head/softmax"),
    ]
    graph = helper.make_graph(
        nodes,
        "tones",
        [helper.make_tensor_value_info("waveform", TensorProto.FLOAT, [1, "samples"])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 2])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def tones(tmp_path):
    """A sound model's artifact and labeled tone clips (1 s, 16 kHz, a little noise)."""
    card = {
        "task": "sound-classification",
        "target": "label",
        "labels": LABELS,
        "preprocessing": AudioSpec().to_dict(),
        "input_name": "waveform",
        "output_name": "probabilities",
    }
    artifact = save_artifact(tmp_path / "model", _sound_model(), card)
    rng = np.random.default_rng(1)
    clips = []
    for i in range(12):
        label = LABELS[i % 2]
        t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
        wave = 0.5 * np.sin(2 * np.pi * FREQUENCIES[label] * t) + rng.normal(0, 0.02, SAMPLE_RATE)
        path = tmp_path / f"{label}{i}.wav"
        path.write_bytes(wav_bytes(wave.astype(np.float32)))
        clips.append((path, label))
    return artifact, clips


def test_a_sound_model_is_timed_at_each_thread_count_and_states_its_bound(tones, tmp_path):
    artifact, clips = tones
    result = compress_artifact(
        artifact,
        tmp_path / "small",
        calibration=[p for p, _ in clips[:6]],
        validation=clips,
        threads=(1, 2),
        latency_runs=3,
    )
    rows = {row["name"]: row for row in result["candidates"]}
    assert set(rows) == {"fp32", "int8-qdq-perchannel"}
    assert rows["fp32"]["accuracy"] == 1.0  # the stand-in really tells the tones apart
    for row in rows.values():  # timed interleaved, at 1 and 2 threads, as the image path reports it
        assert set(row["latency_ms_by_threads"]) == {"1", "2"} and row["latency_ms"] > 0
        assert row["latency_ms"] == row["latency_ms_by_threads"]["2"]
    assert set(result["speedup_by_threads"]) == {"1", "2"}
    # what export --compress --json and the Deploy page state for every task
    assert result["judged_examples"] == 12 and 0 < result["confidence"] <= 0.95
    assert result["loss_bound"] >= 0 and result["loss_limit"] >= 1
    assert "12 clips" in result["claim"]


#: One tone per clip, 600 Hz apart: the model's features tell the clips apart, one filter each.
CLIP_TONES = [400.0 + 600.0 * k for k in range(12)]


class MemorisingHead:
    """A linear head that knows its training clips by heart (a large logit for each one's class, from
    the filter that is its own) and answers ``low`` for every clip it never saw (a bias): right on
    every clip it was fitted on, right only on the ``low`` ones elsewhere."""

    def fit(self, X, y):
        W = np.zeros((2, X.shape[1]), np.float32)
        for row, label in zip(X, y):
            W[label] += 10.0 * row / float(row @ row)
        self.W = W
        return self

    def to_onnx(self, input_name, output_name, prefix):
        bias = np.array([3.0, 0.0], np.float32)
        return [], [
            numpy_helper.from_array(self.W, prefix + "w"),
            numpy_helper.from_array(bias, prefix + "b"),
        ]


def _memorising_model(head: MemorisingHead) -> onnx.ModelProto:
    """:func:`_sound_model` with one filter per clip's tone and ``head``'s weights."""
    model = _sound_model()
    t = np.arange(64) / SAMPLE_RATE
    bank = np.stack([np.hanning(64) * np.sin(2 * np.pi * f * t) for f in CLIP_TONES])[:, None].astype(
        np.float32
    )
    _, inits = head.to_onnx("features", "probabilities", "head/")
    replaced = {"bank": bank, "bank_bias": np.zeros(len(CLIP_TONES), np.float32)}
    replaced.update({init.name: numpy_helper.to_array(init) for init in inits})
    for init in model.graph.initializer:
        if init.name in replaced:
            init.CopyFrom(numpy_helper.from_array(replaced[init.name], init.name))
    return model


def test_each_clip_is_judged_by_a_head_that_was_not_fitted_on_it(tmp_path):
    """Judged by its own head on the clips it was fitted on, a memorising model scores 100% and a copy
    of it could only look as good; across folds every clip is answered by a head fitted without it."""
    rng = np.random.default_rng(2)
    clips, waves = [], []
    for k, freq in enumerate(CLIP_TONES):
        t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
        waves.append(0.5 * np.sin(2 * np.pi * freq * t) + rng.normal(0, 0.01, SAMPLE_RATE))
        path = tmp_path / f"clip{k}.wav"
        path.write_bytes(wav_bytes(waves[-1].astype(np.float32)))
        clips.append((path, LABELS[k % 2]))
    # the original's head memorised every clip: the features are each clip's filter energies
    fitted = {"n": 0}

    def refit_head(X, y):
        fitted["n"] += 1
        assert len(X) < len(clips)  # never fitted on every judging clip
        return MemorisingHead().fit(X, y)

    bank = _memorising_model(MemorisingHead().fit(np.eye(12, dtype=np.float32), np.arange(12) % 2))
    card = {
        "task": "sound-classification",
        "target": "label",
        "labels": LABELS,
        "preprocessing": AudioSpec().to_dict(),
        "input_name": "waveform",
        "output_name": "probabilities",
        "head": {"kind": "logistic"},
    }
    artifact = save_artifact(tmp_path / "model", bank, card)
    result = compress_artifact(
        artifact,
        tmp_path / "small",
        calibration=[p for p, _ in clips[:6]],
        validation=clips,
        threads=(1,),
        latency_runs=2,
        refit_head=refit_head,
    )
    rows = {row["name"]: row for row in result["candidates"]}
    # a head fitted without the clip answers "low": right on the six low clips only, fp32 and int8 alike
    # (judged by the model's own head, both score 1.0)
    assert rows["fp32"]["accuracy"] == 0.5
    assert rows["int8-qdq-perchannel"]["accuracy"] == 0.5
    assert result["folds"] == 5 and fitted["n"] == 5  # heads of the original's features, one per fold
    assert result["judged_examples"] == 12
