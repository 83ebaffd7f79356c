"""The edge server's pipelines against the bare predictor, the latency from a frame to its event, and
four live pipelines at once.

Trains the ``image-classification/fast`` template on part of /work/shared/benchdata/sign_digits (or the
folder given) and makes a video of held-out photos (PyAV, MPEG-4, 320x240, 25 fps, each photo held
for 5 frames). Then, in one process and one run:

1. frames per second of one pipeline on that file (no cap, a rule that never fires; decoding
   included) against a bare loop doing what the model needs on the same already-decoded frames
   (``image_to_tensor`` and ``run_items``), one frame a run and in batches as large as the
   pipeline's (a file source keeps its queue full, so its model runs on batches). The machine is
   shared, so they alternate in rounds and the median of the rounds' ratios is quoted;
2. the latency from a frame leaving the decoder to its event being stored (a live MJPEG stream at
   10 fps, a rule that fires on every frame, cool-down 0: snapshot JPEG, SQLite row), p50 and p95;
3. four pipelines at once, each on its own live MJPEG stream over HTTP (a local server sends the
   video's frames at 25 fps), for ``--seconds``: each one's analysed frame rate and dropped frames.

    python bench/edge.py [DATA_DIR] [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from benchdata import load_samples  # bench/ is on sys.path when a bench runs as a script
from PIL import Image

from modeldesk.deploy.edge.pipeline import MAX_BATCH

SIZE = (320, 240)
RATE = 25
HOLD = 5


def make_video(paths: list[str], out: Path) -> Path:
    import av

    with av.open(str(out), "w") as container:
        stream = container.add_stream("mpeg4", rate=RATE)
        stream.width, stream.height, stream.pix_fmt = SIZE[0], SIZE[1], "yuv420p"
        stream.bit_rate = 2_000_000
        for path in paths:
            pixels = np.asarray(Image.open(path).convert("RGB").resize(SIZE))
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            for _ in range(HOLD):
                for packet in stream.encode(frame):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return out


def decoded_frames(video: Path) -> list[Image.Image]:
    import av

    with av.open(str(video)) as container:
        return [frame.to_image() for frame in container.decode(video=0)]


def bare_fps(predictor, frames, batch: int = 1) -> float:
    """Frames per second of preprocessing and ``run_items`` alone, ``batch`` frames per run."""
    from modeldesk.deploy.edge.pipeline import frame_item

    started = time.perf_counter()
    for start in range(0, len(frames), batch):
        predictor.run_items([frame_item(predictor, image) for image in frames[start : start + batch]])
    return len(frames) / (time.perf_counter() - started)


def pipeline_run(server, video: Path, rule: dict) -> tuple[float, object]:
    created = server.add_pipeline({"source": str(video), "model": "digits", "fps": 0, "rules": [rule]})
    pipeline = server.pipeline(created["id"])
    started = time.perf_counter()
    pipeline.wait()
    elapsed = time.perf_counter() - started
    fps = pipeline.frames / elapsed
    server.delete_pipeline(created["id"])
    return fps, pipeline


class MJPEGStream:
    """A live MJPEG stream of ``jpegs`` at ``rate`` frames per second, looping, over local HTTP."""

    def __init__(self, jpegs: list[bytes], rate: float):
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
                self.end_headers()
                start, i = time.monotonic(), 0
                try:
                    while True:
                        data = jpegs[i % len(jpegs)]
                        self.wfile.write(
                            b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(data)
                            + data
                            + b"\r\n"
                        )
                        i += 1
                        time.sleep(max(0.0, start + i / rate - time.monotonic()))
                except OSError:
                    return

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/live.mjpg"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default="/work/shared/benchdata/sign_digits")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--photos", type=int, default=80, help="held-out photos in the video")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="edge-bench-") as tmp:
        return run(args, Path(tmp))


def run(args, work: Path) -> int:
    from modeldesk.deploy.edge.server import EdgeServer
    from modeldesk.trainers.image.classification import train_image_classifier

    samples = load_samples(Path(args.data))
    training = [s for s in samples if s.split == "train"][:300]
    result = train_image_classifier(
        training, "image-classification/fast", work / "model", work / "cache", threads=2
    )
    test = [s.source for s in samples if s.split == "test"][: args.photos]
    video = make_video(test, work / "line.mp4")
    frames = decoded_frames(video)

    server = EdgeServer(work / "edge")
    try:
        server.add_model(str(result.artifact_dir), "digits")
        predictor, _ = server.registry.predictor("digits")
        labels = list(predictor.labels)
        never = {"when": {"kind": "label", "label": labels[0], "score": 2.0}, "cooldown_s": 0}
        always = {"when": {"kind": "not_sure", "score": 2.0}, "cooldown_s": 0}
        bare_fps(predictor, frames[:20])  # warm
        rounds = []
        for _ in range(args.rounds):
            single = bare_fps(predictor, frames)
            batched = bare_fps(predictor, frames, MAX_BATCH)
            piped, _ = pipeline_run(server, video, never)
            rounds.append((single, batched, piped))

        print(
            f"# {os.cpu_count()} CPUs (shared, loaded machine); model: fast template on {len(training)} "
            f"sign_digits photos; video {SIZE[0]}x{SIZE[1]} {RATE} fps, {len(frames)} frames\n"
        )
        print(
            f"| round | bare predictor fps, 1 frame a run | bare, {MAX_BATCH} a run | pipeline fps (decoding "
            "included) | pipeline / bare 1 | pipeline / bare batched |"
        )
        print("|---|---|---|---|---|---|")
        for i, (single, batched, piped) in enumerate(rounds, 1):
            print(
                f"| {i} | {single:.1f} | {batched:.1f} | {piped:.1f} | {piped / single:.2f} | {piped / batched:.2f} |"
            )
        print(
            f"| median | | | | {statistics.median(p / s for s, _, p in rounds):.2f} | "
            f"{statistics.median(p / b for _, b, p in rounds):.2f} |\n"
        )
        jpegs = []
        for image in frames[::HOLD]:
            buffer = io.BytesIO()
            image.save(buffer, "JPEG", quality=85)
            jpegs.append(buffer.getvalue())

        live = MJPEGStream(jpegs, 10)
        try:
            fired = server.pipeline(
                server.add_pipeline({"source": live.url, "model": "digits", "fps": 0, "rules": [always]})[
                    "id"
                ]
            )
            time.sleep(args.seconds)
            latencies = list(fired.event_latencies_ms)[5:]  # past the connection's first frames
            server.delete_pipeline(fired.id)
        finally:
            live.close()
        print(
            f"frame -> event on a live MJPEG stream at 10 fps, a rule firing on every frame ({len(latencies)} "
            f"events; decoded frame to stored event with its JPEG snapshot): p50 "
            f"{np.percentile(latencies, 50):.1f} ms, p95 {np.percentile(latencies, 95):.1f} ms\n"
        )
        streams = [MJPEGStream(jpegs, RATE) for _ in range(4)]
        try:
            ids = [
                server.add_pipeline({"source": s.url, "model": "digits", "fps": 0, "rules": [never]})["id"]
                for s in streams
            ]
            time.sleep(2.0)  # connect and warm up
            start = {i: (server.pipeline(i).frames, server.pipeline(i).dropped) for i in ids}
            time.sleep(args.seconds)
            print(f"four live MJPEG streams at {RATE} fps each, no cap, {args.seconds:.0f} s:\n")
            print("| pipeline | analysed fps | frames | dropped | state |")
            print("|---|---|---|---|---|")
            for n, i in enumerate(ids, 1):
                p = server.pipeline(i)
                frames_done, dropped = p.frames - start[i][0], p.dropped - start[i][1]
                print(f"| {n} | {frames_done / args.seconds:.1f} | {frames_done} | {dropped} | {p.state} |")
        finally:
            for i in list(server.pipelines):
                server.delete_pipeline(i)
            for s in streams:
                s.close()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
