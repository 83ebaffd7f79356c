"""Held-out mAP, training time and exported-model latency of the object detection templates.

Reads /work/shared/benchdata/raccoon_voc (Pascal VOC; or the folder given), holds out a quarter of
the photos by a hash of the file name (never trained on, not even for the threshold), trains each
template with a cold feature cache, and prints one table with a reference measured in the same run:
the fast template's head on the stride 32 map alone (no stride 16 detail), and each template that looks
at a photo in several test views (``detection.tta``) also cut back to one look (``..., one look``: the
same trained model, as ``deploy.compress.one_view`` cuts it), so the views' gain and cost are paired.
Every row has mAP50, AP75 (are the boxes on the object?) and COCO mAP 0.5:0.95. With ``--compress`` the
accurate model is also compressed as the app does it (int8, judged against the original on every
labeled photo: mAP50 within 1 point and the original's boxes reproduced) and its test mAP and speed-up
are added, with each candidate's verdict.

With ``--folds 4`` each template is also cross-validated over every photo (a 26-photo test split
swings by 10 points between recipes that 103 pooled photos tell apart), with and without its test
views, and the paired difference with its 90% bootstrap interval.

With ``--cv-dev`` the cross-validation covers only the photos outside the held-out quarter (what choices
are made on; the held-out quarter then confirms them).

With ``--camvid`` the photos are small objects instead: CamVid's road scenes, with a box around every
connected region of its car and pedestrian masks of at least 60 pixels (two cars side by side become one
box, so the boxes are rougher than drawn ones, the same for every template); its ``val`` frames are the
held-out part, and cross-validation folds are runs of neighbouring frames (they look alike).

With ``--tiles`` the photos are magnetic tiles with defects of every size, from 12-pixel blowholes to
whole uneven patches (at 320 px): a box, labeled with the defect's kind, around every connected region
of its mask of at least 20 pixels. Cross-validation prints each kind's AP50.

    python bench/train_detect.py [DATA_DIR] [--threads 2] [--compress] [--folds 4 [--cv-dev]] [--camvid | --tiles]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from timing import latency_ms  # bench/ is on sys.path when a bench runs as a script


def load_voc(root: Path):
    """``x.jpg`` + ``x.xml`` pairs as LabeledSample rows: 25% test / 10% val / 65% train by file name."""
    from modeldesk.datasets.records import Box

    samples = []
    for xml in sorted(root.glob("*.xml")):
        tree = ET.parse(xml).getroot()
        image = root / tree.findtext("filename")
        if not image.is_file():
            image = xml.with_suffix(".jpg")
        boxes = tuple(
            Box(
                o.findtext("name"),
                *(float(o.find("bndbox").findtext(k)) for k in ("xmin", "ymin", "xmax", "ymax")),
            )
            for o in tree.iter("object")
        )
        samples.append(labeled(image, boxes, split_by_name(image)))
    return samples


def split_by_name(path: Path) -> str:
    """25% test / 10% val / 65% train by a hash of the file name."""
    bucket = int(hashlib.sha1(path.name.encode()).hexdigest(), 16) % 20
    return "test" if bucket < 5 else "val" if bucket < 7 else "train"


def labeled(path: Path, boxes, split: str):
    """A LabeledSample of the photo at ``path`` (keyed by its content) with ``boxes``."""
    from modeldesk.trainers.data import LabeledSample

    return LabeledSample(hashlib.sha256(path.read_bytes()).hexdigest(), str(path), tuple(boxes), split)


def region_boxes(mask: np.ndarray, label: str, min_area: int) -> list:
    """A box labeled ``label`` around every connected region of the boolean ``mask`` of at least
    ``min_area`` pixels."""
    from scipy import ndimage

    from modeldesk.datasets.records import Box

    regions, _ = ndimage.label(mask)
    return [
        Box(label, float(xs.start), float(ys.start), float(xs.stop), float(ys.stop))
        for k, (ys, xs) in enumerate(ndimage.find_objects(regions))
        if (regions[ys, xs] == k + 1).sum() >= min_area
    ]


#: CamVid mask index -> box label (``--camvid``), and the smallest region that gets a box, in pixels
CAMVID_CLASSES = {8: "car", 9: "pedestrian"}
CAMVID_MIN_AREA = 60


def load_camvid(root: Path):
    """CamVid frames as LabeledSample rows with a box per connected car or pedestrian region: the
    ``val`` frames are the test split, every tenth other frame validation, the rest training."""
    from PIL import Image

    root = root / "CamVid" if (root / "CamVid").is_dir() else root
    samples = []
    for n, line in enumerate(sorted(filter(None, (root / "pairs.txt").read_text().splitlines()))):
        image, mask = line.split()
        labels = np.array(Image.open(root / mask))
        boxes = [
            box
            for index, name in CAMVID_CLASSES.items()
            for box in region_boxes(labels == index, name, CAMVID_MIN_AREA)
        ]
        split = "test" if image.startswith("val/") else "val" if n % 10 == 0 else "train"
        if boxes:
            samples.append(labeled(root / image, boxes, split))
    return samples


def all_boxes(artifact_dir, photos) -> list:
    """Every box the exported graph gives ``photos`` (what mAP needs, as the app's evaluation reads them:
    a box a better one overlaps may have been lowered below the graph's score floor, still ranked)."""
    from modeldesk.trainers.detection.evaluation import predict_boxes

    return [p["boxes"] for p in predict_boxes(artifact_dir, photos, threshold=0.0)]


def intervals(artifact_dir, test, boots: int = 1000) -> dict:
    """90% bootstrap intervals over the test photos of mAP50 and COCO mAP (every box down to the graph's floor)."""
    from modeldesk.deploy import load_artifact

    return pooled(test, all_boxes(artifact_dir, test), load_artifact(artifact_dir).labels, boots)


def true_boxes(samples) -> list:
    """Each sample's boxes as ``(label, x0, y0, x1, y1)`` rows, as the metrics take them."""
    return [[(str(b.label), b.x0, b.y0, b.x1, b.y1) for b in s.target] for s in samples]


def scorer(test, predictions, labels):
    """``score(indices)``: (mAP50, COCO mAP, AP75) of ``predictions`` pooled over the photos ``indices``
    of ``test`` (repeats allowed, for the bootstrap)."""
    from modeldesk.trainers.detection.metrics import IOU_75, IOU_THRESHOLDS, average_precision, match_image

    truths = true_boxes(test)
    per_iou = []  # per IoU threshold and label: each photo's (tp flags, scores, true boxes)
    for t in IOU_THRESHOLDS:
        rows = {}
        for truth, preds in zip(truths, predictions):
            for label in labels:
                mine = [p for p in preds if p["label"] == label]
                tp, _ = match_image([x for x in truth if x[0] == label], mine, float(t))
                rows.setdefault(label, []).append(
                    (tp, np.array([p["score"] for p in mine]), sum(x[0] == label for x in truth))
                )
        per_iou.append(rows)

    def score(idx):
        maps = []
        for rows in per_iou:
            aps = [
                average_precision(
                    np.concatenate([r[i][0] for i in idx]),
                    np.concatenate([r[i][1] for i in idx]),
                    sum(r[i][2] for i in idx),
                )
                for r in rows.values()
            ]
            maps.append(np.nanmean(aps))
        return maps[0], float(np.mean(maps)), maps[IOU_75]

    return score


def pooled(test, predictions, labels, boots: int = 1000, minus=None) -> dict:
    """mAP50, AP75 and COCO mAP of ``predictions`` on ``test`` with 90% bootstrap intervals over the
    photos; with ``minus`` (other predictions of the same photos), of the paired difference."""
    score = scorer(test, predictions, labels)
    if minus is not None:
        first, second = score, scorer(test, minus, labels)

        def score(idx):
            return tuple(a - b for a, b in zip(first(idx), second(idx)))

    rng = np.random.default_rng(0)
    drawn = np.array([score(rng.integers(0, len(test), len(test))) for _ in range(boots)])
    low, high = np.percentile(drawn, 5, axis=0), np.percentile(drawn, 95, axis=0)
    point = score(np.arange(len(test)))
    return {
        "map50_all": point[0],
        "map_all": point[1],
        "map75_all": point[2],
        "map50_90": (low[0], high[0]),
        "map_90": (low[1], high[1]),
        "map75_90": (low[2], high[2]),
    }


def one_look(artifact_dir) -> Path:
    """A copy of a detector artifact cut back to the photo as it is (``deploy.compress.one_view``)."""
    import json
    import shutil

    import onnx

    from modeldesk.deploy import load_artifact
    from modeldesk.deploy.artifact import CARD_FILE
    from modeldesk.deploy.compress import one_view

    out = Path(f"{artifact_dir}-one-look")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(artifact_dir, out)
    artifact = load_artifact(out)
    onnx.save(one_view(onnx.load(str(artifact.model_path))), str(artifact.model_path))
    card_path = out / CARD_FILE
    card = json.loads(card_path.read_text())
    card["test_views"] = ["identity"]
    card_path.write_text(json.dumps(card))
    return out


def cross_validate(name, template, samples, folds: int, tmp: Path, *, contiguous: bool = False) -> dict:
    """``folds``-fold cross-validation over every photo (test: one fold; validation: every 8th other photo;
    training: the rest), each photo predicted once by the exported graph of a model that never saw it;
    mAP pooled over all photos with 90% bootstrap intervals."""
    import dataclasses as dc

    from modeldesk.trainers.detection.metrics import mean_ap
    from modeldesk.trainers.detection.trainer import ObjectDetectionTrainer

    if contiguous:  # runs of neighbouring frames (``samples`` in frame order)
        fold = [i * folds // len(samples) for i in range(len(samples))]
    else:
        fold = [int(hashlib.sha1(Path(s.path).name.encode()).hexdigest(), 16) % folds for s in samples]
    predictions, once = [None] * len(samples), [None] * len(samples)
    started = time.perf_counter()
    for f in range(folds):
        rest = [i for i in range(len(samples)) if fold[i] != f]
        val = set(rest[::8])
        split = [
            dc.replace(s, split="test" if fold[i] == f else "val" if i in val else "train")
            for i, s in enumerate(samples)
        ]
        result = ObjectDetectionTrainer().train(
            split,
            template,
            tmp / f"cv-{name.replace('/', '-')}-{f}",
            tmp / "cache-cv",  # the maps do not depend on the head: one cache for every template
            device="cpu",
        )
        test = [i for i in range(len(samples)) if fold[i] == f]
        for i, boxes in zip(test, all_boxes(result.artifact_dir, [samples[i] for i in test])):
            predictions[i] = boxes
        if len(template.test_views) > 1:
            for i, boxes in zip(test, all_boxes(one_look(result.artifact_dir), [samples[i] for i in test])):
                once[i] = boxes
        labels = result.metrics["labels"]
    out = {"name": name, "seconds": time.perf_counter() - started, **pooled(samples, predictions, labels)}
    out["per_class_ap50"] = mean_ap(true_boxes(samples), predictions, labels)[1]
    if len(template.test_views) > 1:
        out["one_look"] = pooled(samples, once, labels)
        out["gain"] = pooled(samples, predictions, labels, minus=once)
    return out


def train_row(name, template, samples, threads, tmp: Path) -> list[dict]:
    """The template trained on the training photos and measured on the test photos; with test views,
    a second row for the same model cut back to one look."""
    from modeldesk.trainers.detection.evaluation import evaluate_boxes
    from modeldesk.trainers.detection.trainer import ObjectDetectionTrainer

    cache = tmp / f"cache-{name.replace('/', '-')}"
    started = time.perf_counter()
    result = ObjectDetectionTrainer().train(
        samples, template, tmp / f"model-{name.replace('/', '-')}", cache, device="cpu"
    )
    seconds = time.perf_counter() - started
    m = result.metrics
    test = next(s for s in samples if s.split == "test")
    row = {
        "name": name,
        "map50": m["map50"],
        "map": m["map"],
        "map75": m["map75"],
        "precision": m["precision"],
        "recall": m["recall"],
        **intervals(result.artifact_dir, [s for s in samples if s.split == "test"]),
        "threshold": m["threshold"],
        "train_s": seconds,
        "eta_s": result.plan.get("eta_s"),
        "latency_ms": latency_ms(result.artifact_dir, test.path, threads),
        "artifact": result.artifact_dir,
        "parity_px": m.get("export_max_abs_diff_px"),
    }
    if len(template.test_views) < 2:
        return [row]
    cut = one_look(result.artifact_dir)
    tests = [s for s in samples if s.split == "test"]
    once = {**evaluate_boxes(cut, tests), **intervals(cut, tests)}
    once.update(
        name=f"{name}, one look", train_s=None, eta_s=None, latency_ms=latency_ms(cut, test.path, threads)
    )
    return [once, row]


def compress_row(row, samples, threads) -> dict:
    """Compress a trained row as the app does: int8 candidates judged against the original on every
    labeled photo (``trainers.detection.compression``); the kept copy is then scored on the test photos."""
    from modeldesk.app.pipeline import compression_metric
    from modeldesk.deploy import compress_artifact, load_artifact
    from modeldesk.trainers.detection.compression import judging_photos
    from modeldesk.trainers.detection.evaluation import evaluate_boxes

    calibration = [s.path for s in samples if s.split == "train"][:64]
    judge = compression_metric(load_artifact(row["artifact"]))
    validation = judging_photos(samples)
    out = Path(row["artifact"]).with_name("compressed")
    result = compress_artifact(
        row["artifact"], out, calibration=calibration, validation=validation, threads=(threads,), metric=judge
    )
    measured = [c for c in result["candidates"] if c["accuracy"] is not None]
    verdicts = [
        (c["name"], c["accuracy"], agreement, c["code"], c["latency_ms"])
        for c, agreement in zip(measured, judge.agreements)
    ]
    test = [s for s in samples if s.split == "test"]
    metrics = evaluate_boxes(out, test)
    return {
        **intervals(out, test),
        "name": f"{row['name']} compressed ({result['chosen']})",
        "map50": metrics["map50"],
        "map": metrics["map"],
        "map75": metrics["map75"],
        "precision": metrics["precision"],
        "recall": metrics["recall"],
        "threshold": metrics["threshold"],
        "train_s": None,
        "eta_s": None,
        "latency_ms": latency_ms(out, test[0].path, threads),
        "speedup": result["speedup"],
        "judged": (result["accuracy_fp32"], result["accuracy_compressed"]),
        "judged_on": len(validation),
        "verdicts": verdicts,
    }


#: the smallest connected defect region of a magnetic tile's mask that gets a box (``--tiles``), in pixels
TILE_MIN_AREA = 20


def load_tiles(root: Path):
    """The magnetic tiles with a defect as LabeledSample rows, a box (labeled with the defect's kind)
    around every connected region of its mask: 25% test / 10% val / 65% train by file name."""
    import csv

    from PIL import Image

    samples = []
    with open(root / "labels.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["label"] == "defect" and r["mask"]]
    for r in rows:
        boxes = region_boxes(np.array(Image.open(root / r["mask"])) > 127, r["kind"], TILE_MIN_AREA)
        if boxes:
            samples.append(labeled(root / r["image"], boxes, split_by_name(root / r["image"])))
    return samples


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", help="default: raccoon_voc, or camvid with --camvid")
    parser.add_argument("--camvid", action="store_true", help="small objects: CamVid's cars and pedestrians")
    parser.add_argument(
        "--tiles", action="store_true", help="defects of every size: magnetic tile defects' masks as boxes"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compress", action="store_true")
    parser.add_argument("--only", nargs="+", help="train only these templates (names as printed)")
    parser.add_argument(
        "--folds",
        type=int,
        default=0,
        help="also cross-validate each template over every photo with this many folds",
    )
    parser.add_argument(
        "--cv-only", action="store_true", help="with --folds: skip the held-out quarter's table"
    )
    parser.add_argument(
        "--cv-dev",
        action="store_true",
        help="with --folds: cross-validate on the photos outside the held-out quarter only (for choices)",
    )
    args = parser.parse_args(argv)

    from modeldesk.trainers.detection.features import DetectionNeck
    from modeldesk.trainers.detection.templates import TEMPLATES

    if args.camvid:
        args.data = args.data or "/work/shared/benchdata/camvid"
        samples = load_camvid(Path(args.data))
    elif args.tiles:
        args.data = args.data or "/work/shared/benchdata/magnetic_tile"
        samples = load_tiles(Path(args.data))
    else:
        args.data = args.data or "/work/shared/benchdata/raccoon_voc"
        samples = load_voc(Path(args.data))
    counts = {name: sum(s.split == name for s in samples) for name in ("train", "val", "test")}
    print(f"{args.data}: {len(samples)} photos, {sum(len(s.target) for s in samples)} boxes, splits {counts}")
    fast = TEMPLATES[0]
    reference = dataclasses.replace(
        fast,
        name="reference: fast head on stride 32 alone",
        neck=DetectionNeck(size=fast.neck.size, stride=32, levels=("stride32",)),
        test_views=("identity",),
    )
    compared = (reference, *TEMPLATES)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-detect-") as tmp:
        for template in compared:
            if args.cv_only or (args.only and template.name not in args.only):
                continue
            rows += train_row(template.name, template, samples, args.threads, Path(tmp))
            print(
                f"  trained {template.name}: mAP50 {rows[-1]['map50']:.3f} in {rows[-1]['train_s']:.0f} s",
                file=sys.stderr,
            )
        if args.compress and rows:
            accurate = next((r for r in rows if r["name"] == "object-detection/accurate"), rows[-1])
            rows.append(compress_row(accurate, samples, args.threads))
        print(
            f"\n{'model':<48} {'mAP50':>6} {'AP75':>6} {'mAP':>6} {'P':>5} {'R':>5} {'thr':>5} {'train s':>8} "
            f"{'ETA s':>6} {'ms/photo':>9}"
        )
        for r in rows:
            train = f"{r['train_s']:.0f}" if r["train_s"] is not None else "-"
            eta = f"{r['eta_s']:.0f}" if r.get("eta_s") is not None else "-"
            print(
                f"{r['name']:<48} {r['map50']:>6.3f} {r['map75']:>6.3f} {r['map']:>6.3f} {r['precision']:>5.2f} "
                f"{r['recall']:>5.2f} "
                f"{r['threshold']:>5.2f} {train:>8} {eta:>6} {r['latency_ms']:>9.1f}"
            )
        print("\n90% bootstrap intervals over the test photos:")
        for r in rows:
            print(
                f"  {r['name']:<46} mAP50 [{r['map50_90'][0]:.3f}, {r['map50_90'][1]:.3f}]  "
                f"AP75 [{r['map75_90'][0]:.3f}, {r['map75_90'][1]:.3f}]  "
                f"mAP [{r['map_90'][0]:.3f}, {r['map_90'][1]:.3f}]"
            )
        if args.folds:
            print(
                f"\n{args.folds}-fold cross-validation on "
                f"{'the photos outside the held-out quarter' if args.cv_dev else 'every photo'}, every photo "
                "predicted once by a model that never saw it, pooled\n(90% bootstrap intervals over the "
                "photos):"
            )
            for template in compared:
                if args.only and template.name not in args.only:
                    continue
                cv_samples = [s for s in samples if s.split != "test"] if args.cv_dev else samples
                cv = cross_validate(
                    template.name, template, cv_samples, args.folds, Path(tmp), contiguous=args.camvid
                )
                print(
                    f"  {cv['name']:<46} mAP50 {cv['map50_all']:.3f} [{cv['map50_90'][0]:.3f}, {cv['map50_90'][1]:.3f}]"
                    f"  AP75 {cv['map75_all']:.3f} [{cv['map75_90'][0]:.3f}, {cv['map75_90'][1]:.3f}]"
                    f"  mAP {cv['map_all']:.3f} [{cv['map_90'][0]:.3f}, {cv['map_90'][1]:.3f}]  ({cv['seconds']:.0f} s)",
                    flush=True,
                )
                if len(cv["per_class_ap50"]) > 1:
                    print(
                        "    AP50 per class: "
                        + ", ".join(f"{k} {v:.3f}" for k, v in cv["per_class_ap50"].items())
                    )
                for key, words in (("one_look", "one look"), ("gain", "views - one look")):
                    if key in cv:
                        c, f = cv[key], "+.3f" if key == "gain" else ".3f"
                        print(
                            f"    {words:<44} mAP50 {c['map50_all']:{f}} [{c['map50_90'][0]:{f}}, "
                            f"{c['map50_90'][1]:{f}}]  AP75 {c['map75_all']:{f}} [{c['map75_90'][0]:{f}}, "
                            f"{c['map75_90'][1]:{f}}]  mAP {c['map_all']:{f}} [{c['map_90'][0]:{f}}, "
                            f"{c['map_90'][1]:{f}}]",
                            flush=True,
                        )
        for r in rows:
            if "speedup" in r:
                print(
                    f"\ncompression: {r['speedup']:.2f}x faster (measured by the compressor, {args.threads} threads); "
                    f"mAP50 on all {r['judged_on']} labeled photos {r['judged'][0]:.3f} -> {r['judged'][1]:.3f}"
                )
                print(f"{'candidate':<32} {'mAP50 all':>9} {'agrees':>7} {'ms':>7}  verdict")
                for name, score, agreement, code, ms in r["verdicts"]:
                    print(f"{name:<32} {score:>9.3f} {agreement:>7.3f} {ms or 0:>7.1f}  {code}")
    print(
        f"\nlatency: exported graph at batch 1 with {args.threads} threads, decoding excluded; the machine may "
        "be shared, so times are upper bounds."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
