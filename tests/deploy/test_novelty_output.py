"""A card's ``novelty`` output reaches the predictor, the service's JSON, its OpenAPI document and the
console as ``sure``/``familiarity``, beside the keys clients already read; models without it are unchanged."""

from __future__ import annotations

import io

import numpy as np
import onnx
from onnx import helper
from PIL import Image
from starlette.testclient import TestClient

from modeldesk.deploy import Predictor, create_app
from modeldesk.deploy.artifact import save_artifact

LOCAL = "http://127.0.0.1:8000"


def grey_image() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (80, 80), (128, 128, 128)).save(buffer, format="PNG")
    return buffer.getvalue()


def with_familiarity(model: onnx.ModelProto) -> onnx.ModelProto:
    """The stand-in plus a ``familiarity`` (N,) output: its top probability (a stand-in for the real signal)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    model.graph.node.append(
        helper.make_node("ReduceMax", ["probabilities"], ["familiarity"], axes=[1], keepdims=0)
    )
    model.graph.output.append(helper.make_tensor_value_info("familiarity", onnx.TensorProto.FLOAT, ["N"]))
    onnx.checker.check_model(model)
    return model


def test_unfamiliar_inputs_are_not_sure_in_the_predictor_the_json_and_the_docs(tmp_path, deploy_helpers):
    blue, grey = deploy_helpers.color_image_bytes("blue", 3), grey_image()
    plain = save_artifact(
        tmp_path / "plain", deploy_helpers.build_standin_model(), deploy_helpers.standin_card()
    )
    before = Predictor(plain, device="cpu").predict([blue, grey])
    assert "sure" not in before[0] and "familiarity" not in before[0]  # a model without the signal: as before
    threshold = (before[0]["score"] + before[1]["score"]) / 2
    assert before[1]["score"] < threshold < before[0]["score"]
    card = deploy_helpers.standin_card(novelty={"output": "familiarity", "threshold": threshold})
    artifact = save_artifact(tmp_path / "novel", with_familiarity(deploy_helpers.build_standin_model()), card)
    sure, unsure = Predictor(artifact, device="cpu").predict([blue, grey])
    assert sure["sure"] is True and unsure["sure"] is False
    assert unsure["familiarity"] < threshold <= sure["familiarity"]
    with TestClient(create_app(artifact, threads=1), raise_server_exceptions=False, base_url=LOCAL) as client:
        response = client.post(
            "/v1/predict",
            files=[("file", ("b.png", blue, "image/png")), ("file", ("g.png", grey, "image/png"))],
        )
        assert response.status_code == 200, response.text
        first, second = response.json()["predictions"]
        for prediction in (first, second):  # DESIGN.md's keys stay, the signal is added
            assert {"label", "score", "scores", "sure", "familiarity"} <= set(prediction)
        assert first["sure"] is True and second["sure"] is False
        schema = client.get("/openapi.json").text
        assert '"sure"' in schema and '"familiarity"' in schema
        assert client.get("/v1/model").json()["novelty"]["output"] == "familiarity"
        page = client.get("/").text
        assert "Not sure" in page and "prediction.sure === false" in page  # the console says it too


def test_a_non_finite_familiarity_counts_as_not_sure(deploy_helpers):
    from modeldesk.deploy.outputs import LabelOutput

    output = LabelOutput(deploy_helpers.standin_card(novelty={"output": "familiarity", "threshold": 0.0}))
    assert output.names == ["probabilities", "familiarity"]
    (result,) = output.format([np.array([[0.1, 0.8, 0.1]], np.float32), np.array([np.nan], np.float32)])
    assert result["sure"] is False and result["label"] == "green"
