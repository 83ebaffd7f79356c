"""Segmentation: import photos with masks, train the per-pixel head, export one graph, measure it."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from modeldesk.app.workspace import Workspace
from modeldesk.datasets.masks import VOID
from modeldesk.datasets.seg_coco import polygon_mask
from modeldesk.deploy import Predictor
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.segmentation.features import SegNeck
from modeldesk.trainers.segmentation.templates import SegmentationTemplate
from modeldesk.trainers.segmentation.trainer import split_roles

from .segmentation_data import CLASSES, write_mask_folder

#: small and quick: a 128 px input, a small head, few points
TINY = SegmentationTemplate(
    name="segmentation/tiny",
    task="segmentation",
    description="test",
    backbone="efficientnet-lite0",
    neck=SegNeck(size=128, stride=8, pyramid=(1,)),
    hidden=32,
    rows=6000,
    epochs=15,
    time_budget_s=60,
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(workspace, model id, artifact path, probe folder) of TINY trained on 12 scenes."""
    root = tmp_path_factory.mktemp("seg")
    ws = Workspace(root / "ws", cleanup=False)
    ws.create_project("scenes", "segmentation")
    ws.import_data("scenes", write_mask_folder(root / "data", n=12, seed=0))
    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.trainers.tasks import get_trainer

    samples = labeled_samples(ws.store, ws.project("scenes"))
    result = get_trainer("segmentation").train(samples, TINY, root / "model", ws.paths.cache / "features")
    ws.store.add_model(ws.project("scenes"), "tiny", result.artifact_dir, TINY.name, result.metrics)
    yield ws, "tiny", result, write_mask_folder(root / "probes", n=3, seed=7)
    ws.close()


def test_photos_with_masks_import_with_their_classes(tmp_path):
    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("scenes", "segmentation")
        source = write_mask_folder(tmp_path / "data", n=3, seed=0)
        report = ws.import_data("scenes", source)
        assert report["added"] == 3 and report["format"] == "masks"
        assert ws.labels("scenes") == sorted(CLASSES)
        index = {name: k for k, name in enumerate(ws.labels("scenes"))}
        for sample_id in ws.sample_ids("scenes"):
            source_mask = np.asarray(
                Image.open(source / "masks" / ws.sample(sample_id).source.split("/")[-1])
            )
            want = np.full(source_mask.shape, VOID, np.uint8)
            for value, name in enumerate(CLASSES):
                want[source_mask == value] = index[name]
            np.testing.assert_array_equal(ws.sample_mask(sample_id), want)
        assert ws.stats("scenes")["labeled"] == 3
    finally:
        ws.close()


def test_a_camvid_layout_imports_with_splits_and_void(tmp_path):
    root = tmp_path / "CamVid"
    for folder in ("train", "trainannot", "val", "valannot"):
        (root / folder).mkdir(parents=True)
    (root / "classes.txt").write_text("0 Sky\n1 Road\n2 Unlabelled\n", encoding="utf-8")
    mask = np.array([[0, 1, 2, 1]] * 3, np.uint8)
    for split in ("train", "val"):
        Image.new("RGB", (4, 3), (9, 9, 9) if split == "train" else (99, 9, 9)).save(
            root / split / "a_001.png"
        )
        Image.fromarray(mask, mode="L").save(root / f"{split}annot" / "a_001.png")
    Image.new("RGB", (4, 3), (7, 70, 7)).save(root / "train" / "colour.png")
    Image.new("RGB", (4, 3), (1, 2, 3)).save(root / "trainannot" / "colour.png")  # a colour picture
    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("cv", "segmentation")
        report = ws.import_data("cv", root)
        assert report["added"] == 3
        assert any("colour.png" in f["file"] and "index mask" in f["reason"] for f in report["failed"])
        assert ws.labels("cv") == ["Road", "Sky"]
        splits = {ws.sample(i).source: ws.sample(i).split for i in ws.sample_ids("cv")}
        assert splits["train/a_001.png"] == "train" and splits["val/a_001.png"] == "val"
        got = ws.sample_mask(ws.sample_ids("cv")[0])
        np.testing.assert_array_equal(got, np.array([[1, 0, VOID, 0]] * 3, np.uint8))
    finally:
        ws.close()


