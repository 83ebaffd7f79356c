"""A pipeline: a source feeding a model at a frame-rate cap, its answers feeding rules.

Two threads per pipeline: the reader decodes frames into a bounded queue, the worker runs the model
on them. A live source (camera, stream) never waits for the model: when the queue is full the oldest
frame is dropped and counted. A file or a folder waits instead (nothing is lost by waiting). The
cap is in video time for files (a 30 fps file at a cap of 5 has every sixth frame analysed, as fast
as the machine can), in wall time for live sources. A failing live source is reopened with
back-off (0.5 s doubling to 10 s) and shows ``reconnecting``, and so is a watched folder that goes
away; a damaged file fails. Nothing a source does reaches the server.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import deque
from pathlib import Path

import numpy as np

from ..preprocess import image_to_tensor, load_image
from .drawing import annotated_jpeg
from .rules import RuleState, check_rule
from .sources import (
    IMAGE_SUFFIXES,
    READ_TIMEOUT_S,
    Frame,
    SourceError,
    folder_files,
    shown_source,
    source_kind,
    video_frames,
)
from .store import now_iso

log = logging.getLogger(__name__)

QUEUE_FRAMES = 2  # a live source: the frame being analysed, one waiting, the rest dropped
FILE_QUEUE_FRAMES = 8  # a file or folder waits for the model: a batch's worth decoded ahead
MAX_BATCH = 8
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 10.0
FPS_WINDOW = 30


class PipelineBusy(RuntimeError):
    """A pipeline asked to start while its previous run is still ending."""


def frame_item(predictor, image):
    """The model-ready item of a decoded frame: exactly what ``ImageInput.load`` makes of a picture."""
    model_input = predictor.input
    if not model_input.pictures:
        raise SourceError(f"this model reads {model_input.noun}s; a video source needs an image model")
    tensor = image_to_tensor(image if image.mode == "RGB" else image.convert("RGB"), model_input.spec)
    return (tensor, np.array(image.size, np.float32)) if model_input.size_input else tensor


def check_config(body: dict, model_exists, labels_of) -> dict:
    """A complete pipeline configuration from a ``POST /v1/edge/pipelines`` body (ValueError if bad)."""
    if not isinstance(body, dict):
        raise ValueError("a pipeline is a JSON object with a source and a model")
    source = str(body.get("source") or "").strip()
    model = str(body.get("model") or "").strip()
    if not source:
        raise ValueError('"source" is missing: a video file, a folder, camera:0 or a stream address')
    if not model_exists(model):
        raise ValueError(f"no model named {model!r} on this edge server; add it first")
    kind = source_kind(source)
    fps = body.get("fps", 5)
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not 0 <= fps <= 1000:
        raise ValueError('"fps" is a number from 0 (no cap) to 1000')
    rules = body.get("rules") or []
    if not isinstance(rules, list):
        raise ValueError('"rules" must be a list')
    labels = labels_of(model)
    name = str(body.get("name") or "").strip()[:80] or f"{model} on {Path(source).name or source}"
    return {
        "id": uuid.uuid4().hex[:10],
        "name": name,
        "source": source,
        "source_kind": kind,
        "model": model,
        "fps": float(fps),
        "rules": [check_rule(rule, labels) for rule in rules],
        "running": bool(body.get("start", True)),
    }


class Pipeline:
    """A running (or stopped) pipeline; ``config`` is what the store keeps."""

    def __init__(self, config: dict, *, registry, store, metrics, actions):
        self.config = config
        self.registry, self.store, self.metrics, self.actions = registry, store, metrics, actions
        self.state = "stopped"
        self.frames = 0
        self.dropped = 0
        self.skipped = 0
        self.last_error: str | None = None
        self.last_answer: dict | None = None
        self.model_version: int | None = None
        self.event_latencies_ms: deque = deque(maxlen=1000)
        self._times: deque = deque(maxlen=FPS_WINDOW)
        self._latest: tuple | None = None
        self._latest_lock = threading.Lock()
        self._rules = [RuleState(rule) for rule in config["rules"]]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._queue: queue.Queue = queue.Queue(QUEUE_FRAMES)
        self._batch = MAX_BATCH

    @property
    def id(self) -> str:
        return self.config["id"]

    @property
    def shown(self) -> str:
        """The source as status, events, metrics and logs show it (a URL's password masked)."""
        return shown_source(self.config["source"])

    @property
    def live(self) -> bool:
        return self.config["source_kind"] in ("camera", "stream")

    def start(self) -> None:
        """Start reading and analysing (a running pipeline is left as it is)."""
        if not self._stop.is_set() and any(t.is_alive() for t in self._threads):
            return
        for thread in self._threads:  # a stopped run still inside a blocking open or read ends first
            thread.join(READ_TIMEOUT_S + 2.0)
        if any(t.is_alive() for t in self._threads):
            raise PipelineBusy("the previous run of this pipeline has not ended yet; try again in a moment")
        self._stop = threading.Event()
        self._queue = queue.Queue(QUEUE_FRAMES if self.live else FILE_QUEUE_FRAMES)
        self.state, self.last_error = "starting", None
        self._threads = [
            threading.Thread(target=self._read, name=f"edge-read-{self.id}", daemon=True),
            threading.Thread(target=self._work, name=f"edge-work-{self.id}", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        log.info("pipeline %s started on %s", self.id, self.shown)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        if self.state not in ("finished", "failed"):
            self.state = "stopped"
        self.metrics.source_fps.labels(self.id, self.shown).set(0)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until both threads end (a file source ends on its own); True if they did."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    def set_rules(self, rules: list[dict]) -> None:
        self.config["rules"] = rules
        self._rules = [RuleState(rule) for rule in rules]

    # reading
    def _frames(self):
        kind, source = self.config["source_kind"], self.config["source"]
        if kind == "folder":
            if Path(source).expanduser().is_dir():
                self.state = "running"  # watching: an empty folder is not still "starting"
            seen = self.store.seen(self.id)
            for frame in folder_files(source, seen, self._stop.is_set):
                self.store.mark_seen(self.id, Path(frame.path).name)
                yield frame
            return
        yield from video_frames(source, kind, self._stop.is_set)

    def _read(self) -> None:
        backoff = BACKOFF_FIRST_S
        last_taken = None
        try:
            while not self._stop.is_set():
                try:
                    for frame in self._frames():
                        if self.state in ("starting", "reconnecting"):
                            self.state, backoff = "running", BACKOFF_FIRST_S
                        now = frame.media_time if not self.live else time.monotonic()
                        cap = self.config["fps"]
                        if cap and last_taken is not None and now - last_taken < 1.0 / cap - 1e-6:
                            self.skipped += 1
                            continue
                        last_taken = now
                        frame.captured = time.monotonic()
                        self._offer(frame)
                        if self._stop.is_set():
                            break
                    if self._stop.is_set() or not self.live:
                        return
                    raise EOFError("the stream ended")
                except Exception as exc:  # any failure of a source is shown, never raised to the server
                    if self._stop.is_set():
                        return
                    # PyAV's messages name the URL: never show its password
                    error = f"{type(exc).__name__}: {exc}".replace(self.config["source"], self.shown)
                    self.last_error = error[:300]
                    if self.config["source_kind"] == "file":  # a folder may come back (a share remounted)
                        log.error("pipeline %s: source %s failed: %s", self.id, self.shown, exc)
                        self.state = "failed"
                        self._ended()
                        return
                    log.warning("pipeline %s: %s; reconnecting in %.1f s", self.id, self.last_error, backoff)
                    self.state = "reconnecting"
                    self.metrics.reconnects.labels(self.id).inc()
                    last_taken = None
                    if self._stop.wait(backoff):
                        return
                    backoff = min(backoff * 2, BACKOFF_MAX_S)
        finally:
            self._put_blocking(None)  # tells the worker the source is done

    def _offer(self, frame: Frame) -> None:
        if not self.live:
            self._put_blocking(frame)
            return
        while True:
            try:
                self._queue.put_nowait(frame)
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    self.dropped += 1
                    self.metrics.drops.labels(self.id).inc()
                except queue.Empty:
                    pass

    def _put_blocking(self, item) -> None:
        while True:
            try:
                self._queue.put(item, timeout=0.2)
                return
            except queue.Full:
                if self._stop.is_set():  # the worker stops on its own: nothing needs the item
                    return

    # working
    def _next_batch(self) -> list | None:
        """Up to ``batch`` frames: the first waits, the others are only those already queued (a file
        source keeps its queue full, so the model runs on batches; a live one rarely waits in line).
        None once the source is done and nothing is left."""
        while True:
            try:
                first = self._queue.get(timeout=0.5)
                break
            except queue.Empty:
                if self._stop.is_set():
                    return None
        batch = [first]
        while first is not None and len(batch) < self._batch:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
            if batch[-1] is None:
                break
        return batch

    def _work(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None or self._stop.is_set():
                return
            done = batch[-1] is None
            frames = [f for f in batch if f is not None]
            try:
                if frames:
                    self._process(frames)
            except Exception as exc:  # frames that cannot be analysed are shown and skipped
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]
                log.warning("pipeline %s: frame %d: %s", self.id, frames[0].index, self.last_error)
                if isinstance(exc, SourceError):
                    self.state = "failed"
                    self._stop.set()
                    self._ended()
                    return
            if done:
                if self.state == "running" and not self.live and not self._stop.is_set():
                    self.state = "finished"
                    log.info("pipeline %s: %s ended after %d frames", self.id, self.shown, self.frames)
                    self._ended()
                return

    def _ended(self) -> None:
        """A file that was read to its end is not read again when the server restarts."""
        self.config["running"] = False
        self.store.save_pipeline(self.config)

    def _answers(self, predictor, frames: list[Frame]) -> list[tuple]:
        """(image or None, answer) per frame: decoded frames in one batch, files one by one."""
        if all(f.image is not None for f in frames):
            items = [frame_item(predictor, f.image) for f in frames]
            return list(zip([f.image for f in frames], predictor.run_items(items)))
        out: list[tuple] = []
        for frame in frames:
            image = frame.image
            if image is not None:
                out.append((image, predictor.run_items([frame_item(predictor, image)])[0]))
                continue
            assert frame.path is not None  # a frame without an image is a file from a folder
            if predictor.input.pictures and Path(frame.path).suffix.lower() in IMAGE_SUFFIXES:
                image = load_image(frame.path, max_pixels=predictor.max_pixels)
                out.append((image, predictor.run_items([frame_item(predictor, image)])[0]))
            else:
                out.append((None, predictor.predict([frame.path])[0]))
        return out

    def _process(self, frames: list[Frame]) -> None:
        model = self.config["model"]
        predictor, version = self.registry.predictor(model)
        self.model_version = version
        started = time.perf_counter()
        try:
            answers = self._answers(predictor, frames)
        except Exception:
            self.metrics.observe(model, version, "pipeline", time.perf_counter() - started, False)
            raise
        respond = getattr(predictor.output, "respond", None)  # arrays (a mask) out: the areas stay
        if respond is not None:
            answers = [(image, respond(answer, {"mask": "0"})) for image, answer in answers]
        share = (time.perf_counter() - started) / len(frames)
        for frame, (image, answer) in zip(frames, answers):
            self.metrics.observe(model, version, "pipeline", share)
            self._after(frame, image, answer, version)

    def _after(self, frame: Frame, image, answer: dict, version: int) -> None:
        """Count a frame, keep it for the live view, feed its answer to the rules."""
        self.frames += 1
        now_wall = time.monotonic()
        self._times.append(now_wall)
        fps = self.fps
        self.metrics.frames.labels(self.id).inc()
        self.metrics.source_fps.labels(self.id, self.shown).set(fps)
        self.metrics.pipeline_sample(self.id, fps, self.dropped)
        answer = {**answer, "frame": frame.index, "media_time": round(frame.media_time, 3)}
        if frame.path:
            answer["file"] = Path(frame.path).name
        self.last_answer = answer
        with self._latest_lock:
            self._latest = (image, answer)
        rule_time = frame.media_time if not self.live else now_wall
        for state in self._rules:
            fired, label, score = state.update(answer, rule_time)
            if fired:
                self._fire(state.rule, image, answer, version, label, score, frame.captured or now_wall)

    def _fire(self, rule, image, answer, version, label, score, captured) -> None:
        event = {
            "time": now_iso(),
            "source": self.shown,
            "pipeline": self.id,
            "model": self.config["model"],
            "version": version,
            "label": label,
            "score": None if score is None else round(float(score), 6),
            "rule": rule["id"],
            "answer": answer,
        }
        snapshot = annotated_jpeg(image, answer) if image is not None else None
        event["id"] = self.store.add_event(event, snapshot)
        event["snapshot"] = f"/v1/edge/events/{event['id']}/snapshot.jpg" if snapshot else None
        self.event_latencies_ms.append((time.monotonic() - captured) * 1000.0)
        self.metrics.events.labels(self.id, rule["id"]).inc()
        if rule["actions"]:
            self.actions.submit(rule["actions"], event, snapshot)

    # showing
    @property
    def fps(self) -> float:
        times = self._times
        if len(times) < 2 or time.monotonic() - times[-1] > 5.0:
            return 0.0
        return (len(times) - 1) / max(times[-1] - times[0], 1e-6)

    def latest_jpeg(self) -> bytes | None:
        with self._latest_lock:
            latest = self._latest
        if latest is None or latest[0] is None:
            return None
        return annotated_jpeg(latest[0], latest[1])

    def describe(self) -> dict:
        """The pipeline object of ``docs/EDGE_API.md``."""
        config = self.config
        if self.model_version is None:
            try:
                self.model_version = self.registry.predictor(config["model"])[1]
            except Exception:  # the model was removed or does not load: shown as null
                pass
        return {
            "id": config["id"],
            "name": config["name"],
            "source": self.shown,
            "source_kind": config["source_kind"],
            "model": config["model"],
            "model_version": self.model_version,
            "state": self.state,
            "fps": round(self.fps, 2),
            "fps_cap": config["fps"],
            "frames": self.frames,
            "dropped": self.dropped,
            "last_error": self.last_error,
            "last_answer": self.last_answer,
            "rules": config["rules"],
        }
