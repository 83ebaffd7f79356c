"""Photos per ``session.run`` for image models: the predictor's batch next to a fixed batch of 16.

A model that looks at a photo ``L`` times runs its backbone on ``L`` images per photo, so a batch of
16 photos at 640 px and three looks is 48 backbone passes of 640 x 640 held in ONNX Runtime's memory
at once. For each (size, looks) row this times the backbone (EfficientNet-Lite0, every output a
classifier or a detector reads) over the same 48 random photos, ``looks`` images each, in batches of
16 photos (the reference: what every image model used before) and in the predictor's batch
(``deploy.image_input.image_batch_size``), each in a fresh process so its peak memory (RSS) is its
own. The detector's neck and head add little to the backbone's work.

    python bench/image_batch.py [--threads 2] [--photos 48]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

#: (size, looks): a photo classifier, one that also looks at the mirror image, the detection templates
#: (fast: 320 px, two looks; accurate: 320 / 480 / 640 px, three looks) and a detector's map cache at
#: 640 px (one look per training view)
ROWS = ((224, 1), (224, 2), (320, 2), (320, 3), (480, 3), (640, 3), (640, 1))


def measure(size: int, looks: int, batch: int, photos: int, threads: int) -> dict:
    """Milliseconds per photo and peak RSS of the backbone over ``photos`` photos, ``batch`` at a time."""
    import tempfile

    from modeldesk.deploy.runtime import create_session
    from modeldesk.trainers.backbones import get_backbone

    backbone = get_backbone("efficientnet-lite0")
    with tempfile.TemporaryDirectory() as tmp:
        session = create_session(backbone.onnx_path(tmp).read_bytes(), device="cpu", threads=threads)
    images = np.random.default_rng(0).normal(size=(photos * looks, 3, size, size)).astype(np.float32)
    outputs = list(backbone.outputs)
    session.run(outputs, {"image": images[: batch * looks]})
    started = time.perf_counter()
    for start in range(0, photos, batch):
        session.run(outputs, {"image": images[start * looks : (start + batch) * looks]})
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"ms": 1000 * seconds / photos, "peak_gb": peak / 1e9}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--photos", type=int, default=48)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # size,looks,batch: measure in this process
    args = parser.parse_args(argv)
    if args.one:
        size, looks, batch = map(int, args.one.split(","))
        print(json.dumps(measure(size, looks, batch, args.photos, args.threads)))
        return 0

    from modeldesk.deploy.image_input import image_batch_size

    def run(size, looks, batch):
        command = [sys.executable, __file__, "--one", f"{size},{looks},{batch}", "--photos", str(args.photos)]
        command += ["--threads", str(args.threads)]
        return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)

    print(f"{args.photos} photos, {args.threads} threads; peak = the whole process's RSS")
    print("| px | looks | batch | ms/photo | peak GB | batch 16: ms/photo | peak GB |")
    print("|---|---|---|---|---|---|---|")
    for size, looks in ROWS:
        batch = image_batch_size(size, looks)
        ours, reference = run(size, looks, batch), run(size, looks, 16)
        print(
            f"| {size} | {looks} | {batch} | {ours['ms']:.1f} | {ours['peak_gb']:.2f} | "
            f"{reference['ms']:.1f} | {reference['peak_gb']:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