def test_masks_refuse_a_project_of_another_task(tmp_path):
    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("pets", "image-classification")
        with pytest.raises(ValueError, match="segmentation project"):
            ws.import_data("pets", write_mask_folder(tmp_path / "data", n=2), format="masks")
    finally:
        ws.close()


def _sample(name, split):
    return LabeledSample(name, f"/media/{name}", "x", split, name)


def test_without_a_validation_split_the_last_frames_of_each_sequence_stop_training():
    frames = [_sample(f"seqA_{i:03d}.png", "train") for i in range(20)]
    frames += [_sample(f"seqB_{i:03d}.png", "train") for i in range(8)] + [_sample("t_1.png", "test")]
    train, held, test, _ = split_roles(frames)
    assert [s.name for s in held] == ["seqA_017.png", "seqA_018.png", "seqA_019.png", "seqB_007.png"]
    assert not {s.key for s in held} & {s.key for s in train} and [s.name for s in test] == ["t_1.png"]


def test_edge_points_are_labeled_points_beside_another_class():
    from modeldesk.trainers.segmentation.features import edge_points

    labels = np.zeros((5, 6), np.uint8)
    labels[:, 3:] = 1
    labels[0, 0] = VOID
    edge = edge_points(labels)
    assert edge[:, 2:4].all() and not edge[:, :2].any() and not edge[:, 4:].any()
    labels[:, :] = 2
    labels[2, 2] = VOID  # a point not labeled is no class: its neighbours are not on an edge
    assert not edge_points(labels).any()


def test_edge_weight_draws_more_points_on_class_edges():
    from modeldesk.trainers.segmentation.features import edge_points
    from modeldesk.trainers.segmentation.trainer import SegmentationTrainer

    grid = 16
    truth = np.zeros((64, 64), np.uint8)
    truth[:, 32:] = 1  # one vertical edge: 2 of 16 grid columns
    sample = LabeledSample("k", "p.png", type("M", (), {"read": lambda self: truth})(), "train", "p.png")
    on_edge = edge_points(np.repeat(np.r_[np.zeros(8), np.ones(8)][None], grid, 0).astype(np.uint8))

    def features(s, view):  # a point's feature is its own index, to tell which points were drawn
        return np.arange(grid * grid, dtype=np.float32).reshape(1, grid, grid)

    shares = []
    for edges in (0.0, 9.0):
        X, _ = SegmentationTrainer._rows(
            [(sample, "identity")], features, grid, 2, 64, 0.0, None, edges=edges
        )
        shares.append(on_edge.ravel()[X[:, 0].astype(int)].mean())
    assert shares[0] < 0.25 < 0.35 < shares[1], shares


def test_training_learns_the_shapes_and_measures_the_exported_graph(trained):
    _ws, _model, result, _probes = trained
    metrics = result.metrics
    assert metrics["miou"] > 0.6, metrics
    assert set(metrics["per_class"]) == set(CLASSES) and 0 <= metrics["pixel_accuracy"] <= 1
    low, high = metrics["miou_interval"]
    assert low <= metrics["miou"] <= high
    assert metrics["export_agreement"] >= 0.999
    assert metrics["photos"][0]["miou"] <= metrics["photos"][-1]["miou"]  # worst first


def test_exported_masks_equal_the_apps_at_the_photos_size(trained, tmp_path):
    ws, model, result, probes = trained
    photos = sorted((probes / "images").iterdir())
    wide = tmp_path / "wide.png"
    Image.open(photos[0]).resize((150, 41)).save(wide)  # another size and shape than training's
    exported = ws.export_model(model, tmp_path / "export")
    app = ws.predict(model, [*photos, wide])
    graph = Predictor(exported["path"], device="cpu").predict([*map(str, photos), str(wide)])
    for a, g in zip(app, graph):
        shown = np.asarray(Image.open(io.BytesIO(base64.b64decode(a["mask_png"]))))
        np.testing.assert_array_equal(shown, g["mask"])
        assert a["areas"] == pytest.approx(g["areas"]) and sum(a["areas"].values()) == pytest.approx(1.0)
    assert graph[-1]["mask"].shape == (41, 150) and graph[-1]["size"] == [150, 41]
    big = tmp_path / "big.png"  # past the graph's 2048 px cap: the class map is enlarged to the photo
    Image.open(photos[0]).resize((2600, 1100), Image.Resampling.NEAREST).save(big)
    (large,) = Predictor(exported["path"], device="cpu").predict([str(big)])
    assert large["mask"].shape == (1100, 2600)
    small = np.asarray(Image.fromarray(large["mask"]).resize((96, 72), Image.Resampling.NEAREST))
    assert np.mean(small == graph[0]["mask"]) > 0.9  # the same scene, the same classes
    truth = np.asarray(Image.open(probes / "masks" / photos[0].name))
    disk = ws.labels("scenes").index("disk")
    found = graph[0]["mask"] == disk
    assert (found & (truth == 1)).sum() / max((found | (truth == 1)).sum(), 1) > 0.5  # the disk is found


