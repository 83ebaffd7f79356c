"""Feature extraction with a Dask cluster taking part: bytes travel, vectors come back to the cache."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from modeldesk.scheduler import CostModel
from modeldesk.trainers.cluster_features import (
    ClusterExtraction,
    RemoteFeatures,
    read_payload,
    runtime_versions,
)
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.features import EMBEDDING, FeatureExtractor, extract_feature_views

from .conftest import write_dataset

pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    samples = write_dataset(tmp_path_factory.mktemp("cluster-images"), per_class=6)
    return [(s.key, s.path) for s in samples]


def test_runtime_versions_name_modeldesk_the_backbone_and_onnxruntime():
    versions = runtime_versions("efficientnet-lite0")
    assert set(versions) == {"ModelDesk", "backbone", "onnxruntime"}
    assert versions["backbone"].startswith("efficientnet-lite0@")


def test_remote_features_take_bytes_and_name_what_they_could_not_decode(backbone, graph_dir, images):
    remote = RemoteFeatures(backbone.name, EMBEDDING, ("identity", "hflip"), graph_dir=graph_dir)
    payload = read_payload(images[:3]) + [
        ("broken.png", b"not an image", None),
        ("gone.png", None, "cannot read"),
    ]
    out = remote({"device": "cpu", "threads": 1}, payload)
    assert [o.shape for o in out[:3]] == [(2, 1280)] * 3
    assert "not an image" in out[3] and out[4] == "cannot read"


def test_a_cluster_run_fills_the_cache_like_a_local_run(tmp_path, backbone, graph_dir, images):
    from modeldesk.scheduler.cluster import DaskBackend

    local = extract_feature_views(
        backbone, images, FeatureCache(tmp_path / "local"), views=("identity", "hflip"), graph_dir=graph_dir
    )
    cache = FeatureCache(tmp_path / "cluster")
    with DaskBackend(local_workers=2, max_chunk_items=2) as backend:
        got = extract_feature_views(
            backbone,
            images,
            cache,
            views=("identity", "hflip"),
            graph_dir=graph_dir,
            cluster=backend,
            batch_size=2,
        )
    plan = got["identity"].plan
    workers = [d["name"] for d in plan["devices"] if d["name"].startswith("dask:")]
    assert len(workers) == 2
    assert sum(plan["run_stats"][name]["items"] for name in plan["run_stats"]) == len(images)
    assert all(plan["run_stats"][name]["items"] > 0 for name in workers)
    for view in ("identity", "hflip"):
        assert got[view].keys == local[view].keys
        np.testing.assert_allclose(got[view].features, local[view].features, atol=1e-4)
    # each device was probed once and is remembered by its machine's identity
    remembered = {e["device"] for e in CostModel(cache.root).entries(plan["work_key"])}
    assert "cpu" in remembered and any(d.startswith("dask:") for d in remembered)
    assert plan["eta_s"] and all(row["estimated_items_per_s"] for row in plan["per_device"])


def test_unpack_writes_each_vector_once_and_reports_failures_with_the_path(
    tmp_path, backbone, graph_dir, images
):
    extractor = FeatureExtractor(backbone, FeatureCache(tmp_path), views=("identity",), graph_dir=graph_dir)
    work = ClusterExtraction(extractor)
    chunk = images[:2] + [("k" * 8, str(tmp_path / "missing.png"))]
    out = work.remote({"device": "cpu", "threads": 1}, work.pack(None, chunk))
    results = work.unpack(None, chunk, out)
    assert results[:2] == [None, None]
    assert results[2]["file"].endswith("missing.png") and "missing.png" in results[2]["reason"]
    assert extractor.cache.cached_keys(extractor.namespace("identity")) == {images[0][0], images[1][0]}


def _versions_differ_on_workers():
    """This app (the test's main thread) has onnxruntime 1.20.0, the in-process workers 1.17.0."""
    import threading

    here = threading.current_thread() is threading.main_thread()
    return {"ModelDesk": "1.0", "onnxruntime": "1.20.0" if here else "1.17.0"}


def test_a_worker_with_another_onnxruntime_is_refused_with_a_message_naming_it():
    from modeldesk.scheduler.cluster import ClusterError, DaskBackend

    with DaskBackend(local_workers=1, versions=functools.partial(_versions_differ_on_workers)) as backend:
        with pytest.raises(ClusterError, match=r"onnxruntime 1\.17\.0 \(this app: 1\.20\.0\)"):
            backend.device_shares()
        (worker,) = backend.workers()
        assert "onnxruntime" in worker["refused"] and "ModelDesk" not in worker["refused"]
