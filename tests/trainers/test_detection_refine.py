"""The box refiner: its graph nodes move sides as fitted, per image, and a fitted refiner puts boxes
that are off by a few pixels back on the object it sees in the maps."""

from __future__ import annotations

from dataclasses import replace as dc_replace

import numpy as np
import pytest
from onnx import TensorProto, helper

from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.detection.features import STRIDES, DetectionNeck
from modeldesk.trainers.detection.metrics import box_iou, detection_report
from modeldesk.trainers.detection.refine import (
    MIN_QUALITY,
    BoxRefiner,
    RefineComputer,
    RefineSpec,
    move_sides,
    rescore,
    rescore_nodes,
    side_moves,
)

NECK = DetectionNeck(size=128, stride=16, levels=("stride16", "stride32"))


class _Backbone:
    outputs = {"stride8": 4, "stride16": 3, "stride32": 2}


def _flat(objects=()) -> np.ndarray:
    """Flat cached maps of one 128 px letterbox: every level's first channel is 1 inside the objects."""
    parts = []
    for level, stride in STRIDES.items():
        side = NECK.size // stride
        maps = np.zeros((_Backbone.outputs[level], side, side), np.float32)
        centres = (np.arange(side) + 0.5) * stride
        for x0, y0, x1, y1 in objects:
            inside_y = (centres >= y0) & (centres < y1)
            inside_x = (centres >= x0) & (centres < x1)
            maps[0] += np.outer(inside_y, inside_x)
        parts.append(maps.ravel())
    return np.concatenate(parts)


def test_refine_nodes_move_each_side_by_its_share_of_the_box_in_its_own_image():
    spec = RefineSpec(steps=1)
    computer = RefineComputer(spec, NECK, _Backbone())
    dim = computer.features(_flat(), np.zeros((1, 4))).shape[1]
    computer.set_weights(np.zeros((dim, 4), np.float32), np.array([0.1, 0.0, -0.1, 0.0], np.float32))
    # a 256 x 128 photo: letterbox scale 0.5; a 100 px wide box grows by 10 px on each side
    moved = computer.refine(_flat(), [[50, 20, 150, 60]], 256, 128)
    np.testing.assert_allclose(moved, [[60, 20, 140, 60]], atol=1e-3)
    # sides pushed out of the photo are clipped to it
    moved = computer.refine(_flat(), [[0, 0, 256, 128]], 256, 128)
    assert moved[0, 0] == pytest.approx(25.6) and moved[0, 2] == pytest.approx(230.4)
    assert len(computer.refine(_flat(), np.zeros((0, 4)), 256, 128)) == 0


def test_a_fitted_refiner_puts_shifted_boxes_back_on_the_object():
    rng = np.random.default_rng(0)
    spec = RefineSpec(levels=("stride8",), copies=12, ridge=1e-3)
    computer = RefineComputer(spec, NECK, _Backbone())
    images = []
    for _ in range(40):
        x0, y0 = rng.uniform(8, 56, 2)
        w, h = rng.uniform(32, 64, 2)
        box = np.array([[x0, y0, x0 + w, y0 + h]])
        images.append((_flat(box), box))
    refiner = BoxRefiner(spec).fit(computer, images, rng)
    computer.set_weights(refiner.weight_, refiner.bias_)
    before, after = [], []
    for flat, truth in images[:10]:
        off = truth + np.array([[6.0, -5.0, 6.0, -5.0]])
        before.append(box_iou(off, truth)[0, 0])
        after.append(box_iou(computer.refine(flat, off, NECK.size, NECK.size), truth)[0, 0])
    assert np.mean(after) > np.mean(before) + 0.05


def test_side_moves_are_shares_of_the_box():
    moves = side_moves(np.array([[0.0, 0, 10, 20]]), np.array([[1.0, 2, 12, 18]]))
    np.testing.assert_allclose(moves, [[0.1, 0.1, 0.2, -0.1]])


def test_report_has_ap_at_iou_075():
    truth = [[("a", 0, 0, 10, 10)]]
    near = [[{"label": "a", "score": 0.9, "box": [0, 0, 10, 14]}]]  # IoU 0.71: found at 0.5, not at 0.75
    report = detection_report(truth, near, ["a"], 0.5)
    assert report["map50"] == pytest.approx(1.0) and report["map75"] == pytest.approx(0.0)


def test_the_iou_regression_scores_a_box_on_the_object_above_one_beside_it():
    rng = np.random.default_rng(0)
    spec = RefineSpec(levels=("stride8",), copies=12, ridge=1e-3, rescore=0.5)
    computer = RefineComputer(spec, NECK, _Backbone())
    images = []
    for _ in range(40):
        x0, y0 = rng.uniform(8, 56, 2)
        w, h = rng.uniform(32, 64, 2)
        box = np.array([[x0, y0, x0 + w, y0 + h]])
        images.append((_flat(box), box))
    refiner = BoxRefiner(spec).fit(computer, images, rng)
    assert refiner.quality_[0].shape == (computer.features(_flat(), np.zeros((1, 4))).shape[1], 1)
    computer.set_weights(refiner.weight_, refiner.bias_, refiner.quality_)
    on, beside = [], []
    for flat, truth in images[:10]:
        w = truth[0, 2] - truth[0, 0]
        on.append(computer.refine_scored(flat, truth, NECK.size, NECK.size)[1][0])
        shifted = truth + np.array([[0.6 * w, 0.0, 0.6 * w, 0.0]])
        beside.append(computer.refine_scored(flat, shifted, NECK.size, NECK.size)[1][0])
    assert np.mean(on) > np.mean(beside) + 0.1
    assert min(on + beside) >= MIN_QUALITY and max(on + beside) <= 1.0
    # without the IoU regression nothing is predicted and the scores stay as they are
    computer.set_weights(refiner.weight_, refiner.bias_)
    assert computer.refine_scored(images[0][0], images[0][1], NECK.size, NECK.size)[1] is None