def test_evaluate_on_a_folder_gives_miou_and_iou_per_class(trained, capsys):
    from modeldesk.app.cli import main

    ws, _model, result, probes = trained
    code = main(
        ["evaluate", str(result.artifact_dir), str(probes), "--json", "--workspace", str(ws.paths.root)]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert 0 < out["miou"] <= 1 and 0 < out["pixel_accuracy"] <= 1
    assert set(out["per_class"]) == set(CLASSES) and out["n"] == 3


def test_the_accurate_options_export_the_apps_masks(tmp_path):
    """A stride-4 grid, context pooling, edge-weighted points, a projection, test-time flip, an extra
    input size, per-class offsets and the refinement, all in one graph."""
    from dataclasses import replace

    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.trainers.tasks import get_trainer

    template = replace(
        TINY,
        neck=SegNeck(size=128, stride=4, pyramid=(1, 2, 4)),
        components=24,
        edges=2.0,
        flip_test=True,
        refine=True,
        extra_sizes=(256,),
        calibrate=True,
        epochs=4,
    )
    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("scenes", "segmentation")
        ws.import_data("scenes", write_mask_folder(tmp_path / "data", n=8, seed=3))
        samples = labeled_samples(ws.store, ws.project("scenes"))
        result = get_trainer("segmentation").train(
            samples, template, tmp_path / "model", ws.paths.cache / "features"
        )
    finally:
        ws.close()
    metrics = result.metrics
    assert metrics["export_agreement"] >= 0.999 and metrics["miou"] > 0.3, metrics
    assert "held_out_miou_unrefined" in metrics and isinstance(metrics["refined"], bool)
    assert "held_out_miou_one_size" in metrics and metrics["extra_sizes"] in ([], [256])
    assert set(metrics["class_offsets"]) == set(CLASSES)


@pytest.mark.parametrize("format", ["masks", "voc", "coco"])
def test_masks_export_and_import_back_exactly(tmp_path, format):
    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("scenes", "segmentation")
        ws.import_data("scenes", write_mask_folder(tmp_path / "data", n=4, seed=5))
        ws.add_class("scenes", "unused")  # a class no mask shows yet travels too
        first = ws.sample_ids("scenes")[0]
        ws.set_sample_mask(first, None)  # a photo without a mask exports unlabeled
        exported = ws.export_data("scenes", tmp_path / "out", format)
        assert exported["samples"] == 4 and exported["files"] == 4 + (1 if format == "coco" else 3 + 1)
        ws.create_project("back", "segmentation")
        report = ws.import_data("back", tmp_path / "out")
        assert report["format"] == ("coco" if format == "coco" else "masks") and report["added"] == 4
        assert ws.labels("back") == ws.labels("scenes")
        masks = {ws.sample(i).content_hash: ws.sample_mask(i) for i in ws.sample_ids("scenes")}
        for sample_id in ws.sample_ids("back"):
            want = masks[ws.sample(sample_id).content_hash]
            got = ws.sample_mask(sample_id)
            assert (want is None and got is None) or np.array_equal(want, got)
        with pytest.raises(ValueError, match="masks, voc, coco, labelme or yolo"):
            ws.export_data("scenes", tmp_path / "out2", "cvat")
    finally:
        ws.close()


def test_coco_rle_and_polygons_match_pycocotools(tmp_path):
    """RLE decoded and encoded here equals pycocotools' (a test-only dependency); polygons are filled
    within one pixel of its filling along the outline."""
    mask_utils = pytest.importorskip("pycocotools.mask")
    from modeldesk.datasets.seg_coco import polygon_mask, rle_decode, rle_encode

    rng = np.random.default_rng(0)
    for _ in range(5):
        mask = np.zeros((37, 53), bool)
        for _ in range(4):
            y, x = rng.integers(0, 30), rng.integers(0, 45)
            mask[y : y + rng.integers(1, 9), x : x + rng.integers(1, 9)] = True
        theirs = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
        assert rle_encode(mask)["counts"] == theirs["counts"].decode("ascii")
        np.testing.assert_array_equal(
            rle_decode({"size": [37, 53], "counts": theirs["counts"].decode()}), mask
        )
    np.testing.assert_array_equal(rle_decode({"size": [2, 3], "counts": [1, 2, 3]}), [[0, 1, 0], [1, 0, 0]])
    polygon = [[5.0, 4.0, 40.0, 6.0, 30.0, 30.0, 8.0, 25.0]]
    theirs = mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(polygon, 37, 53))).astype(bool)
    ours = polygon_mask(polygon, 37, 53)
    differ = ours != theirs
    assert differ.sum() <= 0.1 * theirs.sum()
    near_edge = np.zeros_like(differ)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            near_edge |= np.roll(np.roll(theirs, dy, 0), dx, 1) != theirs
    assert not (differ & ~near_edge).any()  # every difference lies on the outline


