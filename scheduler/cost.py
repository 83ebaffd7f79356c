"""The cost model: measured throughput and memory per (work, device, batch size, threads).

The first time a configuration is needed, a short probe supplied by the caller measures it; every
real run then refines the figure with an exponential moving average. Figures are kept in a JSON
file in a folder the caller passes (the workspace cache), written atomically.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from pathlib import Path

from modeldesk.fileio import atomic_write

log = logging.getLogger(__name__)

FILENAME = "cost_model.json"
FORMAT_VERSION = 1
PROBE_SUPERSEDED = 0.8  # weight of the first real run against a probe's figure


_measurement_scale: float | None = None


def set_measurement_scale(factor: float | None) -> None:
    """From now on, in this process, store measured seconds divided by ``factor`` (None: as measured).

    The app sets the machine's slowdown against the one its priors were measured at, so figures
    measured at any load are kept in the priors' units and an estimate scales them all alike by the
    load of its own moment (``app.calibration``)."""
    global _measurement_scale
    _measurement_scale = factor if factor and factor > 0 else None


def config_key(work_key: str, device: str, batch_size: int, threads: int) -> str:
    """The cache key of one configuration."""
    return f"{work_key}|{device}|bs={int(batch_size)}|t={int(threads)}"


def _parse_probe(value) -> tuple[float, float | None]:
    """A probe returns seconds per item, or (seconds, bytes_per_item), or a dict with those keys."""
    if isinstance(value, dict):
        return float(value["seconds_per_item"]), value.get("bytes_per_item")
    if isinstance(value, (tuple, list)):
        return float(value[0]), (float(value[1]) if len(value) > 1 and value[1] is not None else None)
    return float(value), None


class CostModel:
    """Throughput (items/s) and memory per configuration, cached in ``cache_dir``.

    Parameters
    ----------
    cache_dir : path-like or None
        Folder for ``cost_model.json``; None keeps figures in memory only.
    alpha : float
        Weight of a new run in the moving average (0 < alpha <= 1); the first run after a probe
        gets at least 0.8, as it measures far more items than the probe.

    Examples
    --------
    >>> model = CostModel(None)
    >>> model.record("resnet", "cpu", 8, 2, n_items=100, seconds=4.0)["items_per_s"]
    25.0
    """

    def __init__(self, cache_dir=None, *, alpha: float = 0.3):
        if not 0 < alpha <= 1:
            raise ValueError("alpha must be in (0, 1]")
        self.cache_dir = cache_dir
        self.alpha = alpha
        self._lock = threading.RLock()
        self._entries: dict = {}
        self._loaded = False

    # -- storage ------------------------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        """The JSON file, or None when the model lives in memory only."""
        return None if self.cache_dir is None else Path(self.cache_dir) / FILENAME

    def _read_file(self) -> dict:
        path = self.path
        if path is None or not path.exists():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable cost model %s: %s", path, exc)
            return {}
        if data.get("version") != FORMAT_VERSION:
            log.info("cost model %s has another format version; starting afresh", path)
            return {}
        return dict(data.get("entries", {}))

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self._entries.update(self._read_file())
            self._loaded = True

    def save(self) -> None:
        """Write the figures (merged with what another process may have written meanwhile)."""
        path = self.path
        if path is None:
            return
        with self._lock:
            merged = self._read_file()
            for key, entry in self._entries.items():
                if key not in merged or entry.get("updated", 0) >= merged[key].get("updated", 0):
                    merged[key] = entry
            self._entries = merged
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(
                path, json.dumps({"version": FORMAT_VERSION, "entries": merged}, indent=1, sort_keys=True)
            )

    # -- queries ------------------------------------------------------------------------------
    def get(self, work_key: str, device: str, batch_size: int, threads: int) -> dict | None:
        """The entry of one exact configuration (a copy), or None when never measured."""
        with self._lock:
            self._ensure_loaded()
            entry = self._entries.get(config_key(work_key, device, batch_size, threads))
            return dict(entry) if entry else None

    def entries(self, work_key: str | None = None, device: str | None = None) -> list[dict]:
        """All entries, optionally only those of one work key and/or device."""
        with self._lock:
            self._ensure_loaded()
            return [
                dict(e)
                for e in self._entries.values()
                if (work_key is None or e["work_key"] == work_key)
                and (device is None or e["device"] == device)
            ]

    def items_per_s(
        self, work_key: str, device: str, batch_size: int, threads: int, *, exact: bool = False
    ) -> float | None:
        """Throughput of a configuration; without an exact match, the nearest measured one.

        Nearest means same work and device, the closest thread count, then the closest batch size;
        a CPU figure is scaled linearly by the thread ratio. None when nothing is known.
        """
        entry = self.get(work_key, device, batch_size, threads)
        if entry:
            return entry["items_per_s"]
        if exact:
            return None
        candidates = self.entries(work_key, device)
        if not candidates:
            return None
        best = min(
            candidates,
            key=lambda e: (
                abs(e["threads"] - threads),
                abs(math.log2(max(e["batch_size"], 1)) - math.log2(max(batch_size, 1))),
            ),
        )
        rate = best["items_per_s"]
        if device.startswith("cpu") and best["threads"] != threads:
            rate *= threads / best["threads"]
        return rate

    def bytes_per_item(self, work_key: str, device: str) -> float | None:
        """Largest measured memory per item for this work on this device, or None."""
        sizes = [e["bytes_per_item"] for e in self.entries(work_key, device) if e.get("bytes_per_item")]
        return max(sizes) if sizes else None

    def estimate_seconds(
        self, work_key: str, n_items: int, device: str, batch_size: int, threads: int
    ) -> float | None:
        """Seconds to process ``n_items`` on one configuration, or None when unknown."""
        rate = self.items_per_s(work_key, device, batch_size, threads)
        return None if not rate else n_items / rate

    # -- measurements -------------------------------------------------------------------------
    def _store(
        self,
        work_key,
        device,
        batch_size,
        threads,
        seconds_per_item,
        bytes_per_item,
        source,
        peak_bytes=None,
        normalise=True,
    ):
        key = config_key(work_key, device, batch_size, threads)
        if _measurement_scale is not None and normalise:  # in the priors' units (set_measurement_scale)
            seconds_per_item = seconds_per_item / _measurement_scale
        with self._lock:
            self._ensure_loaded()
            old = self._entries.get(key)
            rate = 1.0 / max(seconds_per_item, 1e-12)
            if old and source == "run":
                # A real run outweighs a short probe; later runs refine with the moving average.
                weight = max(self.alpha, PROBE_SUPERSEDED) if old.get("source") == "probe" else self.alpha
                rate = (1 - weight) * old["items_per_s"] + weight * rate
            entry = {
                "work_key": work_key,
                "device": device,
                "batch_size": int(batch_size),
                "threads": int(threads),
                "items_per_s": rate,
                "bytes_per_item": bytes_per_item
                if bytes_per_item is not None
                else (old or {}).get("bytes_per_item"),
                "peak_bytes": peak_bytes if peak_bytes is not None else (old or {}).get("peak_bytes"),
                "samples": (old or {}).get("samples", 0) + 1,
                "source": source,
                "updated": time.time(),
            }
            self._entries[key] = entry
        self.save()
        return dict(entry)

    def measure(
        self, work_key: str, device: str, batch_size: int, threads: int, probe, *, force: bool = False
    ) -> dict:
        """Entry for a configuration, running ``probe(device, batch_size, threads)`` when not cached.

        The probe returns seconds per item, or ``(seconds_per_item, bytes_per_item)``, or a dict
        with those keys.
        """
        entry = None if force else self.get(work_key, device, batch_size, threads)
        if entry:
            return entry
        seconds, per_item = _parse_probe(probe(device, batch_size, threads))
        if not seconds > 0:
            raise ValueError(f"probe returned {seconds!r} seconds per item; it must be positive")
        log.info(
            "probed %s on %s (batch %d, %d threads): %.1f items/s",
            work_key,
            device,
            batch_size,
            threads,
            1 / seconds,
        )
        return self._store(work_key, device, batch_size, threads, seconds, per_item, "probe")

    def record(
        self,
        work_key: str,
        device: str,
        batch_size: int,
        threads: int,
        *,
        n_items: int,
        seconds: float,
        peak_bytes: float | None = None,
        bytes_per_item: float | None = None,
        normalise: bool = True,
    ) -> dict:
        """Fold a real run (``n_items`` in ``seconds`` of device time) into the moving average
        (``normalise``: in the units :func:`set_measurement_scale` sets; False for a figure that is
        not a time measured now)."""
        if n_items <= 0 or seconds <= 0:
            raise ValueError("record needs n_items > 0 and seconds > 0")
        return self._store(
            work_key,
            device,
            batch_size,
            threads,
            seconds / n_items,
            bytes_per_item,
            "run",
            peak_bytes=peak_bytes,
            normalise=normalise,
        )

    def pick_batch_size(
        self,
        work_key: str,
        device: str,
        memory_bytes: float,
        *,
        bytes_per_item: float | None = None,
        fixed_bytes: float = 0,
        candidates=(1, 2, 4, 8, 16, 32, 64, 128, 256),
        default: int = 8,
        max_batch: int | None = None,
    ) -> int:
        """Largest candidate batch whose memory (``fixed_bytes + batch * bytes_per_item``) fits.

        ``bytes_per_item`` defaults to the measured one; when nothing is known ``default`` is used.
        """
        per_item = bytes_per_item if bytes_per_item is not None else self.bytes_per_item(work_key, device)
        allowed = [c for c in sorted(candidates) if max_batch is None or c <= max_batch] or [1]
        if not per_item:
            fits = [c for c in allowed if c <= default]
            return fits[-1] if fits else allowed[0]
        fits = [c for c in allowed if fixed_bytes + c * per_item <= memory_bytes]
        return fits[-1] if fits else allowed[0]
