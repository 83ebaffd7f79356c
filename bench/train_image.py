"""Held-out accuracy (with a 90% interval) and training time of every image-classification template.

Two sets: the hand-sign digits of ../shared/benchdata/sign_digits and spoken digits drawn as
spectrogram pictures (made from ../shared/benchdata/fsdd_audio, see ``benchdata.spectrogram_images``).
A quarter of each set is held out by a hash of the file name: no template sees it, not for selection,
not for its own evaluation, not for the final refit. Each template trains on the rest (split again by
hash into train / val / test, as the app would) with a cold feature cache; then its exported model is
scored on the held-out quarter through the predictor. In the same run the baseline of issue 15:
embedding + 2x2 and 3x3 grids of the stride 16 and 32 maps + logistic regression (l2 = 1/N, like
scikit-learn's C=1) fitted on all the non-held-out photos. Latency: each exported graph at batch 1,
decoding excluded (the fastest of 20 runs), next to the bare backbone graph on the same photo.

    python bench/train_image.py [--threads 2] [--sets sign,spectro] [--budget SECONDS] [--benchdata DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from benchdata import load_samples, spectrogram_images  # bench/ is on sys.path when a bench runs as a script
from timing import fastest, latency_ms

BASELINE_PARTS = (("embedding", 1), ("stride16", 2), ("stride16", 3), ("stride32", 2), ("stride32", 3))


def inner_split(samples):
    """The non-held-out photos, split again by hash as a project would be: ~67% train, 13% val, 20% test."""
    out = []
    for s in samples:
        if s.split == "test":
            continue
        bucket = int(hashlib.sha1(("inner" + Path(s.source).name).encode()).hexdigest(), 16) % 15
        out.append(s.with_split("test" if bucket < 3 else "val" if bucket < 5 else "train"))
    return out


def baseline(dev, held, cache_dir: Path, threads: int) -> tuple[np.ndarray, float]:
    """Issue 15's baseline: correctness (0/1) per held-out photo, and seconds."""
    from modeldesk.trainers.backbones import get_backbone
    from modeldesk.trainers.feature_cache import FeatureCache
    from modeldesk.trainers.features import FeatureSpec, Pool, extract_feature_views
    from modeldesk.trainers.heads import LogisticRegressionHead

    started = time.perf_counter()
    spec = FeatureSpec("bench-baseline", tuple(Pool(o, grid=g) for o, g in BASELINE_PARTS))
    samples = dev + held
    result = extract_feature_views(
        get_backbone("efficientnet-lite0"),
        [(s.key, s.path) for s in samples],
        FeatureCache(cache_dir),
        features=spec,
        threads=threads,
        device="cpu",
    )["identity"]
    X = result.features
    index = {k: i for i, k in enumerate(result.keys)}
    head = LogisticRegressionHead(l2=1.0 / len(dev), max_iter=1000).fit(
        X[[index[s.key] for s in dev]], [s.label for s in dev]
    )
    pred = head.predict(X[[index[s.key] for s in held]])
    return pred == np.array([s.label for s in held]), time.perf_counter() - started


def held_out(artifact_dir, held) -> np.ndarray:
    """Correctness per held-out photo of the exported model, run through the predictor."""
    from modeldesk.deploy import Predictor, load_artifact

    predictor = Predictor(load_artifact(artifact_dir))
    predicted = []
    for start in range(0, len(held), 32):
        predicted += [p["label"] for p in predictor.predict([s.source for s in held[start : start + 32]])]
    return np.array(predicted) == np.array([s.label for s in held])


def backbone_latency_ms(path: str, threads: int, tmp: Path, runs: int = 20) -> float:
    """The reference: the bare backbone graph (every output) at batch 1 on the same photo."""
    from modeldesk.deploy.preprocess import preprocess_image
    from modeldesk.deploy.runtime import create_session
    from modeldesk.trainers.backbones import get_backbone

    backbone = get_backbone("efficientnet-lite0")
    session = create_session(backbone.onnx_path(tmp / "graphs"), device="cpu", threads=threads)
    feeds = {backbone.input_name: preprocess_image(path, backbone.spec)[None]}
    return fastest(lambda: session.run(None, feeds), runs)