def test_a_coco_file_with_polygons_imports_as_masks(tmp_path):
    import json as json_module

    folder = tmp_path / "coco"
    (folder / "images").mkdir(parents=True)
    Image.new("RGB", (40, 30), (5, 5, 5)).save(folder / "images" / "a.png")
    document = {
        "images": [{"id": 1, "file_name": "a.png", "width": 40, "height": 30}],
        "categories": [{"id": 3, "name": "leaf"}],
        "annotations": [
            {
                "id": 1,
                "image_id": 1,
                "category_id": 3,
                "bbox": [10, 5, 10, 10],
                "iscrowd": 0,
                "segmentation": [[10, 5, 20, 5, 20, 15, 10, 15]],
            },
        ],
    }
    (folder / "annotations.json").write_text(json_module.dumps(document), encoding="utf-8")
    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("leaves", "segmentation")
        report = ws.import_data("leaves", folder)
        assert report["added"] == 1 and not report["failed"], report
        assert ws.labels("leaves") == ["background", "leaf"]
        mask = ws.sample_mask(ws.sample_ids("leaves")[0])
        assert (mask[6:14, 11:19] == 1).all() and (mask[20:, :] == 0).all() and mask.sum() == 100
        assert ws.stats("leaves")["boxes"] == 0
    finally:
        ws.close()


def test_labelme_outlines_import_as_masks(tmp_path):
    import json as json_module

    folder = tmp_path / "labelme"
    folder.mkdir()
    Image.new("RGB", (40, 30), (5, 5, 5)).save(folder / "a.jpg")
    shapes = [
        {"label": "leaf", "points": [[10, 5], [20, 5], [20, 15], [10, 15]], "shape_type": "polygon"},
        {"label": "rust", "points": [[12, 7], [14, 9]], "shape_type": "rectangle"},  # over the leaf
        {"label": "vein", "points": [[0, 0], [5, 5]], "shape_type": "line"},
    ]
    document = {"shapes": shapes, "imagePath": "a.jpg", "imageWidth": 40, "imageHeight": 30, "flags": {}}
    (folder / "a.json").write_text(json_module.dumps(document), encoding="utf-8")
    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("leaves", "segmentation")
        report = ws.import_data("leaves", folder)
        assert report["added"] == 1 and not report["failed"], report
        assert not any("boxes around them" in w for w in report["warnings"])
        assert ws.labels("leaves") == ["background", "leaf", "rust"]
        mask = ws.sample_mask(ws.sample_ids("leaves")[0])
        assert (mask == 2).sum() == 4 and (mask == 1).sum() == 96 and (mask == 0).sum() == 40 * 30 - 100
        with pytest.raises(ValueError, match="draw no masks"):
            ws.import_data("leaves", folder, format="cvat")
    finally:
        ws.close()


