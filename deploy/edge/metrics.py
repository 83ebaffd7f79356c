"""What the edge server counts: Prometheus metrics (``/metrics``) and the short in-memory series the
console draws (``/v1/edge/stats``: requests, errors and latency percentiles per 10-second bucket).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from datetime import datetime, timezone

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

BUCKET_S = 10
KEEP_BUCKETS = 6 * 60  # an hour of 10-second buckets
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


def _bucket_time(bucket: int) -> str:
    return datetime.fromtimestamp(bucket * BUCKET_S, timezone.utc).isoformat(timespec="seconds")


class EdgeMetrics:
    """One registry per server (tests start several servers in one process)."""

    def __init__(self):
        self.registry = CollectorRegistry()
        labels = ["model", "version", "protocol"]
        self.requests = Counter(
            "edge_requests", "Predictions asked of a model version", labels, registry=self.registry
        )
        self.errors = Counter(
            "edge_request_errors", "Predictions that failed", labels, registry=self.registry
        )
        self.latency = Histogram(
            "edge_request_latency_seconds",
            "Time from a request (or a frame) to its answer",
            labels,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.source_fps = Gauge(
            "edge_source_fps",
            "Frames a pipeline analyses per second",
            ["pipeline", "source"],
            registry=self.registry,
        )
        self.frames = Counter("edge_frames", "Frames analysed", ["pipeline"], registry=self.registry)
        self.drops = Counter(
            "edge_queue_drops",
            "Frames dropped because the model was busy",
            ["pipeline"],
            registry=self.registry,
        )
        self.events = Counter(
            "edge_events", "Events fired by rules", ["pipeline", "rule"], registry=self.registry
        )
        self.reconnects = Counter(
            "edge_source_reconnects", "Times a source was opened again", ["pipeline"], registry=self.registry
        )
        self._lock = threading.Lock()
        # (model, version) -> bucket -> [requests, errors, latencies...]
        self._models: dict[tuple[str, int], dict[int, list]] = defaultdict(dict)
        self._pipelines: dict[str, deque] = defaultdict(lambda: deque(maxlen=KEEP_BUCKETS))

    def observe(self, model: str, version: int, protocol: str, seconds: float, ok: bool = True) -> None:
        """Count one prediction (a request item or a frame)."""
        labels = (model, str(version), protocol)
        self.requests.labels(*labels).inc()
        if ok:
            self.latency.labels(*labels).observe(seconds)
        else:
            self.errors.labels(*labels).inc()
        bucket = int(time.time() // BUCKET_S)
        with self._lock:
            series = self._models[(model, int(version))]
            cell = series.setdefault(bucket, [0, 0, []])
            cell[0] += 1
            if ok:
                if len(cell[2]) < 5000:
                    cell[2].append(seconds * 1000.0)
            else:
                cell[1] += 1
            for old in [b for b in series if b < bucket - KEEP_BUCKETS]:
                del series[old]

    def pipeline_sample(self, pipeline: str, fps: float, dropped_total: int) -> None:
        """Record a pipeline's frame rate and drops now (one point per bucket is kept)."""
        bucket = int(time.time() // BUCKET_S)
        with self._lock:
            series = self._pipelines[pipeline]
            if series and series[-1][0] == bucket:
                series[-1] = (bucket, fps, dropped_total)
            else:
                series.append((bucket, fps, dropped_total))

    def forget_pipeline(self, pipeline: str) -> None:
        with self._lock:
            self._pipelines.pop(pipeline, None)

    def stats(self, minutes: float = 15) -> dict:
        """The series of ``GET /v1/edge/stats``."""
        first = int((time.time() - minutes * 60) // BUCKET_S)
        with self._lock:
            models = []
            for (name, version), series in sorted(self._models.items()):
                points = []
                for bucket in sorted(b for b in series if b >= first):
                    requests, errors, latencies = series[bucket]
                    p50, p95 = (
                        (float(np.percentile(latencies, 50)), float(np.percentile(latencies, 95)))
                        if latencies
                        else (None, None)
                    )
                    points.append(
                        {
                            "t": _bucket_time(bucket),
                            "requests": requests,
                            "errors": errors,
                            "p50_ms": None if p50 is None else round(p50, 3),
                            "p95_ms": None if p95 is None else round(p95, 3),
                        }
                    )
                models.append({"name": name, "version": version, "series": points})
            pipelines = []
            for pipeline, frames in sorted(self._pipelines.items()):
                points, previous = [], None
                for bucket, fps, dropped_total in frames:
                    if bucket >= first:
                        dropped = dropped_total - previous if previous is not None else 0
                        points.append(
                            {"t": _bucket_time(bucket), "fps": round(fps, 2), "dropped": max(0, dropped)}
                        )
                    previous = dropped_total
                pipelines.append({"id": pipeline, "series": points})
        return {"models": models, "pipelines": pipelines}

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)
