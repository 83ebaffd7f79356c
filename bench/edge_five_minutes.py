"""Five minutes from images to a model at work: a tiny image project, the fast template trained, an edge
server started, the model attached to a video with a rule, and the rule firing, each step timed.

Everything is made on the spot (shapes drawn with noise and blur, then a video in which a circle and a
square take turns) and runs the way the desktop app's "Put to work" does: ``modeldesk edge serve`` in
its own process, the model added and the pipeline started over the edge server's API. The rule is
"circle at 70% or more, 2 frames in a row"; the events must come from the circle's stretches only.

    python bench/edge_five_minutes.py [--out DIR] [--shots DIR] [--keep]

``--shots DIR`` also saves the console at each step with headless Chromium (when it is installed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from modeldesk.app.edge_launch import EdgeProcess, put_to_work
from modeldesk.app.sample_data import make_shape_image, make_shapes_folder
from modeldesk.app.workspace import Workspace

PROJECT = "Shapes on the line"
#: the video's script: (shape, seconds), at FPS frames a second
SCRIPT = (("square", 2), ("circle", 3), ("square", 3), ("circle", 3), ("square", 2))
FPS = 10
LABEL, SCORE, HOLD = "circle", 0.7, 2


def write_video(path: Path, seed: int = 7, size: int = 240) -> list[str]:
    """An MPEG-4 video following SCRIPT (a new drawing every frame); returns each frame's shape."""
    import av

    rng = np.random.default_rng(seed)
    shown = []
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=FPS)
        stream.width = stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.bit_rate = 2_000_000
        for shape, seconds in SCRIPT:
            for _ in range(seconds * FPS):
                frame = np.asarray(make_shape_image(shape, rng, size))
                for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                    container.mux(packet)
                shown.append(shape)
        for packet in stream.encode():
            container.mux(packet)
    return shown


def chromium() -> str | None:
    return next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)


def screenshot(url: str, out: Path, size: str = "1400,1000") -> bool:
    """The page at ``url`` as a PNG (headless Chromium; False when there is none)."""
    browser = chromium()
    if browser is None:
        return False
    profile = tempfile.mkdtemp(prefix="edge-shot-")
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        f"--screenshot={out}",
        f"--window-size={size}",
        url,
    ]
    try:
        subprocess.run(command, check=False, capture_output=True, timeout=90)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return out.exists()


def wait_for(predicate, timeout: float, step: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="work folder (default: a temporary one)")
    parser.add_argument("--shots", help="save the console's screenshots here")
    parser.add_argument("--keep", action="store_true", help="leave the edge server running at the end")
    args = parser.parse_args(argv)
    work = Path(args.out or tempfile.mkdtemp(prefix="edge-five-"))
    work.mkdir(parents=True, exist_ok=True)
    shots = Path(args.shots) if args.shots else None
    if shots:
        shots.mkdir(parents=True, exist_ok=True)
    steps: list[tuple[str, float]] = []
    shooting = [0.0]  # seconds spent on screenshots, left out of the steps' times

    def step(name: str, since: float) -> float:
        now = time.monotonic()
        took = now - since - shooting[0]
        shooting[0] = 0.0
        steps.append((name, took))
        print(f"{name:<44} {took:6.1f} s", flush=True)
        return now

    def shot(name: str, view: str, size: str = "1400,1000") -> None:
        begun = time.monotonic()
        if shots and screenshot(f"{edge.console_url}#{view}", shots / f"{name}.png", size):
            print(f"  screenshot {shots / (name + '.png')}", flush=True)
        shooting[0] += time.monotonic() - begun

    t = time.monotonic()
    ws = Workspace(work / "workspace")
    ws.create_project(PROJECT, "image-classification")
    ws.import_data(PROJECT, make_shapes_folder(work / "images", 20, classes=("circle", "square")))
    t = step("1. make and import 40 images (2 shapes)", t)
    model = ws.train(PROJECT, "image-classification/fast")["model"]
    t = step("2. train the fast template", t)
    video = work / "line.mp4"
    shown = write_video(video)
    t = step(f"3. make a {len(shown) / FPS:.0f} s video", t)
    edge = EdgeProcess.start(ws.paths.root)
    t = step("4. start the edge server (own process)", t)
    shot("1-started", "overview", "1400,1100")
    result = put_to_work(
        ws,
        model,
        project=PROJECT,
        source=str(video),
        label=LABEL,
        score=SCORE,
        fps=FPS,
        hold_frames=HOLD,
        cooldown_s=1.0,
        edge=edge,
    )
    pipeline = result["pipeline"]["id"]
    t = step("5. add the model, start the pipeline + rule", t)
    first = wait_for(lambda: edge.call("GET", f"v1/edge/events?pipeline={pipeline}").get("events"), 120)
    t = step("6. the rule fires (first event)", t)
    shot("2-running", "overview", "1400,1100")
    shot("3-live", "live")
    state = wait_for(
        lambda: next(
            (
                p["state"]
                for p in edge.call("GET", "v1/edge/pipelines")["pipelines"]
                if p["id"] == pipeline and p["state"] in ("finished", "failed", "stopped")
            ),
            None,
        ),
        120,
    )
    t = step(f"7. the video is over ({state})", t)
    total = sum(seconds for _, seconds in steps)
    events = edge.call("GET", f"v1/edge/events?pipeline={pipeline}&limit=100")["events"]
    shot("4-events", "events")
    shot("5-charts", "charts")
    shot("6-device", "device")
    status = next(p for p in edge.call("GET", "v1/edge/pipelines")["pipelines"] if p["id"] == pipeline)
    labels = sorted({e["label"] for e in events})
    print(f"{'total':<44} {total:6.1f} s")
    report = {
        "steps_s": {name: round(seconds, 2) for name, seconds in steps},
        "total_s": round(total, 1),
        "frames_in_video": len(shown),
        "frames_seen": status.get("frames"),
        "dropped": status.get("dropped"),
        "events": len(events),
        "event_labels": labels,
        "first_event": first[0] if first else None,
        "console": edge.url,
    }
    print(json.dumps(report, indent=1, default=str))
    ok = bool(events) and labels == [LABEL]
    if args.keep:
        print(f"the edge server keeps running at {edge.console_url} (pid {edge.process.pid})")
    else:
        edge.stop()
        ws.close()
    if not ok:
        print("the rule did not fire on the circle's stretches only", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
