"""Feature-extraction throughput through the app's pipeline next to a bare ONNX Runtime loop.

The pipeline (decode + resize in a thread pool, backbone + pooling in batches, one cache write per
image) runs on a cold cache; the reference runs the same graph over the same, already preprocessed
tensors with the same threads and batch size, in the same process. The two are interleaved ``--rounds`` times and the best round of each is kept,
so load from other processes on the machine disturbs the ratio less. Reads
/work/shared/benchdata/sign_digits (or the folder given as the first argument).

    python bench/features.py [DATA_DIR] [--threads 2] [--batch-size 32] [--limit 1026] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default="/work/shared/benchdata/sign_digits")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--limit", type=int, default=1026)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    from modeldesk.deploy.preprocess import preprocess_image
    from modeldesk.deploy.runtime import create_session
    from modeldesk.trainers.backbones import get_backbone
    from modeldesk.trainers.feature_cache import FeatureCache
    from modeldesk.trainers.features import FEATURES_OUTPUT, extract_features, feature_model
    from modeldesk.trainers.templates import get_template

    paths = sorted(p for p in Path(args.data).rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    paths = paths[: args.limit]
    items = [(hashlib.sha1(str(p).encode()).hexdigest(), str(p)) for p in paths]
    backbone = get_backbone("efficientnet-lite0")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-features-") as tmp:
        graph_dir = Path(tmp) / "graphs"
        backbone.onnx_path(graph_dir)  # build once, outside the timings
        tensors = np.stack([preprocess_image(p, backbone.spec) for p in paths])
        single = backbone.create_session(graph_dir, device="cpu", threads=args.threads)
        latencies = []
        for index in range(60):
            started = time.perf_counter()
            single.run(["logits"], {"image": tensors[index % len(tensors)][None]})
            latencies.append(time.perf_counter() - started)
        latency_ms = 1000 * float(np.median(latencies[10:]))
        for spec in (
            get_template("image-classification/fast").features,
            get_template("image-classification/accurate").features,
        ):
            session = create_session(
                feature_model(backbone, spec, graph_dir).SerializeToString(),
                device="cpu",
                threads=args.threads,
            )
            session.run([FEATURES_OUTPUT], {"image": tensors[:2]})
            bare = app = 0.0
            bare_cpu = app_cpu = float("inf")
            for round_ in range(args.rounds):
                started, cpu = time.perf_counter(), time.process_time()
                for start in range(0, len(tensors), args.batch_size):
                    session.run([FEATURES_OUTPUT], {"image": tensors[start : start + args.batch_size]})
                bare = max(bare, len(tensors) / (time.perf_counter() - started))
                bare_cpu = min(bare_cpu, (time.process_time() - cpu) * 1000 / len(tensors))
                cache = FeatureCache(Path(tmp) / f"cache-{spec.name}-{round_}")
                started, cpu = time.perf_counter(), time.process_time()
                result = extract_features(
                    backbone,
                    items,
                    cache,
                    features=spec,
                    device="cpu",
                    threads=args.threads,
                    batch_size=args.batch_size,
                    graph_dir=graph_dir,
                )
                app = max(app, len(items) / (time.perf_counter() - started))
                app_cpu = min(app_cpu, (time.process_time() - cpu) * 1000 / len(items))
                assert len(result.keys) == len(items), result.skipped
            started = time.perf_counter()
            extract_features(
                backbone, items, cache, features=spec, device="cpu", threads=args.threads, graph_dir=graph_dir
            )
            warm = len(items) / (time.perf_counter() - started)
            rows.append((spec.name, app, bare, app / bare, warm, app_cpu, bare_cpu))
    print(
        f"{len(items)} images from {args.data}; {args.threads} threads, batch {args.batch_size}, "
        f"best of {args.rounds} interleaved rounds\n"
    )
    print(
        f"{'features':<18} {'pipeline img/s':>15} {'bare ORT img/s':>15} {'ratio':>6} "
        f"{'CPU ms/img pipeline':>20} {'CPU ms/img bare':>16} {'cached re-run img/s':>20}"
    )
    for name, app, bare, ratio, warm, app_cpu, bare_cpu in rows:
        print(
            f"{name:<18} {app:15.1f} {bare:15.1f} {ratio:6.2f} {app_cpu:20.2f} {bare_cpu:16.2f} {warm:20.0f}"
        )
    print(f"\nbackbone latency, one image, {args.threads} threads: {latency_ms:.2f} ms (median of 50)")
    print(
        "\npipeline = decode + resize + backbone + pooling + cache write, cold cache, including session "
        "creation;\nCPU ms/img = process CPU time per image (all threads), less sensitive to other load;\nbare ORT = the same graph over already preprocessed tensors."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
