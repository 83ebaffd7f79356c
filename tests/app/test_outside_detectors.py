"""A YOLO detector made elsewhere (a YOLOv8- or YOLOv5-shaped export built with onnx.helper) is
wrapped into ModelDesk's detector outputs: suppression, boxes in the photo's pixels, evaluation."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from modeldesk.app.workspace import Workspace
from modeldesk.deploy import Predictor
from modeldesk.deploy.outside_onnx import inspect_onnx, save_outside_model

LABELS = ["raccoon", "cat"]
# candidates in 64 px letterbox pixels: centre x, centre y, width, height, then a score per class
CANDIDATES = np.array(
    [
        [32, 24, 20, 16, 0.90, 0.05],  # a raccoon
        [33, 24, 20, 16, 0.60, 0.02],  # the same raccoon again: suppressed
        [10, 50, 8, 8, 0.01, 0.80],  # a cat reaching below the photo (clipped)
    ],
    np.float32,
)


def yolo_graph(path, layout: str):
    """A detector whose candidates are fixed (plus 0 x the input, so the graph reads its input)."""
    if layout == "v8":
        raw = CANDIDATES.T[None]  # (1, 4 + C, A)
    else:  # v5: objectness 1 before the class scores
        raw = np.concatenate([CANDIDATES[:, :4], np.ones((3, 1), np.float32), CANDIDATES[:, 4:]], axis=1)[
            None
        ]
    nodes = [
        helper.make_node("ReduceMean", ["images"], ["mean"], keepdims=0),
        helper.make_node("Mul", ["mean", "zero"], ["nothing"]),
        helper.make_node("Add", ["raw", "nothing"], ["output0"]),
    ]
    graph = helper.make_graph(
        nodes,
        "yolo",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, list(raw.shape))],
        initializer=[numpy_helper.from_array(raw, "raw"), numpy_helper.from_array(np.float32(0), "zero")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def photo(tmp_path):
    path = tmp_path / "yard.jpg"
    Image.new("RGB", (128, 96), (90, 120, 60)).save(path)
    return path


@pytest.mark.parametrize("layout", ["v8", "v5"])
def test_yolo_candidates_become_boxes_in_the_photos_pixels(tmp_path, photo, layout):
    graph = inspect_onnx(yolo_graph(tmp_path / "yolo.onnx", layout))
    assert graph.kind == "detector"
    folder = save_outside_model(graph, tmp_path / "art", LABELS, mean=(0, 0, 0), std=(255, 255, 255))
    boxes = Predictor(folder).predict([str(photo)])[0]["boxes"]
    # letterboxed by 64 / 128 = 0.5: boxes come back doubled, the cat clipped to the photo's height
    assert [(b["label"], round(b["score"], 2)) for b in boxes] == [("raccoon", 0.9), ("cat", 0.8)]
    assert np.allclose(boxes[0]["box"], [44, 32, 84, 64], atol=0.01)
    assert np.allclose(boxes[1]["box"], [12, 92, 28, 96], atol=0.01)


def test_labels_that_do_not_fit_the_candidates_are_refused(tmp_path):
    from modeldesk.deploy.outside_onnx import OutsideModelError

    graph = inspect_onnx(yolo_graph(tmp_path / "yolo.onnx", "v8"))
    with pytest.raises(OutsideModelError, match="a YOLO detector of 3 classes answers"):
        save_outside_model(graph, tmp_path / "art", ["a", "b", "c"])


def test_an_imported_detector_is_evaluated_on_the_projects_boxes(tmp_path, photo):
    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("yard", "object-detection")
        ws.import_data("yard", photo)
        (sample,) = ws.sample_ids("yard")
        ws.annotate(sample, "boxes", [("raccoon", 44, 32, 84, 64), ("cat", 12, 92, 28, 96)])
        labels = tmp_path / "labels.txt"
        labels.write_text("raccoon\ncat\n")
        result = ws.import_outside_model(yolo_graph(tmp_path / "yolo.onnx", "v8"), labels, project="yard")
        assert result["normalisation"] == "unit" and result["metrics"]["map50"] == pytest.approx(1.0)
        answer = ws.predict(result["model"], [str(photo)])[0]
        assert {b["label"] for b in answer["boxes"]} == {"raccoon", "cat"}
    finally:
        ws.close()
