"""Feature-extraction throughput through the app's pipeline next to a bare ONNX Runtime loop.

The pipeline (decode + resize in a thread pool, backbone + pooling in batches, one cache write per
image) runs on a cold cache; the reference runs the same graph over the same, already preprocessed
tensors with the same threads and batch size, in the same process. Reads
/work/shared/benchdata/sign_digits (or the folder given as the first argument).

    python bench/features.py [DATA_DIR] [--threads 2] [--batch-size 32] [--limit 600]
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
    parser.add_argument("--limit", type=int, default=600)
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
        for spec in (get_template("image-classification/fast").features,
                     get_template("image-classification/accurate").features):
            session = create_session(feature_model(backbone, spec, graph_dir).SerializeToString(),
                                     device="cpu", threads=args.threads)
            session.run([FEATURES_OUTPUT], {"image": tensors[:2]})
            started = time.perf_counter()
            for start in range(0, len(tensors), args.batch_size):
                session.run([FEATURES_OUTPUT], {"image": tensors[start:start + args.batch_size]})
            bare = len(tensors) / (time.perf_counter() - started)
            cache = FeatureCache(Path(tmp) / f"cache-{spec.name}")
            started = time.perf_counter()
            result = extract_features(backbone, items, cache, features=spec, device="cpu",
                                      threads=args.threads, batch_size=args.batch_size, graph_dir=graph_dir)
            app = len(items) / (time.perf_counter() - started)
            assert len(result.keys) == len(items), result.skipped
            started = time.perf_counter()
            extract_features(backbone, items, cache, features=spec, device="cpu", threads=args.threads,
                             graph_dir=graph_dir)
            warm = len(items) / (time.perf_counter() - started)
            rows.append((spec.name, app, bare, app / bare, warm))
    print(f"{len(items)} images from {args.data}; {args.threads} threads, batch {args.batch_size}\n")
    print(f"{'features':<20} {'pipeline img/s':>15} {'bare ORT img/s':>15} {'ratio':>6} {'cached re-run img/s':>20}")
    for name, app, bare, ratio, warm in rows:
        print(f"{name:<20} {app:15.1f} {bare:15.1f} {ratio:6.2f} {warm:20.0f}")
    print("\npipeline = decode + resize + backbone + pooling + cache write, cold cache, including session "
          "creation;\nbare ORT = the same graph over already preprocessed tensors.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
