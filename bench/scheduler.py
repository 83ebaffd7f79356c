"""Scheduler benchmark: this machine alone against this machine plus Dask workers.

The unit of work is feature extraction (EfficientNet-Lite0 embeddings, the first stage of every
image training) over /work/shared/benchdata/sign_digits, through the code `modeldesk train --cluster`
runs: a scheduler on loopback (the `modeldesk cluster start` code) and `modeldesk worker` processes
that get the image bytes with each chunk and send the vectors back to this machine's feature cache.

Configurations: this machine alone; + two workers with 2 threads each; + one worker with 2 threads
and a slower one limited to 1 thread. Each runs twice on a cold feature cache: "first" starts from an
empty cost model, so it is planned from probes (each device measured once, alone, the same way);
"again" is planned from what the first run measured (the cost model's moving average).
Printed per run: images/s, each device's share (planned -> actual) and speed, ETA, actual time and
ETA error; then the gain estimated for two real machines from the isolated measurements.

    python bench/scheduler.py [--limit 256] [--no-cluster]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path("/work/shared/benchdata/sign_digits")
WORK_BATCH = 32


def images(limit: int) -> list[tuple[str, str]]:
    files = sorted(p for p in DATA.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    files = files[:: max(1, len(files) // limit)][:limit]  # spread over every class
    return [(hashlib.sha256(p.read_bytes()).hexdigest(), str(p)) for p in files]


def run(label, items, backbone, graph_dir, cost_from, root, cluster=None) -> tuple[dict, Path]:
    """Extract features for ``items`` on a cold cache; the cost model is copied from ``cost_from``."""
    from modeldesk.trainers.feature_cache import FeatureCache
    from modeldesk.trainers.features import extract_feature_views

    cache_dir = Path(tempfile.mkdtemp(dir=root))
    if cost_from is not None and (cost_from / "cost_model.json").exists():
        shutil.copy(cost_from / "cost_model.json", cache_dir / "cost_model.json")
    began = time.perf_counter()
    out = extract_feature_views(
        backbone, items, FeatureCache(cache_dir), graph_dir=graph_dir, cluster=cluster, batch_size=WORK_BATCH
    )["identity"]
    actual = time.perf_counter() - began
    assert len(out.keys) == len(items), "every image must have its features"
    plan = out.plan
    devices = []
    for row in plan["per_device"]:
        name = "this machine" if not row["name"].startswith("dask:") else row["note"]
        devices.append(
            f"{name} {row['estimated_share']:.0%}->{row['actual_share']:.0%} "
            f"({row['actual_items_per_s'] or 0:.0f}/s)"
        )
    return {
        "run": label,
        "eta_s": plan["eta_s"],
        "actual_s": actual,
        "items_per_s": len(items) / actual,
        "devices": ", ".join(devices),
        "planned": plan["per_device"],
    }, cache_dir


def start_worker(address: str, name: str, threads: int, cache: Path, log_dir: Path) -> subprocess.Popen:
    log = open(log_dir / f"worker-{name.split()[0]}.log", "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "modeldesk",
            "worker",
            address,
            "--nthreads",
            str(threads),
            "--name",
            name,
            "--cache",
            str(cache),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def wait_for(backend, names: set, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if {w["name"] for w in backend.workers()} == names:
            return
        time.sleep(0.3)
    raise RuntimeError(f"workers {names} did not join")


def round_trip_s(backend, repeats: int = 20) -> float:
    """Median time of an empty task on a worker and back (what each chunk pays on top)."""
    worker = backend.workers()[0]["address"]
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        backend.client_.submit(int, 0, workers=[worker], pure=False).result()
        times.append(time.perf_counter() - began)
    return sorted(times)[len(times) // 2]


def print_table(rows) -> None:
    header = (
        f"| {'run':44} | {'images/s':>8} | {'ETA s':>6} | {'actual s':>8} | {'ETA err':>7} | "
        "device: share planned->actual (images/s) |"
    )
    print(header)
    print("|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|")
    for r in rows:
        error = f"{(r['eta_s'] - r['actual_s']) / r['actual_s']:+.0%}" if r["eta_s"] else "n/a"
        eta = f"{r['eta_s']:6.1f}" if r["eta_s"] else "   n/a"
        print(
            f"| {r['run']:44} | {r['items_per_s']:8.1f} | {eta} | {r['actual_s']:8.1f} | {error:>7} | "
            f"{r['devices']} |"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=256, help="images per run")
    parser.add_argument("--no-cluster", action="store_true", help="only this machine")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    from modeldesk.trainers.backbones import get_backbone

    items = images(args.limit)
    mean_bytes = sum(os.path.getsize(p) for _, p in items) / len(items)
    backbone = get_backbone("efficientnet-lite0")
    root = Path(tempfile.mkdtemp(prefix="modeldesk-bench-scheduler-"))
    graph_dir = root / "graphs"
    backbone.onnx_path(graph_dir)
    rows, processes, notes = [], [], []
    try:
        row, alone = run("this machine alone, first", items, backbone, graph_dir, None, root)
        rows.append(row)
        row, alone = run("this machine alone, again", items, backbone, graph_dir, alone, root)
        rows.append(row)
        if not args.no_cluster:
            from modeldesk.scheduler import cluster_service
            from modeldesk.scheduler.cluster import DaskBackend

            address = cluster_service.start(root / "scheduler", "127.0.0.1", 0)["address"]
            worker_cache = root / "worker-cache"
            log_dir = Path(tempfile.gettempdir()) / "modeldesk-bench-scheduler-logs"
            log_dir.mkdir(exist_ok=True)
            processes = [
                start_worker(address, "w1 (2 thr)", 2, worker_cache, log_dir),
                start_worker(address, "w2 (2 thr)", 2, worker_cache, log_dir),
            ]
            with DaskBackend(address) as backend:
                wait_for(backend, {"w1 (2 thr)", "w2 (2 thr)"})
                rtt = round_trip_s(backend)
                row, two = run(
                    "+ 2 workers x 2 threads, first", items, backbone, graph_dir, None, root, backend
                )
                rows.append(row)
                row, two = run(
                    "+ 2 workers x 2 threads, again", items, backbone, graph_dir, two, root, backend
                )
                rows.append(row)
                processes.pop().terminate()
                processes.append(start_worker(address, "slow (1 thr)", 1, worker_cache, log_dir))
                wait_for(backend, {"w1 (2 thr)", "slow (1 thr)"})
                row, slow = run(
                    "+ 1 worker x 2 thr + slow worker x 1 thr, first",
                    items,
                    backbone,
                    graph_dir,
                    None,
                    root,
                    backend,
                )
                rows.append(row)
                row, slow = run(
                    "+ 1 worker x 2 thr + slow worker x 1 thr, again",
                    items,
                    backbone,
                    graph_dir,
                    slow,
                    root,
                    backend,
                )
                rows.append(row)
            # The "first" cluster runs start from an empty cost model: every device was probed
            # alone, the same way, before the run; those figures are what the estimate uses.
            # Taken from one run, so that the three were probed minutes, not runs, apart.
            planned = {
                r["note"] if r["name"].startswith("dask:") else "cpu": r["estimated_items_per_s"]
                for r in rows[4]["planned"]
            }
            local, worker2, worker1 = planned["cpu"], planned["w1 (2 thr)"], planned["slow (1 thr)"]
            # Per image on a second machine: its compute, its share of a chunk's round trip (two
            # chunks stay in flight, so this is an upper bound) and the bytes over 1 Gbit/s.
            per_image = 1 / worker2 + rtt / WORK_BATCH + mean_bytes / 125e6
            notes = [
                f"probes, each device alone: this machine {local:.1f} images/s (2 threads), a worker with "
                f"2 threads {worker2:.1f}, with 1 thread {worker1:.1f} (ratio {worker1 / worker2:.2f}); "
                f"this machine's own run alone: {rows[1]['items_per_s']:.1f} images/s",
                f"round trip of an empty task {rtt * 1000:.1f} ms; images average {mean_bytes / 1e3:.1f} kB",
                f"estimate for two real machines like this one on a 1 Gbit/s LAN: {local:.1f} + "
                f"{1 / per_image:.1f} = {local + 1 / per_image:.1f} images/s, "
                f"{(local + 1 / per_image) / local:.2f}x this machine alone",
            ]
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)
        if not args.no_cluster:
            from modeldesk.scheduler import cluster_service

            cluster_service.stop(root / "scheduler")
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"\nscheduler benchmark: EfficientNet-Lite0 features of {len(items)} sign-digit images, batch {WORK_BATCH}, "
        f"{os.cpu_count()} cores; every worker runs on this same machine, so the devices share its cores"
    )
    print_table(rows)
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
