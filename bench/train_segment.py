"""Held-out mean IoU, per-class IoU, pixel accuracy, training time and latency per photo of the
segmentation templates on camvid, next to a plain reference measured in the same run.

camvid's frames come from 3 driving sequences (0001TP, 0006R0, 0016E5) and neighbouring frames look
alike, so the held-out part is not drawn at random: in every sequence, the frames (train/ and val/
together, in frame order) are cut into a first three quarters (training) and the last quarter (test),
and the ``--guard`` frames just before each test block are left out, so no training frame is a
neighbour of a test frame. The trainer itself stops on the last frames of each sequence's training
part. The reference is a linear per-pixel head on the stride-8 map alone (no other scale, no context,
no class balancing, no mirrored photos); the issue's quick check (a linear head on the stride-8/16/32
maps upsampled to stride 8) is the second reference. 95% intervals resample the test photos. Every
model is measured through its exported ONNX graph with the predictor, one photo per run.

    python bench/train_segment.py [--data DIR] [--workspace DIR] [--templates a,b] [--guard 2]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

DEFAULT_DATA = Path("/work/shared/benchdata/camvid/CamVid")
TEMPLATES = ("segmentation/fast", "segmentation/accurate")


def references():
    """The plain references, as templates of the same trainer."""
    from modeldesk.trainers.segmentation.features import SegNeck
    from modeldesk.trainers.segmentation.templates import SegmentationTemplate

    common = dict(task="segmentation", backbone="efficientnet-lite0", hidden=0, balance=0.0, flip_train=False)
    return (
        SegmentationTemplate(
            name="reference: linear, stride 8",
            description="",
            neck=SegNeck(size=512, stride=8, levels=("stride8",)),
            **common,
        ),
        SegmentationTemplate(
            name="reference: linear, strides 8/16/32",
            description="",
            neck=SegNeck(size=512, stride=8, levels=("stride8", "stride16", "stride32")),
            **common,
        ),
    )


def frame_order(name: str) -> tuple[str, int]:
    """(sequence, frame number) of a camvid file name such as ``train/0016E5_07959.png``."""
    stem = Path(name).stem
    sequence, _, frame = stem.partition("_")
    return sequence, int(re.sub(r"\D", "", frame) or 0)


def held_out_splits(samples, guard: int) -> dict[str, str | None]:
    """key -> "train", "test" or None (a guard frame): the last quarter of every sequence is test."""
    by_sequence = defaultdict(list)
    for s in samples:
        by_sequence[frame_order(s.name)[0]].append(s)
    splits: dict[str, str | None] = {}
    for frames in by_sequence.values():
        frames.sort(key=lambda s: frame_order(s.name)[1])
        cut = len(frames) - max(1, len(frames) // 4)
        for i, s in enumerate(frames):
            splits[s.key] = "test" if i >= cut else (None if i >= cut - guard else "train")
    return splits


def _class_cell(metrics: dict, label: str) -> str:
    """A class's IoU and its 95% interval over the test photos, e.g. ``0.43 (0.35-0.50)``."""
    iou = metrics["per_class"][label]
    if iou is None:
        return "-"
    low_high = (metrics.get("per_class_interval") or {}).get(label)
    return f"{iou:.2f}" + (f" ({low_high[0]:.2f}-{low_high[1]:.2f})" if low_high else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--workspace", type=Path, default=None, help="reuse (keeps the feature cache)")
    parser.add_argument("--templates", default=",".join(("references", *TEMPLATES)))
    parser.add_argument("--guard", type=int, default=2)
    parser.add_argument("--budget", type=float, default=None, help="time budget per template (s)")
    args = parser.parse_args(argv)

    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.app.workspace import Workspace
    from modeldesk.deploy import Predictor
    from modeldesk.trainers.data import LabeledSample
    from modeldesk.trainers.tasks import get_trainer
    from modeldesk.trainers.templates import get_template

    root = args.workspace or Path(tempfile.mkdtemp(prefix="bench-segment-"))
    ws = Workspace(root, cleanup=False)
    if "camvid" not in [p["name"] for p in ws.list_projects()]:
        ws.create_project("camvid", "segmentation")
        ws.import_data("camvid", args.data)
    found = labeled_samples(ws.store, ws.project("camvid"))
    splits = held_out_splits(found, args.guard)
    samples = [
        LabeledSample(s.key, s.source, s.target, splits[s.key], s.name) for s in found if splits[s.key]
    ]
    n_test = sum(s.split == "test" for s in samples)
    print(
        f"camvid: {len(samples)} photos, {len(samples) - n_test} train / {n_test} test "
        f"(last quarter of each sequence; {len(found) - len(samples)} guard frames left out)"
    )
    chosen = []
    for name in args.templates.split(","):
        chosen += list(references()) if name == "references" else [get_template(name)]
    trainer = get_trainer("segmentation")
    cache = root / "cache" / "features"
    rows = []
    for template in chosen:
        out = root / "models" / re.sub(r"\W+", "-", template.name)
        shutil.rmtree(out, ignore_errors=True)
        started = time.monotonic()
        result = trainer.train(samples, template, out, cache, time_budget=args.budget)
        seconds = time.monotonic() - started
        predictor = Predictor(result.artifact_dir, device="cpu")
        tests = [s for s in samples if s.split == "test"]
        predictor.predict([tests[0].path])  # warm up
        latency = []
        for s in tests[:12]:
            t = time.perf_counter()
            predictor.predict([s.path])
            latency.append(1000 * (time.perf_counter() - t))
        m = result.metrics
        rows.append((template.name, m, seconds, statistics.median(latency), result.plan.get("eta_s")))
        print(
            f"{template.name}: mIoU {m['miou']:.3f} {m['miou_interval']}, pixel acc {m['pixel_accuracy']:.3f}, "
            f"trained in {seconds:.0f} s (ETA said {result.plan.get('eta_s')} s), "
            f"{statistics.median(latency):.0f} ms/photo; held-out choices: refined {m.get('refined')}, "
            f"extra sizes {m.get('extra_sizes')}, class offsets {m.get('class_offsets')}; {result.warnings}",
            flush=True,
        )
    print()
    labels = rows[0][1]["labels"] if rows else []
    head = ["template", "mIoU", "95% interval", "pixel acc", "train s", "ETA s", "ms/photo", *labels]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, m, seconds, ms, eta in rows:
        cells = [
            name,
            f"{m['miou']:.3f}",
            f"{m['miou_interval'][0]:.3f}-{m['miou_interval'][1]:.3f}",
            f"{m['pixel_accuracy']:.3f}",
            f"{seconds:.0f}",
            f"{eta:.0f}" if eta is not None else "-",
            f"{ms:.0f}",
            *[_class_cell(m, c) for c in labels],
        ]
        print("| " + " | ".join(cells) + " |")
    ws.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
