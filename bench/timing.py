"""Latency as the benchmarks print it: the fastest of several runs at batch 1, after a warm-up."""

from __future__ import annotations

import time


def fastest(run, runs: int = 20) -> float:
    """Milliseconds of the fastest of ``runs`` calls of ``run``, after three warm-up calls."""
    for _ in range(3):
        run()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1000 * min(times)


def latency_ms(artifact_dir, path: str, threads: int, runs: int = 20) -> float:
    """Milliseconds per photo of an exported model's graph at batch 1 (the fastest of ``runs``),
    decoding excluded."""
    from modeldesk.deploy import Predictor

    predictor = Predictor(artifact_dir, threads=threads)
    feeds = predictor.input.feeds([predictor.preprocess(path)], predictor.input_name)
    return fastest(lambda: predictor.session.run(None, feeds), runs)
