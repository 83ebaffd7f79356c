"""Held-out accuracy, training time and latency per clip of every sound template on fsdd_audio.

Reads /work/shared/benchdata/fsdd_audio (or the folder given as the first argument), holds out a
quarter of the clips by a hash of the file name (the split every benchmark uses: never trained on,
not even for early stopping), trains each template with a cold feature cache and prints one table
together with the plain log-mel reference (mean and standard deviation of the 32 log-mel bands
from the same front end + logistic regression) measured in the same run.

    python bench/train_sound.py [DATA_DIR] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from benchdata import load_samples  # bench/ is on sys.path when a bench runs as a script


def reference(samples) -> tuple[float, float, float]:
    """Log-mel statistics + logistic regression: (held-out accuracy, seconds, ms per clip)."""
    from modeldesk.deploy.audio_input import AudioSpec, load_waveform
    from modeldesk.deploy.runtime import create_session
    from modeldesk.trainers.backbones.sound import LOGMEL, backbone_nodes, make_model
    from modeldesk.trainers.heads import LogisticRegressionHead

    started = time.perf_counter()
    nodes, inits = backbone_nodes()
    used = {LOGMEL}
    keep = []
    for node in reversed(nodes):  # only the front end: the nodes LOGMEL depends on
        if set(node.output) & used:
            keep.append(node)
            used |= set(node.input)
    model = make_model(keep[::-1], [i for i in inits if i.name in used], [(LOGMEL, ["frames", 32])], "logmel")
    session = create_session(model.SerializeToString(), device="cpu", threads=1)
    spec = AudioSpec()
    features, times = [], []
    for s in samples:
        t0 = time.perf_counter()
        mel = session.run([LOGMEL], {"waveform": load_waveform(s.path, spec)[None]})[0]
        features.append(np.concatenate([mel.mean(0), mel.std(0)]))
        times.append(time.perf_counter() - t0)
    X, y = np.array(features), np.array([s.label for s in samples])
    split = np.array([s.split for s in samples])
    best = max(
        (1e-3, 1e-2, 1e-1),
        key=lambda l2: np.mean(
            LogisticRegressionHead(l2=l2, max_iter=1000)
            .fit(X[split == "train"], y[split == "train"])
            .predict(X[split == "val"])
            == y[split == "val"]
        ),
    )
    head = LogisticRegressionHead(l2=best, max_iter=1000).fit(X[split != "test"], y[split != "test"])
    accuracy = float(np.mean(head.predict(X[split == "test"]) == y[split == "test"]))
    return accuracy, time.perf_counter() - started, 1000 * float(np.median(times))


def latency_ms(artifact_dir, paths) -> tuple[float, float]:
    """Median ms per clip: the whole predictor (WAV decode + resample + graph) and the graph alone."""
    from modeldesk.deploy import Predictor

    predictor = Predictor(artifact_dir, device="cpu", threads=1)
    whole, graph = [], []
    for path in paths:
        t0 = time.perf_counter()
        waveform = predictor.preprocess(path)
        t1 = time.perf_counter()
        predictor.predict_tensors(waveform[None])
        t2 = time.perf_counter()
        whole.append(t2 - t0)
        graph.append(t2 - t1)
    return 1000 * float(np.median(whole)), 1000 * float(np.median(graph))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default="/work/shared/benchdata/fsdd_audio")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    from modeldesk.trainers.sound.trainer import SoundClassificationTrainer
    from modeldesk.trainers.templates import list_templates

    samples = load_samples(Path(args.data), suffixes=(".wav",))
    counts = {name: sum(s.split == name for s in samples) for name in ("train", "val", "test")}
    print(f"{args.data}: {len(samples)} clips, {len({s.label for s in samples})} classes, splits {counts}")
    test_paths = [s.path for s in samples if s.split == "test"][:100]
    acc, seconds, ms = reference(samples)
    rows = [("reference: log-mel mean+std + logistic regression", acc, seconds, ms, ms, "-")]
    with tempfile.TemporaryDirectory(prefix="bench-sound-") as tmp:
        tmp = Path(tmp)
        for template in list_templates("sound-classification"):
            name = template.name.replace("/", "-")
            started = time.perf_counter()
            result = SoundClassificationTrainer().train(
                samples, template, tmp / name, tmp / f"cache-{name}", device="cpu", threads=args.threads
            )
            seconds = time.perf_counter() - started
            whole, graph = latency_ms(result.artifact_dir, test_paths)
            best = result.metrics.get("search", {}).get("best", {}).get("params", "-")
            rows.append(
                (f"template {template.name}", result.metrics["accuracy"], seconds, whole, graph, best)
            )
    width = max(len(r[0]) for r in rows)
    print(
        f"\n{'model':<{width}}  held-out acc  train s (cold)  ms/clip (decode+model)  ms/clip (model)  chosen"
    )
    for name, acc, seconds, whole, graph, chosen in rows:
        print(f"{name:<{width}}  {acc:12.2%}  {seconds:14.1f}  {whole:22.1f}  {graph:15.1f}  {chosen}")
    print(
        f"(held-out = {counts['test']} test clips, 8 kHz files resampled to 16 kHz; latency: median of "
        f"{len(test_paths)} clips, 1 thread; training: {args.threads} threads)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
