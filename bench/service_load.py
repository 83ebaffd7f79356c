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

Then (``--part hostile`` runs only this) the hostile waves of issue 30, each against its own service
of a small stand-in model (image, sound, text) with the default 512 MB decode budget: 16 clients send a
1 KB WebP that decodes to 4000x4000 (counted ~260 MB) and one of 6324x6324 (counted ~650 MB, over the
budget), a 40 KB WAV whose header says 5,000,005 Hz, the worst legitimate WAV (384 kHz, 26 s, 20 MB) and
19 MB text bodies holding one emoji (4 bytes a character in memory); the table shows the server's peak RSS
above idle against the budget (aim: within 1.25x). Last, a bounded slowloris: ``--slow-sockets`` sockets
to 127.0.0.1 trickle headers for ``--slow-seconds`` (each reopened when the server cuts it) while 4
clients make ordinary requests; their throughput and 503s are shown beside the same clients alone.

    python bench/service_load.py [DATA_DIR] [--seconds 5] [--rounds 8] [--part all|load|hostile]
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
from benchdata import load_samples  # bench/ is on sys.path when a bench runs as a script
from PIL import Image

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
    parser.add_argument("--part", choices=("all", "load", "hostile"), default="all")
    parser.add_argument("--slow-sockets", type=int, default=300, help="slowloris sockets (127.0.0.1 only)")
    parser.add_argument("--slow-seconds", type=float, default=10.0, help="how long the slowloris lasts")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="modeldesk-bench-load-"))
    try:
        if args.part in ("all", "load"):
            run(args, work)
        if args.part in ("all", "hostile"):
            hostile(args, work)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


BUDGET = 512 * 2**20  # the service's default decode budget (MODELDESK_MAX_DECODE_BYTES)


def _save(work: Path, name: str, graph, card: dict) -> Path:
    import onnx
    from onnx import helper

    from modeldesk.deploy import save_artifact

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    card = {
        "labels": ["a", "b"],
        "template": "standin",
        "metrics": {},
        "versions": {"onnx": onnx.__version__},
        **card,
    }
    return save_artifact(work / name, model, card)


def standin_models(work: Path) -> dict:
    """Small stand-in artifacts for each input kind: the waves measure input handling, not a model."""
    from onnx import TensorProto, helper, numpy_helper

    from modeldesk.deploy.preprocess import ImageSpec
    from modeldesk.trainers.data import LabeledSample
    from modeldesk.trainers.tasks import get_trainer

    def mean_classifier(name, shape, axes, features):
        return helper.make_graph(
            [
                helper.make_node("ReduceMean", [name, "axes"], ["mean"], keepdims=0),
                helper.make_node("MatMul", ["mean", "w"], ["logits"]),
                helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
            ],
            "standin",
            [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["n", 2])],
            [
                numpy_helper.from_array(np.array(axes, np.int64), "axes"),
                numpy_helper.from_array(np.ones((features, 2), np.float32), "w"),
            ],
        )

    image = _save(
        work,
        "image",
        mean_classifier("image", ["n", 3, 224, 224], [2, 3], 3),
        {"task": "image-classification", "preprocessing": ImageSpec().to_dict()},
    )
    graph = mean_classifier("waveform", ["n", "samples"], [1], 1)
    graph.node[0].attribute[0].i = 1  # keep (n, 1) for the MatMul
    sound = _save(work, "sound", graph, {"task": "sound-classification", "preprocessing": {"kind": "audio"}})
    texts = {
        "a": ["good food, fast", "lovely and fresh", "great, will order again", "tasty"],
        "b": ["cold and late", "terrible, refund", "never again", "wrong order"],
    }
    samples = [
        LabeledSample(f"{label}{i}", text, label, "test" if i == 3 else "train")
        for label, items in texts.items()
        for i, text in enumerate(items)
    ]
    result = get_trainer("text-classification").train(
        samples, "text-classification/fast", work / "text", work / "text-cache"
    )
    return {"image": image, "sound": sound, "text": Path(result.artifact_dir)}


def webp_bomb(side: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (side, side)).save(buffer, "WEBP", lossless=True)
    return buffer.getvalue()


def wav(rate: int, seconds: float, *, frames_said: int | None = None) -> bytes:
    """A 16-bit mono WAV of ``seconds`` of noise whose header says ``rate`` (and ``frames_said``)."""
    import struct

    frames = int(rate * seconds)
    pcm = np.random.default_rng(0).integers(-8000, 8000, frames, dtype="<i2").tobytes()
    size = 2 * (frames if frames_said is None else frames_said)
    header = b"RIFF" + struct.pack("<I", 36 + size) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, (2 * rate) & 0xFFFFFFFF, 2, 16)
    return header + b"data" + struct.pack("<I", size) + pcm


