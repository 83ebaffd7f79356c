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
/work/shared/benchdata/raccoon_voc, judged as the app judges it (``trainers.detection.compression``: on
every labeled photo, each by a detection head fitted across folds without it);
with ``--template sound-classification/fast`` (or ``/accurate``) for a sound model on
/work/shared/benchdata/fsdd_audio (fp32 against int8, judged as the app does: every labeled clip, by
heads fitted across folds).

3. the check of the verdict on data compression never saw: the model is trained and compressed on the
   other three quarters only, judged there exactly as the app judges (a classifier on all of them, by
   heads fitted across folds; a detector too, by detection heads fitted across folds: raccoon_voc's
   three quarters give 78 photos, where the photos outside its training split, 9, were too few), and
   the kept copy's loss against the original is then measured on the held-out quarter, paired, with a 95% interval, next to the bound
   the app claimed. ``--repeats 3`` repeats it on three different held-out quarters (the first is the
   usual one) and counts how often the claim held. A claim is about the copy's true loss, and a quarter
   (about 250 photos, where one photo is 0.4 points) measures that loss only to within about 2 points,
   so the loss seen there lies above a true claim about half the time when the true loss is near the
   bound: the claim counts as broken only when the held-out quarter's 95% interval lies wholly above it
   (its low end above the bound), and the quarters are pooled at the end (the mean loss seen, with
   its interval, against the mean bound claimed).

    python bench/deploy.py [DATA_DIR] [--requests 400] [--clients 8] [--template NAME] [--no-serving]
                           [--repeats 1] [--first 0]

