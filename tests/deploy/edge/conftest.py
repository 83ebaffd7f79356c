"""Edge server fixtures: a sound and a text model, a video made with PyAV, a server on a folder.

The image model is the deploy tests' stand-in (tests/deploy/conftest.py: a mostly red picture is
"red"); the sound model says "loud" or "quiet" from a clip's energy; the text model is trained by
the fast text template on a few sentences, as tests/deploy/test_text_service.py does.
"""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from starlette.testclient import TestClient

from modeldesk.deploy.artifact import load_artifact, save_artifact

LOCAL = "http://127.0.0.1:8765"
RED, BLUE = (200, 40, 40), (40, 60, 200)


def build_loudness_model() -> onnx.ModelProto:
    """(1, samples) waveform -> softmax over ["quiet", "loud"] from the mean square of the samples."""
    nodes = [
        helper.make_node("Mul", ["audio", "audio"], ["squared"]),
        helper.make_node("ReduceMean", ["squared"], ["energy"], axes=[1], keepdims=1),
        helper.make_node("MatMul", ["energy", "w"], ["scaled"]),
        helper.make_node("Add", ["scaled", "b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "loudness",
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, "samples"])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 2])],
        [
            numpy_helper.from_array(np.array([[-200.0, 200.0]], np.float32), "w"),
            numpy_helper.from_array(np.array([2.0, -2.0], np.float32), "b"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="session")
def sound_artifact(tmp_path_factory):
    from modeldesk.deploy.audio_input import AudioSpec

    card = {
        "task": "sound-classification",
        "labels": ["quiet", "loud"],
        "preprocessing": AudioSpec().to_dict(),
        "input_name": "audio",
        "template": "loudness",
        "metrics": {},
    }
    return save_artifact(tmp_path_factory.mktemp("sound") / "loudness", build_loudness_model(), card)


@pytest.fixture(scope="session")
def text_artifact(tmp_path_factory):
    from modeldesk.trainers.data import LabeledSample
    from modeldesk.trainers.tasks import get_trainer

    data = {
        "good": ["great food, fast", "lovely and fresh", "tasty and warm", "very good, will order again"],
        "bad": ["cold and late", "terrible, refund", "awful taste", "late and rude, never again"],
    }
    samples = [
        LabeledSample(hashlib.sha256(t.encode()).hexdigest(), t, label, "train")
        for label, texts in data.items()
        for t in texts
    ]
    root = tmp_path_factory.mktemp("text")
    result = get_trainer("text-classification").train(
        samples, "text-classification/fast", root / "m", root / "c"
    )
    return load_artifact(result.artifact_dir).path


def tone_wav(amplitude: float, seconds: float = 1.0) -> bytes:
    from modeldesk.deploy.audio_input import wav_bytes

    t = np.arange(int(16000 * seconds)) / 16000.0
    return wav_bytes((amplitude * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 16000)


def write_video(path, colors, fps: int = 10, size=(96, 80)) -> str:
    """An MPEG-4 video of solid frames, one per colour in ``colors``."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        for color in colors:
            pixels = np.empty((size[1], size[0], 3), np.uint8)
            pixels[:] = color
            for packet in stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return str(path)


@pytest.fixture
def edge_factory(tmp_path):
    """``make(folder=None, **app_options) -> (server, client)``; everything made is closed after the test."""
    from modeldesk.deploy.edge.app import create_edge_app
    from modeldesk.deploy.edge.server import EdgeServer

    made = []

    def make(folder=None, *, base_url=LOCAL, server_options=None, **options):
        server = EdgeServer(folder or tmp_path / "edge", **(server_options or {}))
        client = TestClient(
            create_edge_app(server, **options), base_url=base_url, raise_server_exceptions=False
        )
        made.append(server)
        return server, client

    yield make
    for server in made:
        server.close()


@pytest.fixture(scope="session")
def edge_helpers():
    class Helpers:
        pass

    h = Helpers()
    h.tone_wav = staticmethod(tone_wav)
    h.write_video = staticmethod(write_video)
    h.RED, h.BLUE, h.LOCAL = RED, BLUE, LOCAL
    return h
