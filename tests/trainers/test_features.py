"""Feature extraction and the feature cache: only missing work is done, failures are named."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from modeldesk.deploy.preprocess import preprocess_batch
from modeldesk.trainers import features as features_module
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.features import (
    EMBEDDING,
    Cancelled,
    FeatureSpec,
    Pool,
    extract_feature_views,
    extract_features,
    feature_model,
    grid_pool_matrix,
)


@pytest.fixture
def counting_sessions(monkeypatch):
    """Counts the images the backbone is run on."""
    seen = {"images": 0, "sessions": 0}
    real = features_module.create_session

    class Counting:
        def __init__(self, session):
            self.session = session

        def get_inputs(self):
            return self.session.get_inputs()

        def run(self, names, feeds):
            seen["images"] += len(next(iter(feeds.values())))
            return self.session.run(names, feeds)

    def create(*args, **kwargs):
        seen["sessions"] += 1
        return Counting(real(*args, **kwargs))

    monkeypatch.setattr(features_module, "create_session", create)
    return seen


def items_of(samples):
    return [(s.key, s.path) for s in samples]


def test_cache_recomputes_only_what_is_missing(
    tmp_path, backbone, graph_dir, synthetic_samples, counting_sessions
):
    cache = FeatureCache(tmp_path / "features")
    first = items_of(synthetic_samples[:10])
    result = extract_features(backbone, first, cache, threads=1, graph_dir=graph_dir, batch_size=4)
    assert counting_sessions["images"] == 10 and result.computed == 10
    assert result.features.shape == (10, 1280) and result.keys == [k for k, _ in first]

    again = extract_features(backbone, first, cache, threads=1, graph_dir=graph_dir)
    assert counting_sessions["images"] == 10 and again.computed == 0
    np.testing.assert_array_equal(again.features, result.features)

    more = items_of(synthetic_samples[:13])
    grown = extract_features(backbone, more, cache, threads=1, graph_dir=graph_dir)
    assert counting_sessions["images"] == 13 and grown.computed == 3
    assert grown.features.shape == (13, 1280)


def test_stopping_mid_way_keeps_finished_batches(
    tmp_path, backbone, graph_dir, synthetic_samples, counting_sessions
):
    cache = FeatureCache(tmp_path / "features")
    items = items_of(synthetic_samples[:12])

    def stop_after_two_batches():
        return counting_sessions["images"] >= 8

    with pytest.raises(Cancelled):
        extract_features(
            backbone,
            items,
            cache,
            threads=1,
            graph_dir=graph_dir,
            batch_size=4,
            should_stop=stop_after_two_batches,
        )
    namespace = (backbone.key, EMBEDDING.name, "identity")
    finished = len(cache.cached_keys(namespace))
    assert finished == counting_sessions["images"] == 8  # everything computed was kept
    assert not list(cache.folder(*namespace).glob("*.tmp"))
    result = extract_features(backbone, items, cache, threads=1, graph_dir=graph_dir)
    assert counting_sessions["images"] - finished == 12 - finished and len(result.keys) == 12


def test_auto_device_goes_through_the_scheduler(tmp_path, backbone, graph_dir, synthetic_samples):
    result = extract_features(
        backbone, items_of(synthetic_samples[:5]), FeatureCache(tmp_path / "f"), graph_dir=graph_dir
    )
    assert len(result.keys) == 5 and result.plan["devices"]
    assert result.plan["devices"][0]["name"].startswith("cpu")


def test_undecodable_files_are_skipped_and_named(tmp_path, backbone, graph_dir, synthetic_samples):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 this is not really a jpeg")
    missing = tmp_path / "gone.png"
    items = items_of(synthetic_samples[:3]) + [("broken", str(broken)), ("gone", str(missing))]
    result = extract_features(backbone, items, FeatureCache(tmp_path / "f"), threads=1, graph_dir=graph_dir)
    assert result.keys == [k for k, _ in items[:3]]
    assert {entry["file"] for entry in result.skipped} == {str(broken), str(missing)}
    assert all(entry["reason"] for entry in result.skipped)


def test_views_decode_once_and_flip_matches_a_flipped_file(tmp_path, backbone, graph_dir, synthetic_samples):
    sample = synthetic_samples[0]
    flipped_path = tmp_path / "flipped.png"
    Image.open(sample.path).transpose(Image.FLIP_LEFT_RIGHT).save(flipped_path)
    cache = FeatureCache(tmp_path / "f")
    both = extract_feature_views(
        backbone,
        [(sample.key, sample.path)],
        cache,
        views=("identity", "hflip"),
        threads=1,
        graph_dir=graph_dir,
    )
    plain = extract_features(
        backbone, [("flipped", str(flipped_path))], cache, threads=1, graph_dir=graph_dir
    )
    # squash-resizing then flipping equals flipping then resizing up to interpolation rounding
    np.testing.assert_allclose(both["hflip"].features, plain.features, atol=0.05)
    assert not np.allclose(both["hflip"].features, both["identity"].features, atol=1e-3)


def test_grid_pool_matrix_is_adaptive_average_pooling():
    rng = np.random.default_rng(0)
    fmap = rng.normal(size=(7, 7))
    pooled = fmap.reshape(-1) @ grid_pool_matrix(7, 7, 2)
    expected = [fmap[0:4, 0:4].mean(), fmap[0:4, 3:7].mean(), fmap[3:7, 0:4].mean(), fmap[3:7, 3:7].mean()]
    np.testing.assert_allclose(pooled, expected, rtol=1e-6)


def test_feature_graph_equals_numpy_pooling_of_backbone_maps(backbone, graph_dir, photos_dir):
    from modeldesk.deploy.runtime import create_session

    spec = FeatureSpec(
        "test-grid", (Pool("embedding"), Pool("stride16", grid=3), Pool("stride32", mode="max"))
    )
    batch = preprocess_batch([photos_dir / "chelsea.jpg", photos_dir / "coffee.jpg"], backbone.spec)
    graph = create_session(feature_model(backbone, spec, graph_dir).SerializeToString(), device="cpu")
    got = graph.run(["features"], {"image": batch})[0]
    plain = backbone.create_session(graph_dir, device="cpu")
    emb, s16, s32 = plain.run(["embedding", "stride16", "stride32"], {"image": batch})
    grid = (s16.reshape(2, 112, -1) @ grid_pool_matrix(14, 14, 3)).reshape(2, -1)
    expected = np.concatenate([emb, grid, s32.max(axis=(2, 3))], axis=1)
    assert got.shape == (2, spec.dim(backbone)) == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=1e-4)


def test_cache_rejects_unsafe_keys(tmp_path):
    cache = FeatureCache(tmp_path)
    with pytest.raises(ValueError, match="feature cache key"):
        cache.put(("b", "f", "v"), "../escape", np.zeros(3))
    cache.put(("b", "f", "v"), "abc", np.arange(3))
    assert cache.missing(("b", "f", "v"), ["abc", "def", "def"]) == ["def"]
    np.testing.assert_array_equal(cache.get(("b", "f", "v"), "abc"), [0, 1, 2])


@pytest.mark.parametrize("grid", [1, 3, 4])
def test_grid_pooling_nodes_adapt_to_the_map_size(grid):
    """One graph pools maps of any size as ``grid_pool_matrix`` of that size would."""
    from onnx import helper

    from modeldesk.deploy.runtime import create_session
    from modeldesk.trainers.features import adaptive_pool_nodes

    nodes, inits, out = adaptive_pool_nodes("map", grid, "p/")
    graph = helper.make_graph(
        nodes,
        "pool",
        [helper.make_tensor_value_info("map", 1, ["N", 5, "H", "W"])],
        [helper.make_tensor_value_info(out, 1, ["N", "D"])],
        inits,
    )
    session = create_session(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(),
        device="cpu",
    )
    rng = np.random.default_rng(grid)
    for height, width in ((14, 14), (10, 10), (7, 7), (12, 9), (5, 4), (2, 2)):
        fmap = rng.normal(size=(2, 5, height, width)).astype(np.float32)
        expected = (fmap.reshape(2, 5, -1) @ grid_pool_matrix(height, width, grid)).reshape(2, -1)
        np.testing.assert_allclose(session.run(None, {"map": fmap})[0], expected, atol=1e-5)