At a reduced but honest scale, for the slow templates (a compression of the fast one took 14-39 min on
the loaded 2-core machine): ``--templates accurate,best --quarters 1`` checks each template on one
held-out quarter (the table of the claim per template), ``--time-budget S`` caps the training search
(the model is weaker, the claim about its copy is judged the same way), ``--candidates a,b`` restricts
the compression search to those recipes (names as in the candidates table; the verdict's fixed order
and its bound are unchanged, over fewer copies) and ``--latency-runs`` sets the timing rounds. The
features are computed once for all the templates of a run (accurate and best share them).
"""

from __future__ import annotations

import argparse
import hashlib
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
    parser.add_argument(
        "data", nargs="?", help="default: sign_digits, raccoon_voc for a detector, fsdd_audio for sound"
    )
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calibration", type=int, default=128)
    parser.add_argument("--template", default="image-classification/fast")
    parser.add_argument("--no-serving", action="store_true", help="print the compression table only")
    parser.add_argument("--repeats", type=int, default=1, help="held-out quarters to check the claim on")
    parser.add_argument("--first", type=int, default=0, help="the first held-out quarter (0: the usual one)")
    parser.add_argument(
        "--templates",
        help="comma-separated templates, one after the other (accurate = image-classification/accurate)",
    )
    parser.add_argument("--quarters", type=int, help="the same as --repeats")
    parser.add_argument(
        "--time-budget", type=float, help="seconds for each training's search (default: the template's)"
    )
    parser.add_argument(
        "--candidates", help="comma-separated compression recipes (default: the app's search)"
    )
    parser.add_argument("--latency-runs", type=int, default=9, help="timing rounds of each candidate")
    args = parser.parse_args(argv)
    repeats = args.quarters or args.repeats
    templates = [
        t if "/" in t else f"image-classification/{t}" for t in (args.templates or args.template).split(",")
    ]
    cache = Path(tempfile.mkdtemp(prefix="modeldesk-bench-deploy-cache-"))
    summary = []
    try:
        for template in templates:
            args.template = template
            summary.append((template, check_template(args, repeats, cache)))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if len(summary) > 1:
        print("\n## The claim per template\n")
        print("| template | quarters | held | kept (speed-up at 2 threads) | claimed | held-out loss |")
        print("|---|---:|---:|---|---|---|")
        for template, checks in summary:
            print(
                f"| {template} | {len(checks)} | {sum(c['held'] for c in checks)} | "
                + "; ".join(f"{c['kept']} (x{c['speedup']:.2f})" for c in checks)
                + " | "
                + "; ".join(f"{c['bound']:.2f}" for c in checks)
                + " | "
                + "; ".join(f"{c['loss']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}]" for c in checks)
                + " |"
            )
    return 0


def check_template(args, repeats: int, cache: Path) -> list[dict]:
    """Train, compress and check ``args.template`` on ``repeats`` held-out quarters; prints the table."""
    checks = []
    serving = args.no_serving
    for repeat in range(args.first, args.first + repeats):
        work = Path(tempfile.mkdtemp(prefix="modeldesk-bench-deploy-"))
        try:
            checks.append(run(args, work, repeat, cache))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        args.no_serving = True  # serving is measured once
    args.no_serving = serving
    print(f"\n## The claim on data compression never saw ({args.template})\n")
    print(
        "| held-out quarter | kept | speed-up, 2 threads | claimed | held-out loss, 95% interval "
        "| seen above the claim | held |"
    )
    print("|---:|---|---:|---|---|:-:|:-:|")
    for repeat, check in enumerate(checks, start=args.first):
        print(
            f"| {repeat} ({check['n']} items) | {check['kept']} | x{check['speedup']:.2f} | "
            f"at most {check['bound']:.2f} points, {check['confidence']:.0%} sure, on {check['judged']} | "
            f"{check['loss']:+.2f} [{check['low']:+.2f}, {check['high']:+.2f}] | "
            f"{'yes' if check['above'] else 'no'} | {'yes' if check['held'] else 'NO'} |"
        )
    pooled = pool(checks)
    print(
        f"\nthe claim held {sum(c['held'] for c in checks)} of {len(checks)} times (broken: the held-out "
        f"interval wholly above it); the loss seen was above it {sum(c['above'] for c in checks)} times. "
        f"Pooled over the {len(checks)} quarters: loss {pooled['loss']:+.2f} points "
        f"[{pooled['low']:+.2f}, {pooled['high']:+.2f}] against a mean claim of {pooled['bound']:.2f}"
    )
    return checks


def pool(checks: list[dict]) -> dict:
    """The mean held-out loss over the quarters with a 95% interval (each quarter's half-width taken
    as 1.96 standard errors; the quarters' models are trained apart), and the mean bound claimed."""
    k = len(checks)
    loss = sum(c["loss"] for c in checks) / k
    se = np.sqrt(sum(((c["high"] - c["low"]) / (2 * 1.96)) ** 2 for c in checks)) / k
    return {
        "loss": loss,
        "low": loss - 1.96 * se,
        "high": loss + 1.96 * se,
        "bound": sum(c["bound"] for c in checks) / k,
    }


def reshuffle(samples, repeat: int):
    """``samples`` with another held-out quarter for ``repeat`` > 0 (a salted hash of the file name; the
    rest 10% val, 65% train as in ``benchdata.load_samples``); repeat 0 keeps the usual split."""
    import dataclasses

    if repeat == 0:
        return samples
    out = []
    for s in samples:
        bucket = int(hashlib.sha1(f"{repeat}:{Path(s.path).name}".encode()).hexdigest(), 16) % 20
        split = "test" if bucket < 5 else "val" if bucket < 7 else "train"
        out.append(dataclasses.replace(s, split=split))
    return out


def unseen_check(original, kept, held_out, detector: bool, metric) -> dict:
    """The kept copy's loss against the original on ``held_out`` (points), paired, with a two-sided 95%
    interval: Tango's score bounds for right/wrong answers, a paired bootstrap for mAP50."""
    from modeldesk.deploy import Predictor
    from modeldesk.deploy.verdict import bootstrap_loss_bound, discordant_loss_bound

    paths = [s.path for s in held_out]
    answers = []
    for path in (original, kept):
        predictor = Predictor(path, device="cpu")
        if detector and hasattr(predictor.output, "threshold"):
            predictor.output.threshold = 0.0  # every box, as mAP50 is scored
        answers.append(predictor.predict(paths))
    if detector:
        targets = [s.target for s in held_out]
        score = metric.score
        loss = score(answers[0], targets) - score(answers[1], targets)
        high = bootstrap_loss_bound(score, answers[0], answers[1], targets, 0.975)
        low = -bootstrap_loss_bound(score, answers[1], answers[0], targets, 0.975)
    else:
        right = [np.array([a["label"] == s.target for a, s in zip(ans, held_out)]) for ans in answers]
        b, c, n = int(np.sum(right[0] & ~right[1])), int(np.sum(~right[0] & right[1])), len(held_out)
        loss, high, low = (
            (b - c) / n,
            discordant_loss_bound(b, c, n, 0.975),
            -discordant_loss_bound(c, b, n, 0.975),
        )
    return {"loss": 100 * loss, "low": 100 * low, "high": 100 * high, "n": len(held_out)}


def refused(held_out, judged: int) -> dict:
    """The check of a compression the app refused on ``judged`` photos: the original is kept, and
    nothing is claimed of a copy."""
    return {
        "loss": 0.0,
        "low": 0.0,
        "high": 0.0,
        "n": len(held_out),
        "kept": "the original (compression refused)",
        "speedup": 1.0,
        "bound": 0.0,
        "confidence": 1.0,
        "judged": judged,
        "above": False,
        "held": True,
    }


def run(args, work: Path, repeat: int = 0, cache: Path | None = None) -> dict:
    from train_detect import load_voc

    from modeldesk.app.pipeline import compression_metric
    from modeldesk.deploy import compress_artifact, load_artifact
    from modeldesk.errors import UserError
    from modeldesk.trainers.compression import head_refitter
    from modeldesk.trainers.detection.compression import boxed_photos, detection_judging
    from modeldesk.trainers.detection.trainer import ObjectDetectionTrainer
    from modeldesk.trainers.image.classification import train_image_classifier

    detector = args.template.startswith("object-detection/")
    sound = args.template.startswith("sound-classification/")
    default = "raccoon_voc" if detector else "fsdd_audio" if sound else "sign_digits"
    data = Path(args.data or f"/work/shared/benchdata/{default}")
    if detector:
        samples = load_voc(data)
    else:
        samples = load_samples(data, suffixes=(".wav",)) if sound else load_samples(data)
    samples = reshuffle(samples, repeat)
    cache = cache or work / "cache"
    budget = {"time_budget": args.time_budget} if args.time_budget else {}
    search = {
        "latency_runs": args.latency_runs,
        **({"candidates": args.candidates.split(",")} if args.candidates else {}),
    }
    held_out = [s for s in samples if s.split == "test"]
    training = [s for s in samples if s.split != "test"]
    t0 = time.perf_counter()
    if detector:
        result = ObjectDetectionTrainer().train(
            training, args.template, work / "model", cache, device="cpu", **budget
        )
    elif sound:
        from modeldesk.trainers.sound.trainer import SoundClassificationTrainer

        result = SoundClassificationTrainer().train(
            training, args.template, work / "model", cache, device="cpu", threads=2, **budget
        )
    else:
        result = train_image_classifier(training, args.template, work / "model", cache, threads=2, **budget)
    train_s = time.perf_counter() - t0
    score = "mAP50" if detector else "accuracy"
    noun = "photos" if not sound else "clips"
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
    # Judged as the app judges (app.pipeline): the held-out quarter is a part compression never sees.
    metric = compression_metric(load_artifact(result.artifact_dir))
    if detector:  # on every labeled photo, by detection heads fitted across folds (app.pipeline)
        try:
            metric, judging = detection_judging(load_artifact(result.artifact_dir), training, cache)
        except UserError as exc:  # the app refuses: the original is what the user keeps
            print(f"\ncompression refused, as the app refuses it: {exc}")
            return refused(held_out, len(boxed_photos(training)))
        if metric.folds is not None:
            print(
                f"\ndetection heads fitted across {len(metric.folds.heads)} folds of "
                f"{len(metric.folds.samples)} photos in {metric.folds.seconds:.1f} s"
            )
        report = compress_artifact(
            result.artifact_dir,
            work / "compressed",
            calibration=calibration,
            validation=judging,
            threads=(1, 2),
            metric=metric,
            **search,
        )
    elif sound:  # on every labeled clip, by heads fitted across folds (app.pipeline), one clip at a time
        report = compress_artifact(
            result.artifact_dir,
            work / "compressed",
            calibration=calibration,
            validation=[(s.path, s.label) for s in training],
            threads=(1, 2),
            refit_head=head_refitter(load_artifact(result.artifact_dir).card),
            **search,
        )
    else:  # on every labeled photo of the project, by heads fitted across folds
        labeled = [(s.path, s.label) for s in training]
        report = compress_artifact(
            result.artifact_dir,
            work / "compressed",
            calibration=calibration,
            validation=labeled,
            threads=(1, 2),
            training=labeled,
            refit_head=head_refitter(load_artifact(result.artifact_dir).card),
            **search,
        )
    print(
        f"\n## Compression candidates ({len(report['candidates'])} tried in {time.perf_counter() - t0:.0f} s; "
        f"calibration {len(calibration)} train images, {score} on the {report['judged_examples']} labeled "
        "images of the project (never the held-out ones); latency: batch 8, ms per image)\n"
    )
    print(
        f"| candidate | in words | runtime | size KiB | ms/img 1 thread | ms/img 2 threads "
        f"| ms/img 2 threads, plain ORT | ms/img 2 threads, split | {score} | max loss | kept | reason |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|:-:|---|")
    for c in report["candidates"]:
        size = f"{c['size_bytes'] / 1024:.0f}" if c["size_bytes"] else "-"
        lat = c.get("latency_ms_by_threads") or {"2": c["latency_ms"]}  # clips: timed at 2 threads only
        by = c.get("latency_ms_by_runtime", {})
        acc = f"{c['accuracy']:.4f}" if c["accuracy"] is not None else "-"
        bound = f"{c['loss_bound']:.2f}" if c.get("loss_bound") is not None else "-"
        print(
            f"| {c['name']} | {c.get('words', '')} | {c.get('runtime') or '-'} | {size} | {lat.get('1', '-')} | "
            f"{lat.get('2', '-')} | {by.get('onnxruntime', {}).get('2', '-')} | "
            f"{by.get('onnxruntime-split', {}).get('2', '-')} | {acc} | {bound} | {'yes' if c['kept'] else ''} | "
            f"{c['reason']} |"
        )
    print(
        f"\nchosen: {report['chosen']} on {report.get('runtime')}; {score} fp32 {report['accuracy_fp32']:.4f} -> "
        f"{report['accuracy_compressed']:.4f}; speed-up against fp32 at its best runtime "
        + ", ".join(
            f"x{v:.2f} at {t} thread(s)"
            for t, v in report.get("speedup_by_threads", {"2": report["speedup"]}).items()
        )
    )
    print(report["claim"])
    kept = next(c for c in report["candidates"] if c["kept"])
    fp32 = report["candidates"][0]
    plain = fp32.get("latency_ms_by_runtime", {}).get("onnxruntime", {}).get("2")
    if plain and kept.get("latency_ms_by_threads", {}).get("2"):
        print(
            f"against fp32 on plain ONNX Runtime at 2 threads ({plain:.2f} ms/img, same run): "
            f"x{plain / kept['latency_ms_by_threads']['2']:.2f}"
        )

    check = unseen_check(result.artifact_dir, report["path"], held_out, detector, metric)
    print(
        f"on the {check['n']} held-out {noun}: loss {check['loss']:+.2f} points "
        f"(95% [{check['low']:+.2f}, {check['high']:+.2f}]); claimed at most {report['loss_bound']:.2f}"
    )
    check.update(
        kept=kept.get("plain_name") or report["chosen"],
        speedup=report.get("speedup_by_threads", {}).get("2", report["speedup"]),
        bound=report["loss_bound"],
        confidence=report["confidence"],
        judged=report["judged_examples"],
        above=check["loss"] > report["loss_bound"] + 1e-9,
        held=check["low"] <= report["loss_bound"] + 1e-9,  # broken only when the interval lies above it
    )
    if args.no_serving or sound:  # the service bench posts photos
        return check
    images = [Path(s.path).read_bytes() for s in held_out]
    images = (images * (args.requests // len(images) + 1))[: args.requests]
    for title, path in (("fp32", result.artifact_dir), (f"kept: {report['chosen']}", report["path"])):
        print(f"\n## Serving, {title} ({len(images)} requests of one image each)\n")
        print("| path | p50 ms | p99 ms | images/s |")
        print("|---|---:|---:|---:|")
        for name, row in bench_serving(path, images, args.clients):
            print(f"| {name} | {row['p50']:.2f} | {row['p99']:.2f} | {row['throughput']:.0f} |")
    return check


if __name__ == "__main__":
    sys.exit(main())
