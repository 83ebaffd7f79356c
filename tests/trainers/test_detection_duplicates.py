"""Duplicate boxes after refinement: the graph's nodes drop what the numpy twin drops."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.detection.duplicates import drop_duplicates, duplicate_nodes


def _session(iou: float, decay: float | None = None):
    nodes, inits, out = duplicate_nodes("rows", iou, "d/", decay=decay)
    graph = helper.make_graph(
        nodes,
        "dedupe",
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["K", 7])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["J", 7])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return create_session(model.SerializeToString(), device="cpu", threads=1)


@pytest.fixture(scope="module")
def session():
    return _session(0.6)


# image, x0, y0, x1, y1, score, class
ROWS = np.array(
    [
        [0, 10, 10, 50, 50, 0.9, 0],  # kept: the best of its object
        [0, 12, 11, 52, 50, 0.7, 0],  # IoU ~0.9 with the first, lower score: dropped
        [0, 30, 10, 70, 50, 0.8, 0],  # IoU 0.33 with the first: another object, kept
        [0, 10, 10, 50, 50, 0.6, 1],  # the first's box, but another class: kept
        [1, 12, 11, 52, 50, 0.95, 0],  # the second's box in another image: kept
        [1, 12, 11, 52, 50, 0.95, 0],  # an exact tie: neither scores higher, both kept
    ],
    np.float32,
)


def _as_predictions(rows):
    return [{"label": int(r[6]), "score": float(r[5]), "box": r[1:5].tolist()} for r in rows]


def test_the_graph_drops_boxes_a_better_one_of_their_image_and_class_overlaps(session):
    kept = session.run(None, {"rows": ROWS})[0]
    np.testing.assert_array_equal(kept, ROWS[[0, 2, 3, 4, 5]])


def test_numpy_twin_drops_the_same_boxes_per_image(session):
    kept = session.run(None, {"rows": ROWS})[0]
    for image in (0, 1):
        mine = ROWS[ROWS[:, 0] == image]
        twin = drop_duplicates(_as_predictions(mine), 0.6)
        assert twin == _as_predictions(kept[kept[:, 0] == image])
    assert drop_duplicates([], 0.6) == []


def test_no_rows_in_no_rows_out(session):
    assert session.run(None, {"rows": np.zeros((0, 7), np.float32)})[0].shape == (0, 7)


def test_a_box_a_better_one_overlaps_a_little_less_is_kept_ranked_lower():
    rows = np.array(
        [
            [0, 10, 10, 50, 50, 0.9, 0],
            [0, 20, 10, 60, 50, 0.8, 0],  # IoU 0.6 with the first: 0.8 * 0.4
            [0, 11, 10, 51, 50, 0.7, 0],  # IoU 0.95 with the first: dropped
            [0, 40, 10, 80, 50, 0.6, 0],  # IoU 0.33 at most (the second's): as it was
        ],
        np.float32,
    )
    kept = _session(0.9, decay=0.5).run(None, {"rows": rows})[0]
    np.testing.assert_allclose(kept[:, 5], [0.9, 0.8 * 0.4, 0.6], rtol=1e-5)
    np.testing.assert_array_equal(kept[:, 1:5], rows[[0, 1, 3], 1:5])
    twin = drop_duplicates(_as_predictions(rows), 0.9, decay=0.5)
    assert [p["score"] for p in twin] == pytest.approx(kept[:, 5].tolist(), rel=1e-6)
