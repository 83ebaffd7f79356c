"""Load on the local service: 1, 8, 32 and 64 clients for a bounded time each, then a wave of
decompression bombs, with the server's memory watched from outside.

Trains the ``image-classification/fast`` template on part of /work/shared/benchdata/sign_digits (or the
folder given), serves it with ``modeldesk serve`` in its own process (loopback only), and prints per
client count: requests/s, p50 and p99 latency, errors, and the server's peak memory; next to them, in
the same run, a bare batched ``session.run`` on the same preprocessed images (the floor the service is
measured against) and the in-process Predictor. Then 16 clients each upload a 15 KB PNG that decodes
to 40 MP at once, and the table shows the server's peak memory against the bound the decode budget
sets (MODELDESK_MAX_DECODE_BYTES, 512 MB by default, on top of the idle footprint).

    python bench/service_load.py [DATA_DIR] [--seconds 5]
"""

from __future__ import annotations

import argparse
import http.client
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
from PIL import Image

from benchdata import load_samples  # bench/ is on sys.path when a bench runs as a script

CLIENTS = (1, 8, 32, 64)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PeakMemory:
    """Samples a process's resident memory every 20 ms; ``peak`` since the last ``reset``."""

    def __init__(self, pid: int):
        self.process = psutil.Process(pid)
        self.peak = 0
        self._stop = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self._stop:
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.02)

    def reset(self) -> int:
        now = self.process.memory_info().rss
        self.peak = now
        return now

    def stop(self):
        self._stop = True


def load(port: int, bodies: list[bytes], clients: int, seconds: float) -> dict:
    """``clients`` threads, each on its own keep-alive connection, posting for ``seconds``."""
    latencies, errors = [], [0]
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def client(index):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine, i = [], index
        while time.perf_counter() < stop_at:
            body = bodies[i % len(bodies)]
            i += clients
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/v1/predict", body=body, headers={"Content-Type": "image/jpeg"})
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except OSError:
                ok = False
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            mine.append(time.perf_counter() - t0)
            if not ok:
                with lock:
                    errors[0] += 1
        with lock:
            latencies.extend(mine)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ms = np.asarray(latencies) * 1000
    return {"rps": len(latencies) / wall, "p50": float(np.percentile(ms, 50)),
            "p99": float(np.percentile(ms, 99)), "errors": errors[0], "requests": len(latencies)}


def bare_batched(artifact_path, bodies, seconds) -> dict:
    from modeldesk.deploy import Predictor
    from modeldesk.deploy.preprocess import preprocess_image

    predictor = Predictor(artifact_path, device="cpu")
    tensors = np.stack([preprocess_image(b, predictor.spec) for b in bodies[:32]])
    session, name, out = predictor.session, predictor.input_name, predictor.output_name
    session.run([out], {name: tensors})
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        session.run([out], {name: tensors})
        count += len(tensors)
    bare = count / (time.perf_counter() - start)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        predictor.predict(bodies[:32])
        count += 32
    return {"bare": bare, "predictor": count / (time.perf_counter() - start)}


def bomb() -> bytes:
    buffer = io.BytesIO()
    Image.new("1", (6300, 6300)).save(buffer, "PNG")
    return buffer.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default="/work/shared/benchdata/sign_digits")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="modeldesk-bench-load-"))
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, work: Path) -> int:
    from modeldesk.trainers.image_classification import train_image_classifier

    samples = load_samples(Path(args.data))
    training = [s for s in samples if s.split == "train"][:300]
    result = train_image_classifier(training, "image-classification/fast", work / "model", work / "cache", threads=2)
    bodies = [Path(s.path).read_bytes() for s in samples if s.split == "test"]
    floor = bare_batched(result.artifact_dir, bodies, args.seconds)

    port = free_port()
    env = {**os.environ, "MODELDESK_WORKSPACE": str(work / "ws")}
    server = subprocess.Popen([sys.executable, "-m", "modeldesk", "serve", str(result.artifact_dir), "--port",
                               str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(600):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        memory = PeakMemory(server.pid)
        load(port, bodies, 1, 1.0)  # warm
        idle = memory.reset()
        print(f"# {os.cpu_count()} CPUs; model: fast template on {len(training)} sign_digits photos; "
              f"{args.seconds:.0f} s per row; server idle at {idle / 2**20:.0f} MiB\n")
        print("| clients | requests/s | p50 ms | p99 ms | errors | server peak MiB | "
              "vs bare batched session.run |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for clients in CLIENTS:
            memory.reset()
            row = load(port, bodies, clients, args.seconds)
            print(f"| {clients} | {row['rps']:.0f} | {row['p50']:.1f} | {row['p99']:.1f} | {row['errors']} | "
                  f"{memory.peak / 2**20:.0f} | {row['rps'] / floor['bare']:.2f} |")
        print(f"| bare batched session.run (32 preprocessed images a call) | {floor['bare']:.0f} images/s |"
              " | | | | 1.00 |")
        print(f"| in-process Predictor.predict (decode + preprocess, 32 a call) | {floor['predictor']:.0f} "
              "images/s | | | | | |")

        before = memory.reset()
        wave = [bomb()]
        row = load(port, wave, 16, args.seconds)
        bound = before + 512 * 2**20 + 128 * 2**20
        print(f"\n## Decompression-bomb wave: 16 clients, a {len(wave[0]) // 1024} KB PNG of 6300x6300 each\n")
        print("| requests | answered 200 | refused (413/503) | server peak MiB | bound MiB (idle + decode budget "
              "+ 128) | within bound |")
        print("|---:|---:|---:|---:|---:|:-:|")
        print(f"| {row['requests']} | {row['requests'] - row['errors']} | {row['errors']} | "
              f"{memory.peak / 2**20:.0f} | {bound / 2**20:.0f} | {'yes' if memory.peak <= bound else 'NO'} |")
        time.sleep(2)
        print(f"\nafter the wave, idle again: {psutil.Process(server.pid).memory_info().rss / 2**20:.0f} MiB")
        memory.stop()
    finally:
        server.terminate()
        server.wait(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
