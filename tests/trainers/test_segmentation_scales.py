"""An extra input size averaged in inside the exported graph, and per-class offsets on the logits chosen
on held-out photos: the graph computes what training's path computes, the offsets find a class the
logits under-call."""

from __future__ import annotations

import numpy as np
from PIL import Image

from modeldesk.datasets.masks import VOID
from modeldesk.deploy.preprocess import image_to_tensor, load_image
from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.segmentation.calibration import class_offsets, with_offsets
from modeldesk.trainers.segmentation.features import FeatureGrid, SegNeck, extract_maps
from modeldesk.trainers.segmentation.graph import (
    SCALED,
    SCORES_OUTPUT,
    SIZE_INPUT,
    build_segmentation_graph,
    head_logits,
    mean_of_scales,
    scale_model,
)
from modeldesk.trainers.segmentation.trainer import softmax

from .segmentation_data import scene


def _layers(rng, dim: int, classes: int = 3) -> list:
    return [
        (rng.normal(0, 0.05, (dim, 16)), rng.normal(0, 0.1, 16)),
        (rng.normal(0, 0.5, (16, classes)), rng.normal(0, 0.1, classes)),
    ]


def test_the_graphs_extra_input_size_equals_trainings_path(tmp_path):
    backbone = get_backbone("efficientnet-lite0")
    neck = SegNeck(size=128, stride=8, pyramid=(1, 2))
    rng = np.random.default_rng(0)
    layers = _layers(rng, neck.dim(backbone))
    path = tmp_path / "photo.png"
    Image.fromarray(scene(rng, 150, 100)[0]).save(path)
    cache = FeatureCache(tmp_path / "cache")
    graphs = cache.root / "graphs"
    # training's path: the main size from the cached maps (and the mirror image's), the extra size's part
    extracted = extract_maps(backbone, neck, [("p", str(path))], cache, views=("identity", "hflip"))
    grid = FeatureGrid(neck, backbone)
    main = head_logits(layers, grid(extracted["identity"].features[[0]]))
    mirrored = head_logits(layers, grid(extracted["hflip"].features[[0]]))[..., ::-1]
    main = 0.5 * (main + mirrored)
    tensor = image_to_tensor(load_image(path), neck.spec)[None]
    part = create_session(scale_model(backbone, neck, (64,), layers, graphs, flip=True).SerializeToString())
    scaled = part.run([SCALED], {"image": tensor})[0]
    assert scaled.shape == main.shape
    expected = softmax(mean_of_scales(main, scaled, 1))

    feeds = {"image": tensor, SIZE_INPUT: np.array([[150, 100]], np.float32)}
    both = build_segmentation_graph(backbone, neck, layers, 3, graphs, flip=True, sizes=(64,))
    got = create_session(both.SerializeToString()).run([SCORES_OUTPUT], feeds)[0]
    np.testing.assert_allclose(got, expected, atol=2e-3)
    one = build_segmentation_graph(backbone, neck, layers, 3, graphs, flip=True)
    alone = create_session(one.SerializeToString()).run([SCORES_OUTPUT], feeds)[0]
    np.testing.assert_allclose(alone, softmax(main), atol=2e-3)
    assert np.abs(alone - got).max() > 0.01  # the extra size counts


def test_offsets_give_an_under_called_class_back_its_pixels():
    rng = np.random.default_rng(1)
    truths, logits = [], []
    for _ in range(4):
        truth = rng.integers(0, 3, (20, 20)).astype(np.uint8)
        lg = rng.normal(0, 1.0, (3, 20, 20)).astype(np.float32)
        lg[truth, np.arange(20)[:, None], np.arange(20)[None, :]] += 2.5  # the right class leads...
        lg[2] -= 2.0  # ...except that class 2 is called far too rarely
        truth[0, :5] = VOID  # not labeled: counts nowhere
        truths.append(truth)
        logits.append(lg)
    offsets, before, after = class_offsets(logits, truths, 3)
    assert after > before + 0.05
    assert offsets[2] - max(offsets[0], offsets[1]) > 1.0
    layers = with_offsets([(np.eye(3), np.zeros(3))], offsets)
    np.testing.assert_allclose(layers[-1][1], offsets, atol=1e-6)


def test_offsets_leave_good_logits_alone():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 3, (30, 30)).astype(np.uint8)
    lg = rng.normal(0, 0.3, (3, 30, 30)).astype(np.float32)
    lg[truth, np.arange(30)[:, None], np.arange(30)[None, :]] += 3.0
    offsets, before, after = class_offsets([lg], [truth], 3)
    assert before == after == 1.0 and not offsets.any()
