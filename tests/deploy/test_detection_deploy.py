"""A detector through the deploy layer: predictor, service (hostile requests too) and bundle.

The stand-in detector is the real export's decoding and NonMaxSuppression tail on a trivial
"backbone" (16 x 16 average pooling of the letterboxed image): a cell is "red" by how red it is,
and every cell proposes a 32 x 32 box around its centre.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from PIL import Image
from starlette.testclient import TestClient

from modeldesk.deploy import Predictor, build_bundle, load_artifact, save_artifact
from modeldesk.deploy.bundle import bundled_modules
from modeldesk.deploy.openapi import openapi_document
from modeldesk.deploy.preprocess import ImageSpec
from modeldesk.deploy.service import create_app
from modeldesk.trainers.detection.features import CELLS, DetectionNeck
from modeldesk.trainers.detection.graph import SIZE_INPUT, decode_nodes

NECK = DetectionNeck(size=64, stride=16, levels=("stride16",), context=0, global_context=False)


class _RednessHead:
    """Logit 12 * (red - (green + blue) / 2 - 0.3) on normalised pixels; sides log(1): 16 px each way."""

    def folded(self):
        weight = np.zeros((5, 3), np.float32)
        weight[0] = [12.0, -6.0, -6.0]
        return weight, np.array([-3.6, 0, 0, 0, 0], np.float32)


def build_standin_detector() -> onnx.ModelProto:
    pool = helper.make_node("AveragePool", ["image"], [CELLS], kernel_shape=[16, 16], strides=[16, 16])
    nodes, inits = decode_nodes(NECK, 1, *_RednessHead().folded())
    graph = helper.make_graph(
        [pool, *nodes],
        "standin_detector",
        [
            helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 64, 64]),
            helper.make_tensor_value_info(SIZE_INPUT, TensorProto.FLOAT, ["N", 2]),
        ],
        [
            helper.make_tensor_value_info("detections", TensorProto.FLOAT, ["K", 7]),
            helper.make_tensor_value_info("sizes", TensorProto.FLOAT, ["N", 2]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    card = {
        "task": "object-detection",
        "target": "boxes",
        "labels": ["red"],
        "score_threshold": 0.5,
        "preprocessing": ImageSpec(size=64, resize="letterbox").to_dict(),
        "size_input": SIZE_INPUT,
        "output_name": "detections",
        "sizes_output": "sizes",
        "metrics": {"map50": 0.9, "map": 0.5},
    }
    return save_artifact(tmp_path_factory.mktemp("det") / "detector", build_standin_detector(), card)


def red_square_png(size=(128, 96), square=(40, 40, 72, 72)) -> bytes:
    image = Image.new("RGB", size, (127, 127, 127))
    image.paste((230, 20, 20), square)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_boxes_come_back_in_original_pixels(detector, tmp_path):
    path = tmp_path / "red.png"
    path.write_bytes(red_square_png())
    (prediction,) = Predictor(detector).predict([path])
    assert prediction["label"] == "red" and prediction["boxes"]
    x0, y0, x1, y1 = prediction["boxes"][0]["box"]
    # the 128 px wide photo is letterboxed at half scale: a 32 px letterbox box is 64 px here
    assert x1 - x0 == pytest.approx(64, abs=0.5) and y1 - y0 == pytest.approx(64, abs=0.5)
    assert 0 <= x0 < 56 < 72 < x1 <= 128 and 0 <= y0 < 56 < 72 < y1 <= 96
    empty = tmp_path / "gray.png"
    Image.new("RGB", (50, 90), (127, 127, 127)).save(empty)
    (nothing,) = Predictor(detector).predict([empty])
    assert nothing["boxes"] == [] and nothing["label"] is None


def test_the_output_threshold_can_be_moved(detector, tmp_path):
    path = tmp_path / "red.png"
    path.write_bytes(red_square_png())
    predictor = Predictor(detector)
    strict = len(predictor.predict([path])[0]["boxes"])
    predictor.output.threshold = 0.0
    assert len(predictor.predict([path])[0]["boxes"]) >= strict


def test_service_returns_boxes_and_documents_them(detector):
    with TestClient(create_app(detector), base_url="http://127.0.0.1") as client:
        response = client.post("/v1/predict", files={"file": ("red.png", red_square_png(), "image/png")})
        assert response.status_code == 200, response.text
        boxes = response.json()["predictions"][0]["boxes"]
        assert boxes and set(boxes[0]) == {"label", "score", "box"}
    schema = openapi_document(load_artifact(detector).card)["paths"]["/v1/predict"]["post"]["responses"][
        "200"
    ]
    item = schema["content"]["application/json"]["schema"]["properties"]["predictions"]["items"]
    assert "boxes" in item["properties"]


HOSTILE = {
    "not an image": dict(files={"file": ("x.png", b"hello", "image/png")}),
    "truncated": dict(files={"file": ("t.png", red_square_png()[:60], "image/png")}),
    "bad base64": dict(json={"image": "***"}),
    "wrong json": dict(json={"images": "nope"}),
    "empty body": dict(content=b"", headers={"content-type": "image/png"}),
    "wrong type": dict(content=b"abc", headers={"content-type": "text/plain"}),
    "too many": dict(json={"images": ["aGk="] * 500}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_requests_to_a_detector_get_a_4xx(detector, name):
    with TestClient(create_app(detector), base_url="http://127.0.0.1") as client:
        response = client.post("/v1/predict", **HOSTILE[name])
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert response.json()["error"]


def test_bundle_serves_the_same_boxes(detector, tmp_path):
    assert "boxes_output.py" in bundled_modules()
    bundle = build_bundle(detector, tmp_path / "bundle")
    image = tmp_path / "red.png"
    image.write_bytes(red_square_png())
    code = (
        "import json, sys; from modeldesk_server.predictor import Predictor; "
        "print(json.dumps(Predictor('model').predict([sys.argv[1]])))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(image)],
        cwd=bundle,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps(Predictor(detector).predict([image])))