def post_wave(port: int, body: bytes, content_type: str, clients: int, seconds: float) -> dict:
    """``clients`` threads posting ``body`` for ``seconds``: counts by status."""
    counts: dict = {}
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def client():
        while time.perf_counter() < stop_at:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            try:
                conn.request("POST", "/v1/predict", body=body, headers={"Content-Type": content_type})
                status = conn.getresponse().status
            except OSError as exc:
                status = type(exc).__name__
            finally:
                conn.close()
            with lock:
                counts[status] = counts.get(status, 0) + 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts


def start_server(artifact: Path, work: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {**os.environ, "MODELDESK_WORKSPACE": str(work / "ws")}
    server = subprocess.Popen(
        [sys.executable, "-m", "modeldesk", "serve", str(artifact), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return server, port
        except OSError:
            time.sleep(0.1)
    server.terminate()
    raise RuntimeError("the service did not start")


def slowloris(port: int, sockets: int, seconds: float) -> dict:
    """``sockets`` connections to 127.0.0.1 trickling one header byte every 0.5 s, reopened when cut."""
    stop_at = time.monotonic() + seconds
    opened = [0]

    def attacker():
        socks: list = []
        while time.monotonic() < stop_at:
            while len(socks) < sockets and time.monotonic() < stop_at:
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=2)
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                    socks.append(sock)
                    opened[0] += 1
                except OSError:
                    break
            alive = []
            for sock in socks:
                try:
                    sock.sendall(b"X-a: b\r\n")
                    alive.append(sock)
                except OSError:
                    sock.close()
            socks = alive
            time.sleep(0.5)
        for sock in socks:
            sock.close()

    thread = threading.Thread(target=attacker)
    thread.start()
    time.sleep(1.0)  # let the sockets pile up first
    return {"thread": thread, "opened": opened}


def legit(port: int, body: bytes, clients: int, seconds: float) -> dict:
    counts = post_wave(port, body, "image/jpeg", clients, seconds)
    ok = counts.get(200, 0)
    return {
        "rps": ok / seconds,
        "ok": ok,
        "503": counts.get(503, 0),
        "other": ", ".join(f"{k}: {v}" for k, v in counts.items() if k not in (200, 503)) or "0",
    }


def hostile(args, work: Path) -> None:
    models = standin_models(work)
    image = io.BytesIO()
    Image.new("RGB", (640, 480), (200, 30, 30)).save(image, "JPEG")
    waves = [
        ("image", "WebP 4000x4000, lossless", webp_bomb(4000), "image/webp"),
        ("image", "WebP 6324x6324, lossless", webp_bomb(6324), "image/webp"),
        ("sound", "WAV header: 5,000,005 Hz", wav(5_000_005, 0.004), "audio/wav"),
        ("sound", "WAV 384 kHz, 26 s (legitimate, largest)", wav(384_000, 26.0), "audio/wav"),
        ("text", "text/plain 19 MB, one emoji", ("word " * 3_800_000 + "\U0001f600").encode(), "text/plain"),
    ]
    print(
        f"\n## Hostile waves: 16 clients for {args.seconds:.0f} s each, decode budget {BUDGET / 2**20:.0f} MiB "
        "(loaded machine)\n"
    )
    print("| wave | body | answers | server idle MiB | peak above idle MiB | / budget |")
    print("|---|---:|---|---:|---:|---:|")
    servers = {}
    try:
        for kind, name, body, ctype in waves:
            if kind not in servers:
                servers[kind] = start_server(models[kind], work)
                post_wave(servers[kind][1], body[:0] or b"x", ctype, 1, 0.2)  # warm the process
            server, port = servers[kind]
            memory = PeakMemory(server.pid)
            time.sleep(0.5)
            idle = memory.reset()
            counts = post_wave(port, body, ctype, 16, args.seconds)
            time.sleep(0.3)
            memory.stop()
            above = max(0, memory.peak - idle)
            answers = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=str))
            print(
                f"| {name} | {len(body) / 1024:,.0f} KB | {answers} | {idle / 2**20:.0f} | "
                f"{above / 2**20:.0f} | {above / BUDGET:.2f} |"
            )
        server, port = servers["image"]
        print(
            f"\n## Slowloris: {args.slow_sockets} sockets to 127.0.0.1 trickling headers for "
            f"{args.slow_seconds:.0f} s, 4 clients posting a 640x480 JPEG (loaded machine)\n"
        )
        print("| | requests/s answered 200 | 503 | other errors | attack sockets opened |")
        print("|---|---:|---:|---:|---:|")
        alone = legit(port, image.getvalue(), 4, args.slow_seconds)
        print(f"| clients alone | {alone['rps']:.1f} | {alone['503']} | {alone['other']} | 0 |")
        attack = slowloris(port, args.slow_sockets, args.slow_seconds + 1.0)
        during = legit(port, image.getvalue(), 4, args.slow_seconds - 1.0)
        attack["thread"].join()
        print(
            f"| during the slowloris | {during['rps']:.1f} | {during['503']} | {during['other']} | "
            f"{attack['opened'][0]} |"
        )
    finally:
        for server, _ in servers.values():
            server.terminate()
            server.wait(20)


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


if __name__ == "__main__":
    sys.exit(main())
