"""Load on the local service: 1, 8, 32 and 64 clients for a bounded time each, then a wave of
decompression bombs, with the server's memory watched from outside.

Trains the ``image-classification/fast`` template on part of /work/shared/benchdata/sign_digits (or the
folder given), serves it with ``modeldesk serve`` in its own process (loopback only), and prints per
client count: requests/s, p50 and p99 latency, errors, and the server's peak memory; next to them, in
the same run, a bare batched ``session.run`` on the same preprocessed images (the floor the service is
measured against) and the in-process Predictor. This machine's speed drifts by 10-30% from minute to
minute when it is shared, so the 32-client ratio is also measured in rounds that alternate the bare loop
and the service (``--rounds``, 2 s each), and the median of the rounds' ratios is the figure to quote. Then
16 clients each upload a 15 KB PNG that decodes
to 40 MP at once, and the table shows the server's peak memory against the bound the decode budget
sets (MODELDESK_MAX_DECODE_BYTES, 512 MB by default, on top of the idle footprint).

    python bench/service_load.py [DATA_DIR] [--seconds 5] [--rounds 8]
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
    return {
        "rps": len(latencies) / wall,
        "p50": float(np.percentile(ms, 50)),
        "p99": float(np.percentile(ms, 99)),
        "errors": errors[0],
        "requests": len(latencies),
    }


class BareLoop:
    """The floor: the artifact's graph in a plain ONNX Runtime session, 32 preprocessed images a call."""

    def __init__(self, artifact_path, bodies):
        from modeldesk.deploy import Predictor
        from modeldesk.deploy.preprocess import preprocess_image
        from modeldesk.deploy.runtime import create_session

        self.predictor = Predictor(artifact_path, device="cpu")
        self.bodies = bodies[:32]
        self.tensors = np.stack([preprocess_image(b, self.predictor.spec) for b in self.bodies])
        self.session = create_session(self.predictor.artifact.model_path, device="cpu")
        self.feeds = {self.predictor.input_name: self.tensors}
        self.session.run(None, self.feeds)

    def bare(self, seconds: float) -> float:
        """Images per second through ``session.run``."""
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            self.session.run(None, self.feeds)
            count += len(self.tensors)
        return count / (time.perf_counter() - start)

    def predictor_rate(self, seconds: float) -> float:
        """Images per second through the in-process Predictor (decode, preprocess, run)."""
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            self.predictor.predict(self.bodies)
            count += len(self.bodies)
        return count / (time.perf_counter() - start)


def interleaved(floor: BareLoop, port: int, bodies, clients: int, rounds: int, seconds: float = 2.0) -> list:
    """(bare images/s, service requests/s) per round, the two measured one after the other."""
    pairs = []
    for _ in range(rounds):
        bare = floor.bare(seconds)
        pairs.append((bare, load(port, bodies, clients, seconds)["rps"]))
    return pairs


def bomb() -> bytes:
    buffer = io.BytesIO()
    Image.new("1", (6300, 6300)).save(buffer, "PNG")
    return buffer.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default="/work/shared/benchdata/sign_digits")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=8, help="alternating bare/service rounds at 32 clients")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="modeldesk-bench-load-"))
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, work: Path) -> int:
    from modeldesk.trainers.image.classification import train_image_classifier

    samples = load_samples(Path(args.data))
    training = [s for s in samples if s.split == "train"][:300]
    result = train_image_classifier(
        training, "image-classification/fast", work / "model", work / "cache", threads=2
    )
    bodies = [Path(s.path).read_bytes() for s in samples if s.split == "test"]
    floor = BareLoop(result.artifact_dir, bodies)

    port = free_port()
    env = {**os.environ, "MODELDESK_WORKSPACE": str(work / "ws")}
    server = subprocess.Popen(
        [sys.executable, "-m", "modeldesk", "serve", str(result.artifact_dir), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
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
        print(
            f"# {os.cpu_count()} CPUs; model: fast template on {len(training)} sign_digits photos; "
            f"{args.seconds:.0f} s per row; server idle at {idle / 2**20:.0f} MiB\n"
        )
        print(
            "| clients | requests/s | p50 ms | p99 ms | errors | server peak MiB | "
            "vs bare batched session.run |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for clients in CLIENTS:
            bare = floor.bare(args.seconds)
            memory.reset()
            row = load(port, bodies, clients, args.seconds)
            print(
                f"| {clients} | {row['rps']:.0f} | {row['p50']:.1f} | {row['p99']:.1f} | {row['errors']} | "
                f"{memory.peak / 2**20:.0f} | {row['rps'] / bare:.2f} (bare {bare:.0f}/s just before) |"
            )
        bare, in_process = floor.bare(args.seconds), floor.predictor_rate(args.seconds)
        print(
            f"| in-process Predictor.predict (decode + preprocess, 32 a call) | {in_process:.0f} images/s | | | | | "
            f"{in_process / bare:.2f} |"
        )

        pairs = interleaved(floor, port, bodies, 32, args.rounds)
        ratios = sorted(service / bare for bare, service in pairs)
        print(f"\n## 32 clients against bare batched session.run, {len(pairs)} alternating rounds of 2 s\n")
        print("| round | bare images/s | service requests/s | ratio |")
        print("|---:|---:|---:|---:|")
        for i, (bare, service) in enumerate(pairs, 1):
            print(f"| {i} | {bare:.0f} | {service:.0f} | {service / bare:.2f} |")
        print(
            f"| **median** | {np.median([b for b, _ in pairs]):.0f} | {np.median([s for _, s in pairs]):.0f} | "
            f"**{np.median(ratios):.2f}** (rounds {ratios[0]:.2f}-{ratios[-1]:.2f}) |"
        )

        before = memory.reset()
        wave = [bomb()]
        row = load(port, wave, 16, args.seconds)
        bound = before + 512 * 2**20 + 128 * 2**20
        print(
            f"\n## Decompression-bomb wave: 16 clients, a {len(wave[0]) // 1024} KB PNG of 6300x6300 each\n"
        )
        print(
            "| requests | answered 200 | refused (413/503) | server peak MiB | bound MiB (idle + decode budget "
            "+ 128) | within bound |"
        )
        print("|---:|---:|---:|---:|---:|:-:|")
        print(
            f"| {row['requests']} | {row['requests'] - row['errors']} | {row['errors']} | "
            f"{memory.peak / 2**20:.0f} | {bound / 2**20:.0f} | {'yes' if memory.peak <= bound else 'NO'} |"
        )
        time.sleep(2)
        print(f"\nafter the wave, idle again: {psutil.Process(server.pid).memory_info().rss / 2**20:.0f} MiB")
        memory.stop()
    finally:
        server.terminate()
        server.wait(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
