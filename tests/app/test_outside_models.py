"""An image classifier made elsewhere (built here with onnx.helper, as another tool would export it)
is imported, its pixel normalisation measured, evaluated, compressed, served and refused when broken."""

import json

import httpx
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from modeldesk.app.cli import main
from modeldesk.app.workspace import Workspace


def test_imported_classifier_is_measured_evaluated_compressed_and_served(
    tmp_path, outside_photos, outside_model
):
    onnx_path, labels = outside_model
    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("levels", "image-classification")
        ws.import_data("levels", outside_photos)
        result = ws.import_outside_model(onnx_path, labels, project="levels")
        tried = {row["normalisation"]: row["accuracy"] for row in result["tried"]}
        assert result["normalisation"] == "imagenet" and tried["imagenet"] == 1.0
        assert max(v for k, v in tried.items() if k != "imagenet") < 0.9  # the others are told apart
        assert result["metrics"]["accuracy"] == 1.0 and result["graph"]["layout"] == "NHWC"
        model = result["model"]
        assert [m["id"] for m in ws.list_models("levels")] == [model]
        answer = ws.predict(model, [str(outside_photos / "bright" / "bright0.png")])[0]
        assert answer["label"] == "bright" and answer["score"] > 0.5

        compressed = ws.export_model(model, tmp_path / "small", compress=True, bundle=False)
        assert compressed["candidates"] and compressed["accuracy_fp32"] == 1.0

        handle = ws.start_service(model)
        try:
            with open(outside_photos / "dark" / "dark3.png", "rb") as image:
                reply = httpx.post(
                    handle.url + "v1/predict", files={"file": ("dark3.png", image, "image/png")}
                )
            assert reply.status_code == 200 and reply.json()["predictions"][0]["label"] == "dark"
        finally:
            handle.stop()
    finally:
        ws.close()


def test_cli_imports_into_a_new_project_and_says_what_it_assumed(tmp_path, outside_model, capsys):
    onnx_path, labels = outside_model
    code = main(
        [
            "--workspace",
            str(tmp_path / "ws"),
            "model",
            "import",
            str(onnx_path),
            "--labels",
            str(labels),
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["project"] == "model" and result["normalisation"] == "imagenet"
    assert "ImageNet's was assumed" in result["warnings"][0]  # no labeled photos to measure it on


def test_the_wrapped_graph_answers_as_the_outside_graph_does(tmp_path, outside_photos, outside_kit):
    """Same probabilities as the outside graph run by hand on normalised pixels; a graph ending in a
    softmax gets no second one."""
    import onnxruntime as ort

    from modeldesk.deploy import Predictor
    from modeldesk.deploy.outside_onnx import inspect_onnx, save_outside_classifier
    from modeldesk.deploy.preprocess import ImageSpec, preprocess_image

    path = outside_kit.build(tmp_path / "m.onnx", layout="NCHW", softmax_inside=True)
    graph = inspect_onnx(path)
    assert graph.probabilities and graph.layout == "NCHW" and graph.size == 32
    folder = save_outside_classifier(
        graph, tmp_path / "art", outside_kit.labels, mean=outside_kit.imagenet[0], std=outside_kit.imagenet[1]
    )
    photo = str(outside_photos / "mid" / "mid0.png")
    scores = Predictor(folder).predict([photo])[0]["scores"]
    raw = preprocess_image(photo, ImageSpec(size=32, mean=0.0, std=1.0))[None]
    normalised = (
        (raw - outside_kit.imagenet[0].reshape(1, 3, 1, 1)) / outside_kit.imagenet[1].reshape(1, 3, 1, 1)
    ).astype(np.float32)
    expected = ort.InferenceSession(str(path)).run(None, {"input_1": normalised})[0][0]
    assert np.allclose([scores[label] for label in outside_kit.labels], expected, atol=1e-5)


@pytest.mark.parametrize(
    "broken, reason",
    [
        (b"not an onnx file", "not a valid ONNX model"),
        ("two_outputs", "the graph has 2 outputs (a, b)"),
        ("grey_input", "no 3-channel axis"),
    ],
)
def test_a_graph_it_cannot_run_is_refused_with_the_reason(tmp_path, outside_model, capsys, broken, reason):
    _, labels = outside_model
    path = tmp_path / "broken.onnx"
    if isinstance(broken, bytes):
        path.write_bytes(broken)
    else:
        channels = 1 if broken == "grey_input" else 3
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 8, 8])
        outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, channels, 8, 8]) for n in ("a", "b")]
        nodes = [helper.make_node("Identity", ["x"], ["a"]), helper.make_node("Identity", ["x"], ["b"])]
        kept = 2 if broken == "two_outputs" else 1
        graph = helper.make_graph(nodes[:kept], "g", [x], outs[:kept])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    code = main(["--workspace", str(tmp_path / "ws"), "model", "import", str(path), "--labels", str(labels)])
    err = capsys.readouterr().err
    assert code != 0 and reason in err and "broken.onnx" in err and "Traceback" not in err


def test_labels_that_do_not_match_the_graph_are_refused(tmp_path, outside_model):
    from modeldesk.errors import UserError

    onnx_path, _ = outside_model
    two = tmp_path / "two.txt"
    two.write_text("dark\nbright\n")
    ws = Workspace(tmp_path / "ws")
    try:
        with pytest.raises(UserError, match="scores 3 classes but the labels file has 2"):
            ws.import_outside_model(onnx_path, two)
        assert ws.list_projects() == []  # refused before anything was made
    finally:
        ws.close()