def interval(correct: np.ndarray) -> str:
    from modeldesk.trainers.metrics import accuracy_interval

    r = accuracy_interval(int(correct.sum()), len(correct))
    return f"{100 * r['low']:.1f}-{100 * r['high']:.1f}"


def run_set(name: str, root: Path, threads: int, budget: float | None, tmp: Path) -> None:
    from modeldesk.trainers.image.classification import train_image_classifier
    from modeldesk.trainers.templates import list_templates

    samples = load_samples(root)
    held = [s for s in samples if s.split == "test"]
    dev = inner_split(samples)
    inner = {split: sum(s.split == split for s in dev) for split in ("train", "val", "test")}
    print(
        f"\n{name}: {len(samples)} images, {len({s.label for s in samples})} classes; held out {len(held)}; "
        f"the templates get {len(dev)} split {inner}",
        flush=True,
    )
    rows = []
    ok, seconds = baseline(dev, held, tmp / f"{name}-baseline", threads)
    photo = held[0].source
    rows.append(("baseline: emb + s16/s32 2x2,3x3 grids + LR", ok, seconds, "-", "-", None))
    print(f"  {rows[-1][0]}: {ok.mean():.2%} ({seconds:.0f} s)", flush=True)
    for template in list_templates("image-classification"):
        slug = template.name.replace("/", "-")
        started = time.perf_counter()
        result = train_image_classifier(
            dev,
            template,
            tmp / f"{name}-{slug}",
            tmp / f"{name}-cache-{slug}",
            time_budget=budget,
            device="cpu",
            threads=threads,
        )
        seconds = time.perf_counter() - started
        ok = held_out(result.artifact_dir, held)
        ms = latency_ms(result.artifact_dir, photo, threads)
        own = result.metrics["interval"]
        best = result.metrics.get("search", {}).get("best")
        chosen = f"{best['params']} views={best['views']}" if best else "-"
        rows.append(
            (
                template.name,
                ok,
                seconds,
                f"{own['text']} (n={own['n']}), ETA {result.plan['eta_s']:.0f} s",
                chosen,
                ms,
            )
        )
        print(f"  {template.name}: {ok.mean():.2%} ({seconds:.0f} s)", flush=True)
    width = max(len(r[0]) for r in rows)
    reference = backbone_latency_ms(photo, threads, tmp)
    print(
        f"\n{'model':<{width}}  held-out  90% interval  train s (cold)  ms/photo  "
        "its own test estimate / ETA   chosen"
    )
    for label, ok, seconds, own, chosen, ms in rows:
        latency = "-" if ms is None else f"{ms:.1f}"
        print(
            f"{label:<{width}}  {ok.mean():8.2%}  {interval(ok):>12}  {seconds:14.0f}  {latency:>8}  "
            f"{own:<30}  {chosen}"
        )
    print(
        f"(held-out = {len(held)} images; {threads} threads; ms/photo: the exported graph at batch 1, "
        f"decoding excluded, fastest of 20; the bare backbone on the same photo: {reference:.1f} ms)",
        flush=True,
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--budget", type=float, default=None, help="seconds per template (default: its own)")
    parser.add_argument("--sets", default="sign,spectro")
    parser.add_argument("--benchdata", type=Path, default=Path("/work/shared/benchdata"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        tmp = Path(tmp)
        for name in args.sets.split(","):
            if name == "sign":
                root = args.benchdata / "sign_digits"
            elif name == "spectro":
                root = spectrogram_images(
                    args.benchdata / "fsdd_audio", Path(tempfile.gettempdir()) / "modeldesk-bench-spectro"
                )
            else:
                raise SystemExit(f"unknown set {name!r}: choose sign or spectro")
            run_set(name, root, args.threads, args.budget, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