def test_rescore_nodes_compute_what_the_trainer_computes():
    spec = RefineSpec(rescore=0.5)
    nodes, inits, out = rescore_nodes(spec, "score", "iou", "r/")
    graph = helper.make_graph(
        nodes,
        "rescore",
        [
            helper.make_tensor_value_info("score", TensorProto.FLOAT, ["K", 1]),
            helper.make_tensor_value_info("iou", TensorProto.FLOAT, ["K", 1]),
        ],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["K", 1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = create_session(model.SerializeToString(), device="cpu", threads=1)
    score = np.array([[0.9], [0.5], [0.06]], np.float32)
    iou = np.array([[0.4], [0.95], [1.0]], np.float32)
    got = session.run(None, {"score": score, "iou": iou})[0]
    np.testing.assert_allclose(got[:, 0], rescore(spec, score[:, 0], iou[:, 0]), rtol=1e-6)
    # a well-placed weaker box overtakes a badly placed stronger one
    assert got[1, 0] > got[0, 0]


def _square_images(rng, n=40):
    images = []
    for _ in range(n):
        x0, y0 = rng.uniform(8, 56, 2)
        w, h = rng.uniform(32, 64, 2)
        box = np.array([[x0, y0, x0 + w, y0 + h]])
        images.append((_flat(box), box))
    return images


def test_a_cascade_step_has_its_own_regression_and_the_graph_applies_each_in_turn():
    rng = np.random.default_rng(0)
    spec = RefineSpec(levels=("stride8",), copies=12, ridge=1e-3, steps=2, cascade=True)
    computer = RefineComputer(spec, NECK, _Backbone())
    images = _square_images(rng)
    refiner = BoxRefiner(spec).fit(computer, images, rng)
    assert len(refiner.later_) == 1 and len(refiner.stages) == 2
    (w1, b1), (w2, b2) = refiner.stages
    assert w2.shape == w1.shape and not np.allclose(w2, w1)
    computer.set_weights(refiner.weight_, refiner.bias_, later=refiner.later_)
    flat, truth = images[0]
    off = truth + np.array([[6.0, -5.0, 6.0, -5.0]])
    # the numpy twin: the first regression, then the second one on the box the first moved
    once = move_sides(off, computer.features(flat, off) @ w1 + b1)
    twice = move_sides(once, computer.features(flat, once) @ w2 + b2)
    np.testing.assert_allclose(computer.refine(flat, off, NECK.size, NECK.size), twice, atol=1e-2)
    # the second regression was fitted on boxes the first had already brought close: it moves less
    moves1, moves2, before, after = [], [], [], []
    for flat, truth in images[:10]:
        off = truth + np.array([[6.0, -5.0, 6.0, -5.0]])
        before.append(box_iou(off, truth)[0, 0])
        once = move_sides(off, computer.features(flat, off) @ w1 + b1)
        moves1.append(np.abs(side_moves(off, once)).mean())
        moves2.append(np.abs(computer.features(flat, once) @ w2 + b2).mean())
        after.append(box_iou(computer.refine(flat, off, NECK.size, NECK.size), truth)[0, 0])
    assert np.mean(moves2) < 0.5 * np.mean(moves1)
    assert np.mean(after) > np.mean(before) + 0.15


def test_without_cascade_every_step_repeats_the_first_regression():
    rng = np.random.default_rng(0)
    spec = RefineSpec(levels=("stride8",), copies=4, ridge=1e-3, steps=2)
    computer = RefineComputer(spec, NECK, _Backbone())
    images = _square_images(rng, 10)
    refiner = BoxRefiner(spec).fit(computer, images, rng)
    assert refiner.later_ == [] and len(refiner.stages) == 1
    computer.set_weights(refiner.weight_, refiner.bias_)
    flat, truth = images[0]
    once = move_sides(truth, computer.features(flat, truth) @ refiner.weight_ + refiner.bias_)
    twice = move_sides(once, computer.features(flat, once) @ refiner.weight_ + refiner.bias_)
    np.testing.assert_allclose(computer.refine(flat, truth, NECK.size, NECK.size), twice, atol=1e-2)


def test_background_boxes_teach_the_iou_regression_that_empty_places_hold_nothing():
    spec = RefineSpec(levels=("stride8",), copies=12, ridge=1e-3, rescore=0.5)
    empty = []
    for background in (0, 8):
        rng = np.random.default_rng(0)
        images = _square_images(rng)
        computer = RefineComputer(dc_replace(spec, rescore_background=background), NECK, _Backbone())
        refiner = BoxRefiner(computer.spec).fit(computer, images, rng)
        computer.set_weights(refiner.weight_, refiner.bias_, refiner.quality_)
        # a box of the object's size in the corner the objects never reach (x, y >= 8 + 64 ... < 128)
        predicted = []
        for flat, truth in images[:10]:
            w, h = truth[0, 2:] - truth[0, :2]
            far = np.array([[128 - w / 2, 128 - h / 2, 128, 128]])
            if box_iou(far, truth)[0, 0] == 0:
                predicted.append(computer.refine_scored(flat, far, NECK.size, NECK.size)[1][0])
        empty.append(np.mean(predicted))
    assert empty[1] < empty[0] - 0.05 and empty[1] < 0.2
