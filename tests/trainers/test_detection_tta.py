"""A detector's test-time views: the photo looked at in several views, the boxes fused, in the graph
as in numpy, and cut back to one look for a faster compressed copy."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from PIL import Image

from modeldesk.deploy import Predictor, load_artifact
from modeldesk.deploy.compress import one_view
from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.detection.features import DetectionNeck
from modeldesk.trainers.detection.metrics import box_iou
from modeldesk.trainers.detection.templates import TEMPLATES
from modeldesk.trainers.detection.trainer import PARITY_TOLERANCE, ObjectDetectionTrainer
from modeldesk.trainers.detection.tta import fuse_nodes, fuse_views, fused_predictions, view_back, view_size

from .detection_data import make_detection_samples

MIRROR = dataclasses.replace(
    TEMPLATES[0],
    name="object-detection/test-mirror",
    neck=DetectionNeck(size=160, stride=16, levels=("stride16", "stride32")),
    views=("identity", "hflip", "shrink"),
    test_views=("identity", "hflip"),
)
THREE = dataclasses.replace(
    MIRROR, name="object-detection/test-three", test_views=("identity", "hflip", "shrink")
)


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    return make_detection_samples(tmp_path_factory.mktemp("tta"), n=30, seed=2, sizes=((180, 180),))


@pytest.fixture(scope="module")
def mirrored(samples, tmp_path_factory, shared_cache_dir):
    folder = tmp_path_factory.mktemp("mirror-model")
    return ObjectDetectionTrainer().train(samples, MIRROR, folder / "model", shared_cache_dir)


def _box(label, score, box):
    return {"label": label, "score": score, "box": list(map(float, box))}


def test_fusion_weighs_each_views_best_box_and_counts_the_views():
    views = [
        [_box("cat", 0.9, (10, 10, 50, 50)), _box("dog", 0.6, (100, 100, 140, 140))],
        [_box("cat", 0.3, (12, 10, 52, 50)), _box("cat", 0.1, (11, 10, 51, 50))],
    ]
    fused = fuse_views(views)
    cat = fused[0]
    assert cat["score"] == pytest.approx((0.9 + 0.3) / 2)  # the second view's best, not its 0.1 box
    assert cat["box"] == pytest.approx([(0.9 * 10 + 0.3 * 12) / 1.2, 10, (0.9 * 50 + 0.3 * 52) / 1.2, 50])
    dog = next(p for p in fused if p["label"] == "dog")
    assert dog["score"] == pytest.approx(0.3) and dog["box"] == [
        100,
        100,
        140,
        140,
    ]  # seen by one view of two
    kept = fused_predictions(views, 0.6)
    assert [p["label"] for p in kept] == ["cat", "dog"]  # the cat's fused boxes were one box three times


def test_in_its_own_view_a_box_joins_only_itself():
    # two cats side by side that one view tells apart (IoU 0.74 after the other view's box joins
    # each): the second is not pulled onto the first, which would make it a duplicate
    views = [
        [_box("cat", 0.9, (10, 10, 50, 50)), _box("cat", 0.5, (16, 10, 56, 50))],
        [_box("cat", 0.8, (12, 10, 53, 50))],
    ]
    fused = fuse_views(views)
    second = fused[1]
    assert second["score"] == pytest.approx((0.5 + 0.8) / 2)
    assert second["box"][0] == pytest.approx((0.5 * 16 + 0.8 * 12) / 1.3)
    kept = fused_predictions(views, 0.9, decay_iou=0.5)
    assert len(kept) == 2 and kept[1]["score"] < second["score"]  # kept, ranked lower


def test_views_sizes_bring_boxes_back_onto_the_photo():
    # a 200 x 100 photo in a 320 px letterbox: 1.6 px per photo pixel
    assert view_size("hflip", 200, 100, 320) == (200, 100)
    assert view_size("hflip", 100, 200, 320) == (200, 200)  # mirrored, the photo sits at the right
    assert view_size("shrink", 200, 100, 320) == pytest.approx((200 / 0.75, 100 / 0.75))
    # a portrait photo's box at x 10..30, mirrored within the letterbox's longer side (200)
    assert view_back([[170, 5, 190, 25]], "hflip", 100, 200).tolist() == [[10, 5, 30, 25]]
    assert view_back([[90, 5, 130, 25]], "shrink", 100, 200).tolist() == [[90, 5, 100, 25]]


def _fusion_model(test_views, dedupe_iou=0.6, decay_iou=None):
    nodes, inits = fuse_nodes("rows", "sizes", test_views, dedupe_iou, "out", decay_iou=decay_iou)
    graph = helper.make_graph(
        nodes,
        "fuse",
        [
            helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["K", 7]),
            helper.make_tensor_value_info("sizes", TensorProto.FLOAT, ["N", 2]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["M", 7])],
        inits,
    )
    return create_session(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )


@pytest.mark.parametrize("dedupe_iou, decay_iou", [(0.6, None), (0.9, 0.5)])
def test_graph_fusion_is_its_numpy_twin(dedupe_iou, decay_iou):
    test_views = ("identity", "hflip", "shrink")
    rng = np.random.default_rng(0)
    sizes = np.array([[200, 150], [120, 240]], np.float32)
    rows, per_photo = [], [[[] for _ in test_views] for _ in sizes]
    for v, view in enumerate(test_views):
        for photo, (width, height) in enumerate(sizes):
            w, h = view_size(view, width, height, 320)
            for k in range(4):  # two objects per photo, each seen with some jitter, two classes
                base = np.array([[20, 30, 90, 100], [60, 40, 110, 120]][k % 2], np.float32)
                if view == "hflip":  # as decoded in the mirrored view
                    base = np.array(
                        [max(width, height) - base[2], base[1], max(width, height) - base[0], base[3]]
                    )
                box = np.clip(base + rng.normal(0, 3, 4), 0, [w, h, w, h]).astype(np.float32)
                score, label = float(rng.uniform(0.1, 0.9)), k % 2
                rows.append([v * len(sizes) + photo, *box, score, label])
                back = view_back([box], view, width, height)[0]
                per_photo[photo][v].append(_box(str(label), np.float32(score), back.astype(np.float32)))
    rows = np.array(rows, np.float32)
    model = _fusion_model(test_views, dedupe_iou, decay_iou)
    out = model.run(None, {"rows": rows, "sizes": sizes})[0]
    for photo in range(len(sizes)):
        want = fused_predictions(per_photo[photo], dedupe_iou, decay_iou)
        got = sorted((r for r in out if r[0] == photo), key=lambda r: -r[5])
        assert len(got) == len(want) >= 2
        for row, p in zip(got, want):
            assert row[5] == pytest.approx(p["score"], abs=1e-5) and str(int(row[6])) == p["label"]
            assert np.allclose(row[1:5], p["box"], atol=1e-3)
    empty = model.run(None, {"rows": np.zeros((0, 7), np.float32), "sizes": sizes})[0]
    assert empty.shape == (0, 7)


def test_exported_views_match_the_training_path(mirrored, samples, tmp_path_factory, shared_cache_dir):
    card = load_artifact(mirrored.artifact_dir).card
    assert card["test_views"] == ["identity", "hflip"]
    assert mirrored.metrics["export_max_abs_diff_px"] <= PARITY_TOLERANCE
    assert mirrored.metrics["map50"] >= 0.8
    three = ObjectDetectionTrainer().train(
        samples, THREE, tmp_path_factory.mktemp("three") / "model", shared_cache_dir
    )
    assert three.metrics["export_max_abs_diff_px"] <= PARITY_TOLERANCE


def test_a_photo_and_its_mirror_get_mirrored_boxes(mirrored, samples, tmp_path):
    """Looking in the photo and its mirror makes the boxes follow a mirrored photo exactly; one look
    does not (its head sees each side's cells from one side only)."""
    photo = Image.open(samples[0].path)
    path = tmp_path / "mirror.png"
    photo.transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(path)
    width = photo.width
    gaps = []
    for artifact in (mirrored.artifact_dir, _one_look_copy(mirrored.artifact_dir, tmp_path)):
        plain, mirror = Predictor(artifact).predict([samples[0].path, str(path)])
        strong = [p for p in plain["boxes"] if p["score"] > 0.2]
        assert strong
        worst = 0.0
        for p in strong:
            x0, y0, x1, y1 = p["box"]
            flipped = [width - x1, y0, width - x0, y1]
            same = [q for q in mirror["boxes"] if q["label"] == p["label"]]
            best = max(same, key=lambda q: box_iou([flipped], [q["box"]])[0, 0])
            worst = max(worst, float(np.abs(np.subtract(best["box"], flipped)).max()))
            worst = max(worst, 100 * abs(best["score"] - p["score"]))
        gaps.append(worst)
    assert gaps[0] <= 1.0 < gaps[1], gaps


def _one_look_copy(artifact_dir, folder):
    """The detector cut back to one look (as compression's one-look copies), saved beside a copy of its card."""
    import shutil

    out = folder / "one-look"
    shutil.copytree(artifact_dir, out)
    model_path = load_artifact(out).model_path
    onnx.save(one_view(onnx.load(str(model_path))), str(model_path))
    return out


def _every_box(artifact_dir, paths):
    predictor = Predictor(artifact_dir)
    predictor.output.threshold = 0.0
    return predictor.predict(paths)


def test_one_look_copy_is_the_detector_that_looks_once(mirrored, samples, tmp_path, shared_cache_dir):
    one_look = ObjectDetectionTrainer().train(
        samples,
        dataclasses.replace(MIRROR, test_views=("identity",)),
        tmp_path / "once",
        shared_cache_dir,
    )
    cut = _one_look_copy(mirrored.artifact_dir, tmp_path)
    paths = [s.path for s in samples if s.split == "test"]
    for a, b in zip(_every_box(cut, paths), _every_box(one_look.artifact_dir, paths)):
        a, b = sorted(a["boxes"], key=lambda p: -p["score"]), sorted(b["boxes"], key=lambda p: -p["score"])
        assert len(a) == len(b)
        for p, q in zip(a, b):
            assert p["label"] == q["label"] and p["score"] == pytest.approx(q["score"], abs=1e-5)
            assert np.allclose(p["box"], q["box"], atol=1e-3)


def test_test_views_must_be_training_views_after_the_photo_itself():
    with pytest.raises(ValueError, match="not a training view"):
        dataclasses.replace(MIRROR, views=("identity", "hflip"), test_views=("identity", "shrink"))
    with pytest.raises(ValueError, match="start with 'identity'"):
        dataclasses.replace(MIRROR, test_views=("hflip", "identity"))
    with pytest.raises(ValueError, match="cannot look in the 'zoom' view"):
        dataclasses.replace(MIRROR, views=("identity", "zoom"), test_views=("identity", "zoom"))


def test_the_estimate_counts_each_look(samples, tmp_path):
    from modeldesk.trainers.detection.trainer import estimate_detection

    once = dataclasses.replace(MIRROR, test_views=("identity",))
    seconds = [
        estimate_detection(samples, template, tmp_path, device="cpu")["plan"]["seconds"]["export"]
        for template in (once, MIRROR, THREE)
    ]
    assert seconds[1] == pytest.approx(2 * seconds[0]) and seconds[2] == pytest.approx(3 * seconds[0])


def test_compression_keeps_a_one_look_copy_that_says_so(mirrored, samples, tmp_path, monkeypatch):
    """The one-look copy is built and judged like any copy; kept (timed as faster here), its card looks once."""
    from modeldesk.app.pipeline import compression_metric
    from modeldesk.deploy import compress, compress_artifact
    from modeldesk.trainers.detection.compression import judging_photos

    def one_look_faster(runs, *, rounds=9):
        return {key: 1.0 if "1view" in str(key) else 10.0 for key in runs}

    monkeypatch.setattr(compress, "time_interleaved", one_look_faster)
    artifact = load_artifact(mirrored.artifact_dir)
    out = compress_artifact(
        artifact,
        tmp_path / "one-look",
        calibration=[s.path for s in samples if s.split == "train"],
        validation=judging_photos(samples, minimum=10),
        candidates=["fp32-1view"],
        threads=(1,),
        max_loss=5.0,
        metric=compression_metric(artifact),
        latency_runs=2,
    )
    rows = {row["name"]: row for row in out["candidates"]}
    assert out["chosen"] == "fp32-1view", rows["fp32-1view"].get("reason")
    card = load_artifact(out["path"]).card
    assert card["test_views"] == ["identity"] and card["views"] == list(MIRROR.views)
