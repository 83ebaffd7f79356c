"""The Label page's assist on camvid: how well a rough box finds an object, and how well a click's
region fits the classes, next to OpenCV's GrabCut measured in the same run (when OpenCV is installed).

Objects are the connected parts of the index masks' cars, pedestrians, bicyclists, signs, poles and
trees of at least 300 pixels; the rough box is each object's box grown by 8% of its size on every side.
A click's regions are judged by their achievable accuracy: label every superpixel with its most common
true class and count the pixels that come out right (1.0 = no region straddles two classes). 95%
intervals resample the objects (the photos for the regions).

    python bench/label_assist.py [--data DIR] [--photos 12] [--area 216]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

DEFAULT_DATA = Path("/work/shared/benchdata/camvid/CamVid")
OBJECTS = {2: "Pole", 5: "Tree", 6: "SignSymbol", 8: "Car", 9: "Pedestrian", 10: "Bicyclist"}
MIN_PIXELS = 300
VOID = 11  # camvid's "Unlabelled"


def interval(values, rounds: int = 1000, seed: int = 0) -> str:
    values = np.asarray(values, float)
    rng = np.random.default_rng(seed)
    means = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(rounds)]
    low, high = np.percentile(means, [2.5, 97.5])
    return f"{values.mean():.3f} [{low:.3f}, {high:.3f}]"


def objects(truth: np.ndarray):
    """(class id, boolean mask) of each object large enough."""
    from scipy import ndimage

    for cls in OBJECTS:
        parts, count = ndimage.label(truth == cls)
        for part in range(1, count + 1):
            found = parts == part
            if found.sum() >= MIN_PIXELS:
                yield cls, found


def rough_box(found: np.ndarray, shape) -> tuple[int, int, int, int]:
    rows, cols = np.nonzero(found)
    y0, y1, x0, x1 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    py, px = max(2, int(0.08 * (y1 - y0))), max(2, int(0.08 * (x1 - x0)))
    return max(0, x0 - px), max(0, y0 - py), min(shape[1], x1 + px), min(shape[0], y1 + py)


def grabcut(photo: np.ndarray, box) -> np.ndarray:
    import cv2

    x0, y0, x1, y1 = box
    mask = np.zeros(photo.shape[:2], np.uint8)
    cv2.grabCut(
        np.ascontiguousarray(photo[:, :, ::-1]),
        mask,
        (int(x0), int(y0), int(x1 - x0), int(y1 - y0)),
        np.zeros((1, 65)),
        np.zeros((1, 65)),
        5,
        cv2.GC_INIT_WITH_RECT,
    )
    return (mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD)


def achievable(segments: np.ndarray, truth: np.ndarray) -> float:
    counts = np.zeros((segments.max() + 1, VOID + 1), np.int64)
    np.add.at(counts, (segments.ravel(), np.minimum(truth.ravel(), VOID)), 1)
    return float(counts.max(axis=1).sum() / truth.size)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--photos", type=int, default=12)
    parser.add_argument("--area", type=int, default=216, help="photo pixels per superpixel")
    args = parser.parse_args(argv)
    from modeldesk.ui.pages.label.mask_assist import region_in_box, superpixels

    try:
        import cv2  # noqa: F401

        methods = ("watershed", "grabcut")
    except ImportError:
        methods = ("watershed",)
        print("OpenCV is not installed: GrabCut is left out")
    files = sorted((args.data / "train").glob("*.png"))
    files = files[:: max(1, len(files) // args.photos)][: args.photos]
    ious = {m: [] for m in methods}
    times = {m: [] for m in methods}
    regions, region_times, region_counts = [], [], []
    for file in files:
        photo = np.asarray(Image.open(file).convert("RGB"))
        truth = np.asarray(Image.open(args.data / "trainannot" / file.name))
        started = time.perf_counter()
        segments = superpixels(photo, args.area)
        region_times.append(time.perf_counter() - started)
        region_counts.append(int(segments.max()) + 1)
        regions.append(achievable(segments, truth))
        for _cls, found in objects(truth):
            box = rough_box(found, truth.shape)
            for method in methods:
                started = time.perf_counter()
                if method == "watershed":
                    got = region_in_box(photo, box, truth.shape)
                else:
                    got = grabcut(photo, box)
                times[method].append(time.perf_counter() - started)
                ious[method].append((got & found).sum() / max(1, (got | found).sum()))
    print(f"{len(files)} photos, {len(ious['watershed'])} objects (measured on this machine, as loaded)")
    print(f"{'box -> object':<22} {'IoU [95%]':<24} {'median ms':>9} {'p90 ms':>7}")
    for method in methods:
        ms = np.asarray(times[method]) * 1000
        print(f"{method:<22} {interval(ious[method]):<24} {np.median(ms):9.1f} {np.percentile(ms, 90):7.1f}")
    print(
        f"click regions: {statistics.mean(region_counts):.0f} per photo, achievable accuracy "
        f"{interval(regions)}, {1000 * statistics.median(region_times):.0f} ms per photo (median)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
