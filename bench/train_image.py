"""Held-out accuracy and training time of every image-classification template on sign_digits.

Reads /work/shared/benchdata/sign_digits (or the folder given as the first argument), holds out a
quarter of the images by a hash of the file name (never trained on, not even for early stopping),
trains each template with 2 threads and a cold feature cache, and prints one table together with the
frozen-embedding + logistic-regression reference measured in the same run.

    python bench/train_image.py [DATA_DIR] [--threads 2] [--budget 120]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchdata import load_samples  # bench/ is on sys.path when a bench runs as a script


def baseline(samples, cache_dir: Path, threads: int) -> tuple[float, float]:
    """Frozen pooled embedding + logistic regression (sklearn-like default C=1), held-out accuracy."""
    from modeldesk.trainers.backbones import get_backbone
    from modeldesk.trainers.feature_cache import FeatureCache
    from modeldesk.trainers.features import extract_features
    from modeldesk.trainers.heads import LogisticRegressionHead

    started = time.perf_counter()
    backbone = get_backbone("efficientnet-lite0")
    result = extract_features(backbone, [(s.key, s.path) for s in samples], FeatureCache(cache_dir),
                              threads=threads)
    index = {k: i for i, k in enumerate(result.keys)}
    fit = [s for s in samples if s.split != "test"]
    test = [s for s in samples if s.split == "test"]
    X = result.features
    head = LogisticRegressionHead(l2=1.0 / len(fit), max_iter=1000).fit(
        X[[index[s.key] for s in fit]], [s.label for s in fit])
    pred = head.predict(X[[index[s.key] for s in test]])
    accuracy = float(np.mean(pred == np.array([s.label for s in test])))
    return accuracy, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default="/work/shared/benchdata/sign_digits")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--budget", type=float, default=120.0)
    args = parser.parse_args(argv)

    from modeldesk.trainers.image_classification import train_image_classifier
    from modeldesk.trainers.templates import list_templates

    samples = load_samples(Path(args.data))
    counts = {name: sum(s.split == name for s in samples) for name in ("train", "val", "test")}
    print(f"{args.data}: {len(samples)} images, {len({s.label for s in samples})} classes, splits {counts}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        tmp = Path(tmp)
        acc, seconds = baseline(samples, tmp / "baseline-cache", args.threads)
        rows.append(("reference: embedding + logistic regression", acc, seconds, "-"))
        for template in list_templates("image-classification"):
            cache = tmp / f"cache-{template.name.replace('/', '-')}"
            started = time.perf_counter()
            result = train_image_classifier(samples, template, tmp / template.name.replace("/", "-"), cache,
                                            time_budget=args.budget, device="cpu", threads=args.threads)
            seconds = time.perf_counter() - started
            best = result.metrics.get("search", {}).get("best")
            chosen = f"{best['params']} views={best['views']}" if best else "-"
            rows.append((f"template {template.name}", result.metrics["accuracy"], seconds, chosen))
    width = max(len(r[0]) for r in rows)
    print(f"\n{'model':<{width}}  held-out acc  train time (s, cold cache)  chosen")
    for name, acc, seconds, chosen in rows:
        print(f"{name:<{width}}  {acc:12.2%}  {seconds:26.1f}  {chosen}")
    print(f"(held-out = {counts['test']} test images; {args.threads} threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
