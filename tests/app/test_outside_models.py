"""An image classifier made elsewhere (built here with onnx.helper, as another tool would export it)
is imported, its pixel normalisation measured, evaluated, compressed, served and refused when broken."""

import json

import httpx
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from modeldesk.app.cli import main
from modeldesk.app.workspace import Workspace

LABELS = ["dark", "mid", "bright"]
LEVELS = {"dark": 40, "mid": 128, "bright": 220}
IMAGENET = (np.array([123.675, 116.28, 103.53]), np.array([58.395, 57.12, 57.375]))


def brightness_classifier(path, *, layout="NHWC", size=32, softmax_inside=False):
    """dark / mid / bright by mean brightness, trained on ImageNet-normalised pixels: it answers
    right under that normalisation only (the class centres sit in normalised units)."""
    mean, std = IMAGENET
    centres = (np.array([40.0, 128.0, 220.0])[:, None] - mean) / std  # (class, channel)
    weights = (2 * centres / 3).T.astype(np.float32)  # -(x - c)^2 up to a term every class shares
    bias = (-(centres**2).sum(axis=1) / 3).astype(np.float32)
    shape = ["batch", size, size, 3] if layout == "NHWC" else ["batch", 3, size, size]
    nodes = (
        [helper.make_node("Transpose", ["input_1"], ["nchw"], perm=[0, 3, 1, 2])] if layout == "NHWC" else []
    )
    nodes += [
        helper.make_node("GlobalAveragePool", ["nchw" if layout == "NHWC" else "input_1"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "W", "b"], ["z" if softmax_inside else "scores"]),
    ]
    if softmax_inside:
        nodes.append(helper.make_node("Softmax", ["z"], ["scores"], axis=1))
    graph = helper.make_graph(
        nodes,
        "brightness",
        [helper.make_tensor_value_info("input_1", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 3])],
        initializer=[numpy_helper.from_array(weights, "W"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def photos(tmp_path):
    rng = np.random.default_rng(0)
    root = tmp_path / "photos"
    for label, level in LEVELS.items():
        (root / label).mkdir(parents=True)
        for i in range(8):
            pixels = np.clip(level + rng.normal(0, 8, (40 + i, 48, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / label / f"{label}{i}.png")
    return root


@pytest.fixture
def outside(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(LABELS) + "\n")
    return brightness_classifier(tmp_path / "model.onnx"), labels


def test_imported_classifier_is_measured_evaluated_compressed_and_served(tmp_path, photos, outside):
    onnx_path, labels = outside
    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("levels", "image-classification")
        ws.import_data("levels", photos)
        result = ws.import_outside_model(onnx_path, labels, project="levels")
        tried = {row["normalisation"]: row["accuracy"] for row in result["tried"]}
        assert result["normalisation"] == "imagenet" and tried["imagenet"] == 1.0
        assert max(v for k, v in tried.items() if k != "imagenet") < 0.9  # the others are told apart
        assert result["metrics"]["accuracy"] == 1.0 and result["graph"]["layout"] == "NHWC"
        model = result["model"]
        assert [m["id"] for m in ws.list_models("levels")] == [model]
        answer = ws.predict(model, [str(photos / "bright" / "bright0.png")])[0]
        assert answer["label"] == "bright" and answer["score"] > 0.5

        compressed = ws.export_model(model, tmp_path / "small", compress=True, bundle=False)
        assert compressed["candidates"] and compressed["accuracy_fp32"] == 1.0

        handle = ws.start_service(model)
        try:
            with open(photos / "dark" / "dark3.png", "rb") as image:
                reply = httpx.post(
                    handle.url + "v1/predict", files={"file": ("dark3.png", image, "image/png")}
                )
            assert reply.status_code == 200 and reply.json()["predictions"][0]["label"] == "dark"
        finally:
            handle.stop()
    finally:
        ws.close()


def test_cli_imports_into_a_new_project_and_says_what_it_assumed(tmp_path, outside, capsys):
    onnx_path, labels = outside
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


def test_the_wrapped_graph_answers_as_the_outside_graph_does(tmp_path, photos):
    """Same probabilities as the outside graph run by hand on normalised pixels; a graph ending in a
    softmax gets no second one."""
    import onnxruntime as ort

    from modeldesk.deploy import Predictor
    from modeldesk.deploy.outside_onnx import inspect_onnx, save_outside_classifier
    from modeldesk.deploy.preprocess import ImageSpec, preprocess_image

    path = brightness_classifier(tmp_path / "m.onnx", layout="NCHW", softmax_inside=True)
    graph = inspect_onnx(path)
    assert graph.probabilities and graph.layout == "NCHW" and graph.size == 32
    folder = save_outside_classifier(graph, tmp_path / "art", LABELS, mean=IMAGENET[0], std=IMAGENET[1])
    photo = str(photos / "mid" / "mid0.png")
    scores = Predictor(folder).predict([photo])[0]["scores"]
    raw = preprocess_image(photo, ImageSpec(size=32, mean=0.0, std=1.0))[None]
    normalised = ((raw - IMAGENET[0].reshape(1, 3, 1, 1)) / IMAGENET[1].reshape(1, 3, 1, 1)).astype(
        np.float32
    )
    expected = ort.InferenceSession(str(path)).run(None, {"input_1": normalised})[0][0]
    assert np.allclose([scores[label] for label in LABELS], expected, atol=1e-5)


@pytest.mark.parametrize(
    "broken, reason",
    [
        (b"not an onnx file", "not a valid ONNX model"),
        ("two_outputs", "Detectors made elsewhere cannot be imported yet"),
        ("grey_input", "no 3-channel axis"),
    ],
)
def test_a_graph_it_cannot_run_is_refused_with_the_reason(tmp_path, outside, capsys, broken, reason):
    _, labels = outside
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


def test_labels_that_do_not_match_the_graph_are_refused(tmp_path, outside):
    from modeldesk.errors import UserError

    onnx_path, _ = outside
    two = tmp_path / "two.txt"
    two.write_text("dark\nbright\n")
    ws = Workspace(tmp_path / "ws")
    try:
        with pytest.raises(UserError, match="scores 3 classes but the labels file has 2"):
            ws.import_outside_model(onnx_path, two)
        assert ws.list_projects() == []  # refused before anything was made
    finally:
        ws.close()
