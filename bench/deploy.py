"""Deployment benchmark on a real model: compression candidates, and the service against bare ONNX Runtime.

Trains the ``image-classification/fast`` template (``--template image-classification/accurate`` for the
other) on /work/shared/benchdata/sign_digits (or the folder given as the first argument; a quarter of
the images, chosen by a hash of the file name, is held out and used only to judge compression), then
prints

1. every compression candidate (precision, input size, head re-fitted or not, runtime): size, latency
   at 1 and 2 threads (batch 8, ms per image; at 2 threads on plain ONNX Runtime and with the batch
   split across the threads), held-out accuracy, and which one was kept; its speed-up against fp32 at
   its best runtime and against fp32 on plain ONNX Runtime, both measured in the same run;
2. the local service (real HTTP through uvicorn, 8 concurrent clients, one image per request) next to
   in-process prediction and a bare ``session.run`` on the same images, in the same run: p50/p99
   latency and throughput, for the fp32 and the kept model.

With ``--template object-detection/fast`` (or ``/accurate``) the same is done for a detector on
/work/shared/benchdata/raccoon_voc: it is judged as the app judges it (mAP50 within 1 point and the
original's boxes reproduced, ``trainers.detection.compression``) on every labeled photo, as the app does
(the held-out quarter, 26 photos, is too few to tell a 1-point loss); the kept copy's mAP50 on that quarter
is printed next to the original's.

    python bench/deploy.py [DATA_DIR] [--requests 400] [--clients 8] [--template NAME] [--no-serving]
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from benchdata import load_samples  # bench/ is on sys.path when a bench runs as a script


def percentiles(times_s) -> tuple[float, float]:
    ms = np.asarray(times_s) * 1000.0
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def run_clients(call, payloads, clients: int) -> dict:
    """Send ``payloads`` through ``call`` from ``clients`` threads; latency per call and throughput."""
    chunks = [payloads[i::clients] for i in range(clients)]
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(chunk):
        state = {}
        mine = []
        for payload in chunk:
            t0 = time.perf_counter()
            call(payload, state)
            mine.append(time.perf_counter() - t0)
        with lock:
            latencies.extend(mine)

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(worker, chunks))
    wall = time.perf_counter() - start
    p50, p99 = percentiles(latencies)
    return {"p50": p50, "p99": p99, "throughput": len(payloads) / wall}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_serving(artifact_path, images: list[bytes], clients: int) -> list[tuple[str, dict]]:
    import uvicorn

    from modeldesk.deploy import Predictor, create_app, load_artifact

    artifact = load_artifact(artifact_path)
    rows = []
    # Bare ONNX Runtime on already preprocessed tensors (the floor), sequential and concurrent.
    predictor = Predictor(artifact, device="cpu")
    session, name, out = predictor.session, predictor.input_name, predictor.output_name
    feeds = [predictor.input.feeds([predictor.preprocess(b)], name) for b in images]
    for feed in feeds[:5]:
        session.run([out], feed)
    rows.append(("bare session.run, 1 caller", run_clients(lambda f, s: session.run([out], f), feeds, 1)))
    rows.append(
        (
            f"bare session.run, {clients} callers",
            run_clients(lambda f, s: session.run([out], f), feeds, clients),
        )
    )
    rows.append(
        (
            f"Predictor.predict (decode+preprocess), {clients} callers",
            run_clients(lambda b, s: predictor.predict([b]), images, clients),
        )
    )
    # The real service over HTTP.
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(artifact, device="cpu"), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)

    def post(body, state):
        if "conn" not in state:
            state["conn"] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        state["conn"].request("POST", "/v1/predict", body=body, headers={"Content-Type": "image/jpeg"})
        response = state["conn"].getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"service answered {response.status}")

    try:
        post(images[0], {})
        rows.append((f"service POST /v1/predict, {clients} clients", run_clients(post, images, clients)))
    finally:
        server.should_exit = True
        thread.join(10)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", help="default: sign_digits, or raccoon_voc for a detector")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calibration", type=int, default=128)
    parser.add_argument("--template", default="image-classification/fast")
    parser.add_argument("--no-serving", action="store_true", help="print the compression table only")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="modeldesk-bench-deploy-"))
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, work: Path) -> int:
    from modeldesk.app.pipeline import compression_metric
    from modeldesk.deploy import compress_artifact, load_artifact
    from modeldesk.trainers.compression import head_refitter
    from modeldesk.trainers.detection.compression import judging_photos
    from modeldesk.trainers.detection.evaluation import evaluate_boxes
    from modeldesk.trainers.image.classification import train_image_classifier
    from modeldesk.trainers.detection.trainer import ObjectDetectionTrainer
    from train_detect import load_voc

    detector = args.template.startswith("object-detection/")
    data = Path(args.data or f"/work/shared/benchdata/{'raccoon_voc' if detector else 'sign_digits'}")
    samples = load_voc(data) if detector else load_samples(data)
    held_out = [s for s in samples if s.split == "test"]
    training = [s for s in samples if s.split != "test"]
    t0 = time.perf_counter()
    if detector:
        result = ObjectDetectionTrainer().train(
            training, args.template, work / "model", work / "cache", device="cpu"
        )
    else:
        result = train_image_classifier(training, args.template, work / "model", work / "cache", threads=2)
    train_s = time.perf_counter() - t0
    score = "mAP50" if detector else "accuracy"
    print(
        f"# {data.name}: {len(training)} training images, {len(held_out)} held out; template {args.template} "
        f"trained in {train_s:.1f} s, {score} {result.metrics.get('map50' if detector else 'accuracy')}"
    )

    train_paths = [s.path for s in training if s.split == "train"]
    rng = np.random.default_rng(0)
    calibration = [
        train_paths[i]
        for i in rng.choice(len(train_paths), min(args.calibration, len(train_paths)), replace=False)
    ]
    t0 = time.perf_counter()
    # The app judges candidates on its validation split; here the held-out quarter plays that role, and
    # heads are re-fitted on the images the model's own head was fitted on (never the held-out ones).
    if detector:  # judged as the app judges a detector: on every labeled photo (a quarter of 103 is too few)
        report = compress_artifact(
            result.artifact_dir,
            work / "compressed",
            calibration=calibration,
            validation=judging_photos(samples),
            threads=(1, 2),
            metric=compression_metric(load_artifact(result.artifact_dir)),
        )
    else:
        report = compress_artifact(
            result.artifact_dir,
            work / "compressed",
            calibration=calibration,
            validation=[(s.path, s.label) for s in held_out],
            threads=(1, 2),
            training=[(s.path, s.label) for s in training],
            refit_head=head_refitter(load_artifact(result.artifact_dir).card),
        )
    print(
        f"\n## Compression candidates ({len(report['candidates'])} tried in {time.perf_counter() - t0:.0f} s; "
        f"calibration {len(calibration)} train images, {score} on "
        f"{len(samples) if detector else len(held_out)} {'labeled' if detector else 'held-out'} images; "
        "latency: batch 8, ms per image)\n"
    )
    print(
        f"| candidate | in words | runtime | size KiB | ms/img 1 thread | ms/img 2 threads "
        f"| ms/img 2 threads, plain ORT | ms/img 2 threads, split | {score} | kept | reason |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|:-:|---|")
    for c in report["candidates"]:
        size = f"{c['size_bytes'] / 1024:.0f}" if c["size_bytes"] else "-"
        lat = c["latency_ms_by_threads"]
        by = c.get("latency_ms_by_runtime", {})
        acc = f"{c['accuracy']:.4f}" if c["accuracy"] is not None else "-"
        print(
            f"| {c['name']} | {c.get('words', '')} | {c.get('runtime') or '-'} | {size} | {lat.get('1', '-')} | "
            f"{lat.get('2', '-')} | {by.get('onnxruntime', {}).get('2', '-')} | "
            f"{by.get('onnxruntime-split', {}).get('2', '-')} | {acc} | {'yes' if c['kept'] else ''} | {c['reason']} |"
        )
    print(
        f"\nchosen: {report['chosen']} on {report.get('runtime')}; {score} fp32 {report['accuracy_fp32']:.4f} -> "
        f"{report['accuracy_compressed']:.4f}; speed-up against fp32 at its best runtime "
        + ", ".join(f"x{v:.2f} at {t} thread(s)" for t, v in report["speedup_by_threads"].items())
    )
    kept = next(c for c in report["candidates"] if c["kept"])
    fp32 = report["candidates"][0]
    plain = fp32.get("latency_ms_by_runtime", {}).get("onnxruntime", {}).get("2")
    if plain and kept["latency_ms_by_threads"].get("2"):
        print(
            f"against fp32 on plain ONNX Runtime at 2 threads ({plain:.2f} ms/img, same run): "
            f"x{plain / kept['latency_ms_by_threads']['2']:.2f}"
        )

    if detector:  # and the kept copy on the photos no part of it saw
        before, after = (
            evaluate_boxes(path, held_out)["map50"] for path in (result.artifact_dir, report["path"])
        )
        print(
            f"held-out mAP50 ({len(held_out)} photos never trained on): fp32 {before:.4f}, kept {after:.4f}"
        )

    if args.no_serving:
        return 0
    images = [Path(s.path).read_bytes() for s in held_out]
    images = (images * (args.requests // len(images) + 1))[: args.requests]
    for title, path in (("fp32", result.artifact_dir), (f"kept: {report['chosen']}", report["path"])):
        print(f"\n## Serving, {title} ({len(images)} requests of one image each)\n")
        print("| path | p50 ms | p99 ms | images/s |")
        print("|---|---:|---:|---:|")
        for name, row in bench_serving(path, images, args.clients):
            print(f"| {name} | {row['p50']:.2f} | {row['p99']:.2f} | {row['throughput']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
