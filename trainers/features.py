"""Feature extraction: backbone outputs pooled into one vector per image and view, cached on disk.

The pooling is built as ONNX nodes appended to the backbone graph, and the exported model reuses the
very same nodes, so the features a head is trained on are exactly the ones the exported graph computes.
Decoding runs in a thread pool a few batches ahead of inference (ONNX Runtime releases the GIL).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from modeldesk.deploy.preprocess import ImageDecodeError, preprocess_image
from modeldesk.deploy.runtime import create_session
from modeldesk.scheduler import CostModel, run_partitioned
from modeldesk.scheduler import plan as plan_work
from modeldesk.scheduler.partition import Cancelled
from modeldesk.trainers.backbones import Backbone
from modeldesk.trainers.backbones.registry import write_atomically
from modeldesk.trainers.cluster_features import ClusterExtraction, open_cluster, probe_for
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.views import VIEWS, apply_view, view_nodes  # noqa: F401  (re-exported)

log = logging.getLogger(__name__)

FEATURES_OUTPUT = "features"
_STRIDES = {"stride8": 8, "stride16": 16, "stride32": 32}
# Part of the feature graph's file name: graphs written before grid pooling adapted to the map size
# (a fixed (H*W, g*g) matrix) are not reused, so new models can be compressed at other input sizes.
POOLING_VERSION = "adaptive-v1"


@dataclass(frozen=True)
class Pool:
    """How one backbone output becomes part of the feature vector.

    ``output`` is a backbone output; for a feature map, ``grid`` g averages it over a g x g grid of
    (possibly overlapping) cells, like adaptive average pooling, giving channels * g * g values;
    ``mode="max"`` takes the global maximum per channel instead. A vector output is used as is.
    """

    output: str
    grid: int = 1
    mode: str = "avg"

    def __post_init__(self):
        if self.mode not in ("avg", "max"):
            raise ValueError(f"pool mode must be 'avg' or 'max', not {self.mode!r}")
        if self.grid < 1:
            raise ValueError("pool grid must be at least 1")


@dataclass(frozen=True)
class FeatureSpec:
    """A named feature vector made of pooled backbone outputs; ``name`` is part of the cache key."""

    name: str
    parts: tuple[Pool, ...]

    def dim(self, backbone: Backbone) -> int:
        """Length of the feature vector."""
        total = 0
        for part in self.parts:
            channels = backbone.outputs[part.output]
            total += channels * (part.grid**2 if part.output in _STRIDES and part.mode == "avg" else 1)
        return total


EMBEDDING = FeatureSpec("embedding", (Pool("embedding"),))


def grid_pool_matrix(height: int, width: int, grid: int) -> np.ndarray:
    """(height*width, grid*grid) matrix averaging a map over a grid of adaptive-pooling cells."""

    def bins(length):
        return [(math.floor(i * length / grid), math.ceil((i + 1) * length / grid)) for i in range(grid)]

    matrix = np.zeros((height, width, grid, grid), np.float64)
    for gy, (y0, y1) in enumerate(bins(height)):
        for gx, (x0, x1) in enumerate(bins(width)):
            matrix[y0:y1, x0:x1, gy, gx] = 1.0 / ((y1 - y0) * (x1 - x0))
    return matrix.reshape(height * width, grid * grid).astype(np.float32)


def _cell_matrix(length: str, grid: int, p: str, axis: str) -> tuple[list, list, str]:
    """Nodes making the (grid, length) matrix that averages a run of ``length`` values over ``grid``
    adaptive-pooling cells, from the length the graph sees at run time (an int64 scalar tensor).

    Cell i spans [floor(i * L / g), ceil((i + 1) * L / g)), as :func:`grid_pool_matrix` and adaptive
    average pooling do; the matrix holds 1 / cell length inside the cell and 0 elsewhere.
    """
    q = f"{p}{axis}/"
    cells = np.arange(grid, dtype=np.int64)
    inits = [
        numpy_helper.from_array(cells[:, None], q + "i"),
        numpy_helper.from_array(cells[:, None] + 1, q + "i1"),
        numpy_helper.from_array(np.array(grid, np.int64), q + "g"),
        numpy_helper.from_array(np.array(grid - 1, np.int64), q + "g1"),
        numpy_helper.from_array(np.array(0, np.int64), q + "zero"),
        numpy_helper.from_array(np.array(1, np.int64), q + "one"),
    ]
    n = helper.make_node
    nodes = [
        n("Mul", [q + "i", length], [q + "lo_num"], name=q + "lo_num"),
        n("Div", [q + "lo_num", q + "g"], [q + "lo"], name=q + "lo"),  # floor: both are non-negative
        n("Mul", [q + "i1", length], [q + "hi_num"], name=q + "hi_num"),
        n("Add", [q + "hi_num", q + "g1"], [q + "hi_up"], name=q + "hi_up"),
        n("Div", [q + "hi_up", q + "g"], [q + "hi"], name=q + "hi"),  # ceil
        n("Range", [q + "zero", length, q + "one"], [q + "pos"], name=q + "pos"),
        n("GreaterOrEqual", [q + "pos", q + "lo"], [q + "after"], name=q + "after"),
        n("Less", [q + "pos", q + "hi"], [q + "before"], name=q + "before"),
        n("And", [q + "after", q + "before"], [q + "inside"], name=q + "inside"),
        n("Cast", [q + "inside"], [q + "mask"], name=q + "mask", to=onnx.TensorProto.FLOAT),
        n("Sub", [q + "hi", q + "lo"], [q + "count"], name=q + "count"),
        n("Cast", [q + "count"], [q + "countf"], name=q + "countf", to=onnx.TensorProto.FLOAT),
        n("Div", [q + "mask", q + "countf"], [q + "cells"], name=q + "cells"),
    ]
    return nodes, inits, q + "cells"


def adaptive_pool_nodes(source: str, grid: int, p: str) -> tuple[list, list, str]:
    """Nodes averaging map ``source`` (N, C, H, W) over a ``grid`` x ``grid`` grid of adaptive cells
    computed from the map's own H and W, giving (N, C * grid * grid) in (channel, row, column) order.

    The same numbers as ``reshape(N, C, H*W) @ grid_pool_matrix(H, W, grid)``, but for any map size,
    so the model still means the same when it is given smaller or larger images (compression).
    """
    nodes, inits = [], []
    axes = {}
    for axis, dim in (("rows", 2), ("cols", 3)):
        length = f"{p}{axis}/length"
        nodes.append(
            helper.make_node("Shape", [source], [length + "1"], name=length + "1", start=dim, end=dim + 1)
        )
        inits.append(numpy_helper.from_array(np.array([0], np.int64), f"{p}{axis}/axis0"))
        nodes.append(helper.make_node("Squeeze", [length + "1", f"{p}{axis}/axis0"], [length], name=length))
        n, i, axes[axis] = _cell_matrix(length, grid, p, axis)
        nodes += n
        inits += i
    nodes += [
        helper.make_node(
            "MatMul", [axes["rows"], source], [p + "by_rows"], name=p + "by_rows"
        ),  # (N, C, g, W)
        helper.make_node("Transpose", [axes["cols"]], [p + "cols_t"], name=p + "cols_t", perm=[1, 0]),
        helper.make_node(
            "MatMul", [p + "by_rows", p + "cols_t"], [p + "grid"], name=p + "grid"
        ),  # (N, C, g, g)
        helper.make_node("Flatten", [p + "grid"], [p + "out"], name=p + "flatten", axis=1),
    ]
    return nodes, inits, p + "out"


def feature_nodes(spec: FeatureSpec, backbone: Backbone, prefix: str = "feat/") -> tuple[list, list]:
    """Nodes and initializers computing output ``features`` from the backbone's outputs.

    Grid pooling adapts its cells to the feature map's size at run time (see
    :func:`adaptive_pool_nodes`), so the graph accepts other input sizes with the same meaning.
    """
    nodes, inits, pieces = [], [], []
    for index, part in enumerate(spec.parts):
        p = f"{prefix}{index}/"
        if part.output not in backbone.outputs:
            raise ValueError(f"backbone {backbone.name} has no output {part.output!r}")
        if part.output not in _STRIDES:
            pieces.append(part.output)
            continue
        if part.mode == "max":
            nodes.append(helper.make_node("GlobalMaxPool", [part.output], [p + "max"], name=p + "max"))
            nodes.append(helper.make_node("Flatten", [p + "max"], [p + "out"], name=p + "flatten", axis=1))
            pieces.append(p + "out")
        else:
            n, i, out = adaptive_pool_nodes(part.output, part.grid, p)
            nodes += n
            inits += i
            pieces.append(out)
    if len(pieces) == 1:
        nodes.append(helper.make_node("Identity", pieces, [FEATURES_OUTPUT], name=prefix + "out"))
    else:
        nodes.append(helper.make_node("Concat", pieces, [FEATURES_OUTPUT], name=prefix + "concat", axis=1))
    return nodes, inits


def feature_model(backbone: Backbone, spec: FeatureSpec, graph_dir) -> onnx.ModelProto:
    """The backbone graph with ``features`` (N, spec.dim) as its only output."""
    model = backbone.load_onnx(graph_dir)
    nodes, inits = feature_nodes(spec, backbone)
    graph = model.graph
    graph.node.extend(nodes)
    graph.initializer.extend(inits)
    del graph.output[:]
    graph.output.append(
        helper.make_tensor_value_info(FEATURES_OUTPUT, onnx.TensorProto.FLOAT, ["N", spec.dim(backbone)])
    )
    return model


def feature_model_path(backbone: Backbone, spec: FeatureSpec, graph_dir) -> Path:
    """The feature graph as a file in ``graph_dir`` (built and written atomically when missing)."""
    digest = hashlib.sha1((repr(spec.parts) + POOLING_VERSION).encode()).hexdigest()[:10]
    path = Path(graph_dir) / f"{backbone.name}-{backbone.version}-{spec.name}-{digest}.onnx"
    if not path.is_file():
        write_atomically(path, feature_model(backbone, spec, graph_dir).SerializeToString())
    return path


@dataclass
class ExtractionResult:
    """Features of every item that decoded, in input order, and the items that did not."""

    keys: list[str]
    features: np.ndarray
    skipped: list[dict] = field(default_factory=list)
    computed: int = 0
    plan: dict | None = None


class FeatureExtractor:
    """Computes missing feature vectors for (key, path) items and stores them in a FeatureCache.

    Each image is decoded once for all ``views``. ``process_chunk(share, chunk)`` is the per-device
    unit of work a scheduler calls with a device share (an object or dict with ``name`` or
    ``device``, and ``threads``) and a list of items; it returns one entry per item: None when its
    features are cached, else ``{"file", "reason"}``. Sessions are created once per share.
    """

    def __init__(
        self,
        backbone: Backbone,
        cache: FeatureCache,
        *,
        features: FeatureSpec = EMBEDDING,
        views: Sequence[str] = ("identity",),
        graph_dir=None,
        batch_size: int = 32,
        decode_threads: int = 2,
        progress: Callable[[int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ):
        for view in views:
            if view not in VIEWS:
                raise ValueError(f"unknown view {view!r}; choose from {', '.join(VIEWS)}")
        self.backbone = backbone
        self.cache = cache
        self.features = features
        self.views = tuple(views)
        self.graph_dir = Path(graph_dir) if graph_dir is not None else cache.root / "graphs"
        self.batch_size = batch_size
        self.decode_threads = decode_threads
        self.progress = progress
        self.should_stop = should_stop
        self._model_path: Path | None = None
        self._sessions: dict = {}
        self._lock = threading.Lock()

    def namespace(self, view: str) -> tuple[str, str, str]:
        """The cache namespace of ``view``'s vectors."""
        return (self.backbone.key, self.features.name, view)

    def model_path(self) -> Path:
        """The feature graph file (built on first use, then cached in ``graph_dir``)."""
        with self._lock:
            if self._model_path is None:
                self._model_path = feature_model_path(self.backbone, self.features, self.graph_dir)
            return self._model_path

    def session(self, share):
        """The ONNX Runtime session for a device share, created on first use."""
        get = (
            share.get if isinstance(share, dict) else lambda name, default=None: getattr(share, name, default)
        )
        device = get("local_device", None) or get("device", None) or get("name", None) or "auto"
        threads = get("threads", None)
        with self._lock:
            session = self._sessions.get((device, threads))
        if session is None:
            # No spinning: idle inference threads would take the cores the decoders need.
            session = create_session(self.model_path(), device=device, threads=threads, spin=False)
            with self._lock:
                self._sessions[(device, threads)] = session
        return session

    def __getstate__(self):
        # Picklable for cluster workers: sessions and the lock are rebuilt there.
        state = dict(self.__dict__, _sessions={}, _lock=None, progress=None, should_stop=None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def input_spec(self):
        """How a photo becomes the graph's input (the backbone's own, unless a subclass letterboxes)."""
        return self.backbone.spec

    def _decode(self, item):
        key, path = item
        try:
            return key, path, preprocess_image(path, self.input_spec), None
        except ImageDecodeError as exc:
            return key, path, None, str(exc)
        except OSError as exc:
            return key, path, None, f"{path}: cannot read file ({exc.strerror or exc})"

    def _store(self, view, keys, vectors):
        namespace = self.namespace(view)
        for key, vector in zip(keys, vectors):
            self.cache.put(namespace, key, vector)

    def process_chunk(self, share, chunk: Sequence[tuple[str, str]]) -> list:
        """Compute and cache features of ``chunk`` on ``share``'s device; one result per item."""
        chunk = list(chunk)
        batches = [chunk[i : i + self.batch_size] for i in range(0, len(chunk), self.batch_size)]
        results: dict = {}
        with ThreadPoolExecutor(max_workers=max(1, self.decode_threads), thread_name_prefix="decode") as pool:
            # Decoding starts before the session exists, so creating it costs no extra wall time.
            pending: deque = deque(
                [pool.submit(self._decode, item) for item in batch] for batch in batches[:2]
            )
            next_batch = len(pending)
            writes = []
            try:
                session = self.session(share)
                input_name = session.get_inputs()[0].name
                while pending:
                    if self.should_stop is not None and self.should_stop():
                        raise Cancelled("feature extraction was stopped")
                    decoded = [f.result() for f in pending.popleft()]
                    if next_batch < len(batches):
                        pending.append([pool.submit(self._decode, item) for item in batches[next_batch]])
                        next_batch += 1
                    good = [(key, tensor) for key, _, tensor, _ in decoded if tensor is not None]
                    for key, path, tensor, reason in decoded:
                        results[key] = None
                        if tensor is None:
                            log.warning("skipping %s", reason)
                            results[key] = {"file": str(path), "reason": reason}
                    if good:
                        keys = [key for key, _ in good]
                        batch = np.stack([t for _, t in good])
                        for view in self.views:
                            vectors = session.run([FEATURES_OUTPUT], {input_name: apply_view(batch, view)})[0]
                            writes.append(pool.submit(self._store, view, keys, vectors))
                    if self.progress is not None:
                        self.progress(len(decoded))
            finally:
                for futures in pending:
                    for future in futures:
                        future.cancel()
            for write in writes:
                write.result()
        return [results.get(key) for key, _ in chunk]


def plan_feature_extraction(
    backbone: Backbone,
    n_items: int,
    cache: FeatureCache,
    *,
    views: Sequence[str] = ("identity",),
    features: FeatureSpec = EMBEDDING,
    device: str = "auto",
    threads: int | None = None,
    batch_size: int = 32,
    cluster=None,
    probe=None,
):
    """The scheduler's plan for extracting ``n_items`` images (``eta_s`` once throughput was measured).

    With ``threads`` the caller fixes the work to one worker with that many threads on ``device``.
    ``cluster`` (a started backend, see ``cluster_features.open_cluster``) adds its workers, and
    ``probe`` measures each device the cost model does not know yet. The measured throughput is
    kept in ``cache.root`` (the scheduler's cost model file).
    """
    devices = None
    if threads:
        devices = [
            {
                "name": "cpu" if device in ("auto", "cpu") else device,
                "threads": threads,
                "batch_size": batch_size,
            }
        ] + ([cluster] if cluster is not None else [])
        cluster = None
    return plan_work(
        f"features/{backbone.key}/{features.name}/{len(tuple(views))}",
        n_items,
        device=device,
        cost_model=CostModel(cache.root),
        batch_size=batch_size,
        devices=devices,
        cluster=cluster,
        probe=probe,
    )


def staged_estimate(plan, parts: dict, features_to_compute: int) -> dict:
    """A trainer's estimate ``{"eta_s", "plan"}``: the sum of its stages' seconds ``parts``, with the
    feature extraction ``plan`` (from :func:`plan_feature_extraction`) and each stage in the plan."""
    eta = round(sum(parts.values()), 1)
    return {
        "eta_s": eta,
        "plan": {
            **plan.to_dict(),
            "eta_s": eta,
            "features_to_compute": features_to_compute,
            "seconds": {k: round(v, 2) for k, v in parts.items()},
        },
    }


def extract_feature_views(
    backbone: Backbone,
    items,
    cache: FeatureCache,
    *,
    views: Sequence[str] = ("identity",),
    features: FeatureSpec = EMBEDDING,
    device: str = "auto",
    threads: int | None = None,
    batch_size: int = 32,
    graph_dir=None,
    progress=None,
    should_stop=None,
    cluster=None,
    make_extractor=None,
) -> dict:
    """Like :func:`extract_features` for several views at once (each image is decoded once).

    ``cluster`` (an address, ``{"address", "credentials"}`` or a DaskBackend) adds the cluster's
    workers to this machine's devices: image bytes travel to them, vectors come back to ``cache``.
    ``make_extractor`` replaces :class:`FeatureExtractor` (same arguments), e.g. to decode differently.
    Returns a dict view -> ExtractionResult; every result has the same keys and ``skipped``.
    """
    items = [(str(key), str(path)) for key, path in items]
    views = tuple(views)
    missing = set()
    for view in views:
        missing.update(cache.missing((backbone.key, features.name, view), [key for key, _ in items]))
    todo, seen = [], set()
    for key, path in items:
        if key in missing and key not in seen:
            seen.add(key)
            todo.append((key, path))
    total, done = len(items), len(items) - len(todo)
    if progress is not None:
        progress(done, total)

    def advance(count):
        nonlocal done
        done += count
        if progress is not None:
            progress(min(done, total), total)

    skipped: list[dict] = []
    plan_info = None
    if todo:
        started = time.perf_counter()
        extractor = (make_extractor or FeatureExtractor)(
            backbone,
            cache,
            features=features,
            views=views,
            graph_dir=graph_dir,
            batch_size=batch_size,
            should_stop=should_stop,
        )
        with open_cluster(cluster, backbone.name) as backend:
            work = extractor.process_chunk if backend is None else ClusterExtraction(extractor)
            plan = plan_feature_extraction(
                backbone,
                len(todo),
                cache,
                views=views,
                features=features,
                device=device,
                threads=threads,
                batch_size=batch_size,
                cluster=backend,
                probe=None if backend is None else probe_for(work, todo),
            )
            base = done
            # Smaller local chunks beside a cluster, so no device holds a big last one alone.
            outcome = run_partitioned(
                plan,
                todo,
                work,
                chunk_size=batch_size * (8 if backend is None else 2),
                progress=lambda finished, _total, _eta: advance(base + finished - done),
                should_stop=should_stop,
            )
        skipped = [entry for entry in outcome if entry is not None]
        plan_info = plan.to_dict()
        log.info(
            "extracted %d %s feature vectors (%s) in %.1f s",
            len(todo),
            features.name,
            "+".join(views),
            time.perf_counter() - started,
        )
    bad = {entry["file"] for entry in skipped}
    out = {}
    for view in views:
        namespace = (backbone.key, features.name, view)
        have = cache.cached_keys(namespace)
        keys = [key for key, path in items if key in have and path not in bad]
        vectors = (
            cache.get_many(namespace, keys) if keys else np.zeros((0, features.dim(backbone)), np.float32)
        )
        out[view] = ExtractionResult(
            keys=keys,
            features=vectors,
            skipped=list(skipped),
            computed=len(todo) - len(skipped),
            plan=plan_info,
        )
    return out


def extract_features(
    backbone: Backbone,
    items,
    cache: FeatureCache,
    *,
    view: str = "identity",
    features: FeatureSpec = EMBEDDING,
    device: str = "auto",
    threads: int | None = None,
    batch_size: int = 32,
    graph_dir=None,
    progress=None,
    should_stop=None,
) -> ExtractionResult:
    """Features for (key, path) items, computing only those not already in ``cache``.

    Parameters
    ----------
    backbone : the frozen network (``get_backbone(...)``).
    items : iterable of (key, path); key is the media content hash.
    cache : where vectors are stored, per (key, backbone, features, view).
    view : ``"identity"`` or ``"hflip"`` (mirrored image).
    features : which pooled outputs make the vector.
    device, threads : passed to ``deploy.runtime.create_session``.
    progress : ``progress(done, total)`` after each batch (done counts cached items too).
    should_stop : polled between batches; when it returns True, ``Cancelled`` is raised and every
        finished vector stays cached.

    Returns
    -------
    ExtractionResult with the keys that have features (input order), an (n, d) array, and
    ``skipped``: [{file, reason}] for items that could not be decoded.
    """
    return extract_feature_views(
        backbone,
        items,
        cache,
        views=(view,),
        features=features,
        device=device,
        threads=threads,
        batch_size=batch_size,
        graph_dir=graph_dir,
        progress=progress,
        should_stop=should_stop,
    )[view]