def test_yolo_seg_polygons_import_as_masks(tmp_path):
    folder = tmp_path / "yolo"
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    Image.new("RGB", (40, 20), (5, 5, 5)).save(folder / "images" / "a.jpg")
    (folder / "classes.txt").write_text("scratch\npit\n", encoding="utf-8")
    # a scratch polygon over x 10..20, y 5..15 (pixels), and a pit as a box line (cx cy w h)
    (folder / "labels" / "a.txt").write_text(
        "0 0.25 0.25 0.5 0.25 0.5 0.75 0.25 0.75\n1 0.8 0.5 0.1 0.2\n", encoding="utf-8"
    )
    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("parts", "segmentation")
        report = ws.import_data("parts", folder)
        assert report["added"] == 1 and not report["failed"], report
        assert ws.labels("parts") == ["background", "pit", "scratch"]
        mask = ws.sample_mask(ws.sample_ids("parts")[0])
        assert (mask == 2).sum() == 100 and (mask[5:15, 10:20] == 2).all()
        assert (mask == 1).sum() == 4 * 4 and (mask[8:12, 30:34] == 1).all()
        assert ws.stats("parts")["boxes"] == 0
    finally:
        ws.close()


def test_the_edge_server_answers_with_areas_and_the_mask_as_a_png(trained, tmp_path):
    from starlette.testclient import TestClient

    from modeldesk.deploy.edge.app import create_edge_app
    from modeldesk.deploy.edge.server import EdgeServer

    _ws, _model, result, probes = trained
    server = EdgeServer(tmp_path / "edge")
    try:
        client = TestClient(create_edge_app(server), base_url="http://127.0.0.1:8000")
        assert client.post(
            "/v1/edge/models", json={"source": str(result.artifact_dir), "name": "seg"}
        ).is_success
        photo = sorted((probes / "images").iterdir())[0]
        image = base64.b64encode(photo.read_bytes()).decode()
        response = client.post("/v1/models/seg/predict", json={"image": image})
        assert response.status_code == 200, response.text
        (answer,) = response.json()["predictions"]
        assert set(answer["areas"]) == set(CLASSES) and sum(answer["areas"].values()) == pytest.approx(1)
        shown = Image.open(io.BytesIO(base64.b64decode(answer["mask_png"])))
        assert shown.size == Image.open(photo).size
        assert "polygons" not in answer
        # ?polygons=1: each class's outlines in the photo's pixels, which redraw the mask (largest first)
        response = client.post("/v1/models/seg/predict?polygons=1", json={"image": image})
        (answer,) = response.json()["predictions"]
        width, height = shown.size
        shapes = []
        for value, label in enumerate(answer["classes"]):
            for points in answer["polygons"][label]:
                region = polygon_mask([[v for xy in points for v in xy]], height, width)
                shapes.append((value, region))
        redrawn = np.full((height, width), VOID, np.uint8)
        for value, region in sorted(shapes, key=lambda shape: -shape[1].sum()):
            redrawn[region] = value
        np.testing.assert_array_equal(redrawn, np.asarray(shown))
    finally:
        server.close()


def test_the_eta_follows_the_speed_measured_here(trained, monkeypatch):
    # the trainer's raw estimate is in the priors' units; the app scales it by the machine's slowdown now
    # (app.calibration), so numpy's speed measured now must not move it a second time
    from modeldesk.app.calibration import calibrated_seconds
    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.trainers.segmentation import trainer as module

    ws, _model, _result, _probes = trained
    samples = labeled_samples(ws.store, ws.project("scenes"))
    cache = ws.paths.cache / "features"
    monkeypatch.setattr(module, "_MEASURED", [4e9])
    raw = module.SegmentationTrainer().estimate(samples, TINY, cache)["eta_s"]
    monkeypatch.setattr(module, "_MEASURED", [1e9])
    assert module.SegmentationTrainer().estimate(samples, TINY, cache)["eta_s"] == raw > 0
    quick = calibrated_seconds(cache, TINY.name, raw, factor=1.0)
    assert calibrated_seconds(cache, TINY.name, raw, factor=4.0) > quick > 0
