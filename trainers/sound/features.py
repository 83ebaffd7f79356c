"""Sound features: each clip (and each augmented view of it) through the backbone graph, cached on disk.

Clips are decoded by ``deploy.audio_input`` (the one preprocessing the exported model's users run
too), and each view is made from that waveform in numpy before the graph:

``identity``     the clip as it is (the only view the model sees at prediction time)
``quiet``        6 dB quieter                 ``loud``    6 dB louder (clipped to [-1, 1])
``early``        moved 120 ms earlier          ``late``   moved 120 ms later (silence fills in)
``noise-<key>``  mixed with the background clip ``<key>`` at 6 to 20 dB signal-to-noise ratio

Views are deterministic (seeded by the clip's key), so cached vectors stay valid. Several clips
are run at once in a small thread pool (ONNX Runtime releases the GIL; one thread per run).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from modeldesk.deploy.audio_input import AudioDecodeError, AudioSpec, load_waveform
from modeldesk.deploy.runtime import create_session
from modeldesk.scheduler import CostModel
from modeldesk.scheduler.partition import Cancelled
from modeldesk.trainers.backbones.registry import write_atomically
from modeldesk.trainers.backbones.sound import (
    FEATURES,
    INPUT_NAME,
    SoundFeatures,
    backbone_key,
    feature_model,
)
from modeldesk.trainers.feature_cache import FeatureCache

log = logging.getLogger(__name__)

PLAIN_VIEWS = ("identity", "quiet", "loud", "early", "late")
SHIFT_SECONDS = 0.12
WORK_KEY = "sound-features"
#: one clip view through the graph on one CPU thread, before measuring, in the priors' units (2 busy
#: cores): 760 views of the spoken digits took 2.5 s on 2 threads at probe slowdown 0.9 (2026-12-04)
DEFAULT_SECONDS_PER_VIEW = 0.01


def noise_view(background_key: str) -> str:
    """The view name of mixing in one background clip."""
    return f"noise-{background_key[:16]}"


def apply_view(
    waveform: np.ndarray, view: str, key: str, spec: AudioSpec, backgrounds: dict | None = None
) -> np.ndarray:
    """The numpy waveform of ``view`` of a clip (see the module docstring)."""
    if view == "identity":
        return waveform
    if view in ("quiet", "loud"):
        return np.clip(waveform * (0.5 if view == "quiet" else 2.0), -1.0, 1.0).astype(np.float32)
    if view in ("early", "late"):
        shift = int(SHIFT_SECONDS * spec.sample_rate)
        out = np.zeros_like(waveform)
        if view == "early":
            out[: len(waveform) - shift] = waveform[shift:]
        else:
            out[shift:] = waveform[: len(waveform) - shift]
        return out
    if view.startswith("noise-") and backgrounds and view in backgrounds:
        rng = np.random.default_rng(int(hashlib.sha1(f"{key}/{view}".encode()).hexdigest()[:8], 16))
        noise = backgrounds[view]
        start = int(rng.integers(0, max(1, len(noise) - len(waveform) + 1)))
        noise = np.resize(noise[start : start + len(waveform)], len(waveform))
        power = float(np.mean(waveform**2)) + 1e-12
        noise_power = float(np.mean(noise**2)) + 1e-12
        snr_db = float(rng.uniform(6.0, 20.0))
        gain = np.sqrt(power / (noise_power * 10 ** (snr_db / 10)))
        return np.clip(waveform + gain * noise, -1.0, 1.0).astype(np.float32)
    raise ValueError(f"unknown sound view {view!r}")


@dataclass
class SoundFeatureSet:
    """Features of the clips that decoded: ``by_view[view]`` is (n, dim), rows in ``keys`` order."""

    keys: list[str]
    by_view: dict
    skipped: list[dict] = field(default_factory=list)
    computed: int = 0
    seconds: float = 0.0


class SoundFeatureExtractor:
    """Computes (and caches) the feature vectors of clips for one feature spec and audio spec.

    Parameters
    ----------
    features : which statistics over time make the vector.
    spec : how a clip is decoded and fitted (its lengths are part of the cache key).
    cache : the workspace feature cache.
    device : passed to ``deploy.runtime.create_session``.
    threads : clips run at once (each run uses one intra-op thread).
    """

    def __init__(
        self,
        features: SoundFeatures,
        spec: AudioSpec,
        cache: FeatureCache,
        *,
        device: str = "auto",
        threads: int = 2,
    ):
        self.features = features
        self.spec = spec
        self.cache = cache
        self.device = device
        self.threads = max(1, int(threads))
        self._session = None

    @property
    def feature_name(self) -> str:
        return f"{self.features.name}-{self.spec.min_seconds:g}s-{self.spec.max_seconds:g}s"

    def namespace(self, view: str) -> tuple[str, str, str]:
        return (backbone_key(), self.feature_name, view)

    def model_path(self) -> Path:
        """The feature graph file, written once into the cache's ``graphs`` folder."""
        path = self.cache.root / "graphs" / f"sound-{backbone_key()}-{self.features.name}.onnx"
        if not path.is_file():
            write_atomically(path, feature_model(self.features).SerializeToString())
        return path

    def session(self):
        if self._session is None:
            self._session = create_session(self.model_path(), device=self.device, threads=1, spin=False)
        return self._session

    def vector(self, waveform: np.ndarray) -> np.ndarray:
        """The feature vector of one fitted waveform."""
        return self.session().run([FEATURES], {INPUT_NAME: waveform[None, :]})[0][0]

    def missing_count(self, items: Sequence[tuple[str, str, tuple]]) -> int:
        """How many (clip, view) vectors ``items`` (key, path, views) still need."""
        cached: dict = {}
        count = 0
        for key, _, views in items:
            for view in views:
                if view not in cached:
                    cached[view] = self.cache.cached_keys(self.namespace(view))
                count += key not in cached[view]
        return count

    def extract(
        self,
        items: Sequence[tuple[str, str, tuple]],
        *,
        backgrounds: dict | None = None,
        progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> SoundFeatureSet:
        """Vectors of every (key, path, views) item; clips that cannot be decoded are skipped.

        ``backgrounds`` maps each ``noise-<key>`` view to its background waveform.
        """
        started = time.perf_counter()
        views_needed = sorted({v for _, _, views in items for v in views})
        cached = {view: self.cache.cached_keys(self.namespace(view)) for view in views_needed}
        todo = [(key, path, [v for v in views if key not in cached[v]]) for key, path, views in items]
        todo = [item for item in todo if item[2]]
        skipped, done, computed = [], len(items) - len(todo), 0

        def work(item):
            key, path, views = item
            if should_stop is not None and should_stop():
                raise Cancelled("feature extraction was stopped")
            try:
                waveform = load_waveform(path, self.spec)
            except AudioDecodeError as exc:
                return {"file": str(path), "reason": str(exc)}
            for view in views:
                vector = self.vector(apply_view(waveform, view, key, self.spec, backgrounds))
                self.cache.put(self.namespace(view), key, vector)
            return len(views)

        if progress is not None:
            progress(done, len(items))
        if todo:
            self.session()
            with ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="sound") as pool:
                for outcome in pool.map(work, todo):
                    if isinstance(outcome, dict):
                        log.warning("skipping %s", outcome["reason"])
                        skipped.append(outcome)
                    else:
                        computed += outcome
                    done += 1
                    if progress is not None:
                        progress(done, len(items))
        seconds = time.perf_counter() - started
        if computed:
            CostModel(self.cache.root).record(
                WORK_KEY,
                _device_name(self.device),
                1,
                self.threads,
                n_items=computed,
                seconds=max(seconds, 1e-3),
            )
        bad = {entry["file"] for entry in skipped}
        keys = [key for key, path, _ in items if path not in bad]
        by_view = {}
        for view in views_needed:
            wanted = [key for key, path, views in items if view in views and path not in bad]
            by_view[view] = (
                dict(zip(wanted, self.cache.get_many(self.namespace(view), wanted))) if wanted else {}
            )
        return SoundFeatureSet(
            keys=keys, by_view=by_view, skipped=skipped, computed=computed, seconds=seconds
        )


def _device_name(device: str) -> str:
    return "cpu" if device in ("auto", "cpu") else device


def views_per_second(cache: FeatureCache, *, device: str = "auto", threads: int = 2) -> float:
    """Clip views computed per second: measured once a model was trained here, else the prior."""
    rate = CostModel(cache.root).items_per_s(WORK_KEY, _device_name(device), 1, threads)
    return rate or max(1, threads) / DEFAULT_SECONDS_PER_VIEW


def estimate_seconds(cache: FeatureCache, n_vectors: int, *, device: str = "auto", threads: int = 2) -> float:
    """Seconds to compute ``n_vectors`` (measured throughput once a model was trained here)."""
    return n_vectors / views_per_second(cache, device=device, threads=threads)
