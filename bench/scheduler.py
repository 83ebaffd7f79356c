"""Compute-scheduler benchmark: the ETA before a run against its real time, and the throughput of
one worker, two one-thread workers and the Dask cluster backend with two local workers.

The default unit of work is feature extraction over /work/shared/benchdata/sign_digits through
EfficientNet-Lite0 (``modeldesk.trainers.backbones``), or through a small random conv net built with
onnx.helper when the backbones are not there. ``--work package.module:factory`` swaps in another
unit of work: ``factory(args) -> (work_key, items, process_chunk)`` with
``process_chunk(device_share, chunk) -> list`` (one result per item).

    python bench/scheduler.py [--limit 256] [--work MODULE:FACTORY] [--cache DIR] [--no-cluster]
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from modeldesk.scheduler import CostModel, plan, run_partitioned

DATA = Path("/work/shared/benchdata/sign_digits")


def small_conv_model() -> bytes:
    """A small random conv net (3 strided convs + global pool) -> 64-d embedding, as ONNX bytes."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, channels, current = [], [], 3, "image"
    for i, out in enumerate((16, 32, 64)):
        weight = (rng.standard_normal((out, channels, 3, 3)) / np.sqrt(9 * channels)).astype(np.float32)
        inits += [numpy_helper.from_array(weight, f"w{i}"), numpy_helper.from_array(np.zeros(out, np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [current, f"w{i}", f"b{i}"], [f"c{i}"], strides=[2, 2], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        channels, current = out, f"r{i}"
    nodes += [helper.make_node("GlobalAveragePool", [current], ["pooled"]),
              helper.make_node("Flatten", ["pooled"], ["embedding"])]
    graph = helper.make_graph(nodes, "bench_conv", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                                   ["n", 3, 224, 224])],
                              [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["n", channels])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


class FeatureWork:
    """Image files -> embeddings through one ONNX model; sessions are shared per (device, threads)."""

    def __init__(self, model, spec, output: str = "embedding"):
        self.model = model  # path or bytes
        self.spec = spec
        self.output = output
        self._sessions: dict = {}
        self._lock = threading.Lock()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_sessions", "_lock")}

    def __setstate__(self, state):
        self.__dict__.update(state, _sessions={}, _lock=threading.Lock())

    def session(self, device: str, threads: int, provider: str = "CPUExecutionProvider"):
        from modeldesk.deploy.runtime import create_session

        key = (device, threads, provider)
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = create_session(self.model, device=device, threads=threads)
            return self._sessions[key]

    def __call__(self, share, chunk):
        from modeldesk.deploy.preprocess import preprocess_batch

        session = self.session(share.local_device, share.threads, share.provider)
        outputs = [o.name for o in session.get_outputs()]
        name = self.output if self.output in outputs else outputs[0]
        (features,) = session.run([name], {session.get_inputs()[0].name: preprocess_batch(chunk, self.spec)})
        return list(features.reshape(len(chunk), -1))


def default_work(args):
    """Feature extraction over the sign-digits images (EfficientNet-Lite0 when available)."""
    files = sorted(p for p in DATA.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    files = files[:: max(1, len(files) // args.limit)][: args.limit]  # spread over every class
    try:
        from modeldesk.trainers.backbones import get_backbone

        backbone = get_backbone("efficientnet-lite0")
        return "efficientnet-lite0", files, FeatureWork(backbone.onnx_path(args.cache), backbone.spec)
    except ImportError:
        from modeldesk.deploy.preprocess import ImageSpec

        return "bench-small-conv", files, FeatureWork(small_conv_model(), ImageSpec())


def make_probe(items, process_chunk):
    """A probe that times ``process_chunk`` on a spread sample of real items (after one warm-up)."""
    step = max(1, len(items) // 64)
    sample = items[::step]

    def probe(device, batch_size, threads):
        from modeldesk.scheduler import DeviceShare

        provider = "CUDAExecutionProvider" if device.startswith("cuda") else "CPUExecutionProvider"
        share = DeviceShare(device, provider, threads, batch_size, cost_device=device)
        process_chunk(share, sample[:batch_size])  # warm-up: session creation, first-run allocations
        chunk = (sample * 4)[: max(2 * batch_size, 16)]
        began = time.perf_counter()
        for start in range(0, len(chunk), batch_size):
            process_chunk(share, chunk[start:start + batch_size])
        return (time.perf_counter() - began) / len(chunk)
    return probe


def run_case(label, work_key, items, process_chunk, probe, cost_model, **plan_args):
    """Plan (ETA from the cost model), run, return one table row."""
    known = len(cost_model.entries(work_key))
    work = plan(work_key, len(items), cost_model=cost_model, probe=probe, batch_size=8, **plan_args)
    probed = len(cost_model.entries(work_key)) > known  # probes add entries, runs only update them
    eta = work.eta_s
    began = time.perf_counter()
    out = run_partitioned(work, items, process_chunk)
    actual = time.perf_counter() - began
    assert len(out) == len(items)
    split = " / ".join(str(s["items"]) for s in work.run_stats.values())
    return {"run": label, "devices": len(work.devices), "threads": "+".join(str(d.threads) for d in work.devices),
            "eta_source": "probe" if probed else "cache", "eta_s": eta, "actual_s": actual,
            "items_per_s": len(items) / actual, "split": split}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=256, help="items (images) to process per run")
    parser.add_argument("--work", help="package.module:factory returning (work_key, items, process_chunk)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "modeldesk-bench",
                        help="folder for the built model")
    parser.add_argument("--no-cluster", action="store_true", help="skip the Dask backend row")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    if args.work:
        module, _, name = args.work.partition(":")
        work_key, items, process_chunk = getattr(importlib.import_module(module), name)(args)
    else:
        work_key, items, process_chunk = default_work(args)
    items = list(items)
    probe = make_probe(items, process_chunk)
    with tempfile.TemporaryDirectory() as cost_dir:
        cost_model = CostModel(cost_dir)  # cold: every configuration is probed once, then refined
        rows = [run_case("1 worker x 2 threads", work_key, items, process_chunk, probe, cost_model, device="cpu",
                         cpu_workers=1),
                run_case("2 workers x 1 thread", work_key, items, process_chunk, probe, cost_model, device="cpu",
                         cpu_workers=2),
                run_case("1 worker x 2 threads, again", work_key, items, process_chunk, probe, cost_model,
                         device="cpu", cpu_workers=1)]
        if not args.no_cluster:
            try:
                from modeldesk.scheduler.cluster import DaskBackend

                with DaskBackend(local_workers=2, threads_per_worker=1) as backend:
                    rows.append(run_case("Dask LocalCluster, 2 workers x 1 thread", work_key, items, process_chunk,
                                         probe, cost_model, devices=backend))
            except ImportError as exc:
                print(f"(cluster row skipped: {exc})")
    base = rows[0]["items_per_s"]
    print(f"\nscheduler benchmark: {work_key}, {len(items)} items, batch 8, cores: "
          f"{__import__('os').cpu_count()}")
    header = f"| {'run':40} | {'threads':7} | {'ETA from':8} | {'ETA s':>6} | {'actual s':>8} | {'ETA err':>7} | " \
             f"{'items/s':>7} | {'vs 1 worker':>11} | items per device |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for row in rows:
        eta = row["eta_s"]
        error = f"{(eta - row['actual_s']) / row['actual_s']:+.0%}" if eta else "n/a"
        print(f"| {row['run']:40} | {row['threads']:7} | {row['eta_source']:8} | "
              f"{eta if eta is not None else float('nan'):6.2f} | {row['actual_s']:8.2f} | {error:>7} | "
              f"{row['items_per_s']:7.1f} | {row['items_per_s'] / base:10.2f}x | {row['split']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
