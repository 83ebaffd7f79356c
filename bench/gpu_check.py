"""GPU check for the scheduler, for a machine with an NVIDIA GPU: which CUDA provider is detected,
which one a session really uses, and how a feature-extraction job is split between GPU and CPU.

Prints the resource view, the plan (devices, threads, batch sizes, shares, ETA), the run (items
and items/s per device, ETA against actual) and the largest difference between GPU and CPU
features on the same images. Exits 1 when a GPU is found but the CUDA provider does not work or is
not used, 2 when no GPU is found. Uses /work/shared/benchdata/sign_digits when present, else synthetic JPEGs.

    python bench/gpu_check.py [--limit 512] [--data DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from modeldesk.scheduler import CostModel, detect_resources, format_resources, plan, run_partitioned


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_scheduler", Path(__file__).with_name("scheduler.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _synthetic_images(folder: Path, count: int) -> list[Path]:
    from PIL import Image

    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"img{i:04d}.jpg"
        Image.fromarray(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)).save(path, quality=90)
        paths.append(path)
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=512)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/benchdata/sign_digits"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "modeldesk-bench")
    args = parser.parse_args(argv)
    bench = _bench_module()
    ok = True

    resources = detect_resources()
    print(format_resources(resources))
    cuda_working = bool(resources["providers"].get("CUDAExecutionProvider"))
    print(
        "\nCUDA provider detected:",
        cuda_working,
        "-",
        resources["provider_notes"].get("CUDAExecutionProvider"),
    )
    print(
        "TensorRT provider detected:",
        resources["providers"].get("TensorrtExecutionProvider"),
        "-",
        resources["provider_notes"].get("TensorrtExecutionProvider"),
    )
    if resources["gpus"] and not cuda_working:
        print("FAIL: a GPU is there but the CUDA execution provider does not work")
        ok = False

    if args.data.is_dir():
        files = sorted(p for p in args.data.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
        files = files[:: max(1, len(files) // args.limit)][: args.limit]
    else:
        print(f"\n{args.data} not found: using {args.limit} synthetic images")
        files = _synthetic_images(args.cache / "synthetic", args.limit)
    try:
        from modeldesk.trainers.backbones import get_backbone

        backbone = get_backbone("efficientnet-lite0")
        work_key, work = (
            "efficientnet-lite0",
            bench.FeatureWork(backbone.onnx_path(args.cache), backbone.spec),
        )
    except Exception as exc:  # noqa: BLE001 - reported; the check goes on with the small model
        print(f"\nEfficientNet-Lite0 unavailable ({type(exc).__name__}: {exc}); using the small conv net")
        from modeldesk.deploy.preprocess import ImageSpec

        work_key, work = "bench-small-conv", bench.FeatureWork(bench.small_conv_model(), ImageSpec())

    with tempfile.TemporaryDirectory() as cost_dir:
        probe = bench.make_probe(files, work)
        job = plan(
            work_key,
            len(files),
            device="auto",
            cost_model=CostModel(cost_dir),
            probe=probe,
            resources=resources,
        )
        print("\nplan:", json.dumps(job.to_dict(), indent=1))
        began = time.perf_counter()
        run_partitioned(job, files, work)
        actual = time.perf_counter() - began

    print(
        f"\n{'device':10} {'provider asked':24} {'providers used':40} {'threads':>7} {'batch':>5} "
        f"{'planned':>7} {'items':>6} {'items/s':>8}"
    )
    for share in job.devices:
        used = work.session(share.local_device, share.threads, share.provider).get_providers()
        stats = job.run_stats[share.name]
        print(
            f"{share.name:10} {share.provider:24} {','.join(used):40} {share.threads:7d} {share.batch_size:5d} "
            f"{share.share:7.0%} {stats['items']:6d} {stats['items_per_s'] or 0:8.1f}"
        )
        if share.kind == "cuda" and used[0] != share.provider:
            print(f"FAIL: {share.name} asked for {share.provider} but ran on {used[0]}")
            ok = False
    eta = job.eta_s
    print(f"\nETA {eta:.2f}s, actual {actual:.2f}s" if eta else f"\nETA unknown, actual {actual:.2f}s")
    gpu_shares = [d for d in job.devices if d.kind == "cuda"]
    if resources["gpus"] and cuda_working and not gpu_shares:
        print("FAIL: the planner placed no work on the GPU")
        ok = False

    if gpu_shares:
        from modeldesk.scheduler import DeviceShare

        sample = files[:16]
        gpu = work(gpu_shares[0], sample)
        cpu = work(DeviceShare("cpu", "CPUExecutionProvider", 2, 16), sample)
        diff = float(np.max(np.abs(np.stack(gpu) - np.stack(cpu))))
        print(f"max |GPU - CPU| feature difference on 16 images: {diff:.2e}")
        if diff > 1e-2:
            print("FAIL: GPU features differ from CPU features")
            ok = False
    if not resources["gpus"]:
        print(
            f"\nGPU CHECK: nothing to check, {resources['gpu_note'] or 'no GPU found'} (CPU path above ran)"
        )
        return 2
    print("\nGPU CHECK", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
