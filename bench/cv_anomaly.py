"""3-fold cross-validation of the anomaly templates on the training part of ``bench/train_anomaly.py``'s
split, to judge a change before it is confirmed on the held-out part.

The bench's training goods (its train and threshold parts) are split in 3 folds by a hash of the photo:
each fold's model of normal is fitted on the other two and scored on the fold's goods and on half of the
defect photos (by hash; the other half and the held-out test part are never looked at). Image AUROC and
pixel AUROC (defect masks; a good photo is all good pixels; heatmaps compared at 256 px so that input
sizes compare) per fold, their mean, and for each variant the paired difference from the first one
with a 90% bootstrap interval over the photos (out-of-fold scores pooled).

    python bench/cv_anomaly.py [--sizes 256 512] [--templates fast accurate] [--scale]
        [--heat grid minus-median] [--w8 1 2] [--cache DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_anomaly import DEFAULT_DATA, interval, load  # noqa: E402

EVAL_SIZE = 256


def _hash(text: str, n: int) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16) % n


def fit_normal(template, patches_of, bank_rows, rng):
    """The template's model of normal on the bank photos' patches, as the trainer fits it."""
    from modeldesk.trainers.anomaly.bank import PositionGaussian, greedy_coreset, sample_pool

    if template.method == "position-gaussian":
        gaussian = PositionGaussian()
        for start in range(0, len(bank_rows), 32):
            gaussian.add(patches_of(bank_rows[start : start + 32]))
        mean, whiten = gaussian.whitening(template.shrink)
        return {"mean": mean, "whiten": whiten}
    patches = patches_of(bank_rows)
    patches = patches.reshape(-1, patches.shape[-1])
    pool, _ = sample_pool(patches, 40_000, rng)
    size = min(template.bank_size, max(1000, int(template.coreset_share * len(patches))))
    return {"bank": pool[greedy_coreset(pool, size, rng)]}


def _to_eval_size(heat: np.ndarray) -> np.ndarray:
    from PIL import Image

    if heat.shape[-1] == EVAL_SIZE:
        return heat.astype(np.float16)
    image = Image.fromarray(heat.astype(np.float32), "F").resize((EVAL_SIZE, EVAL_SIZE), Image.BILINEAR)
    return np.asarray(image, np.float16)


def cross_validate(template, goods, defects, masks, cache_dir, heat_mode="grid", w8=1.0):
    """Out-of-fold image scores, heatmaps (at EVAL_SIZE) and per-fold AUROCs of ``template``."""
    from modeldesk.deploy.runtime import create_session
    from modeldesk.trainers.anomaly.evaluation import load_mask
    from modeldesk.trainers.anomaly.features import PatchComputer, extract_maps, random_projection
    from modeldesk.trainers.anomaly.graph import HEATMAP_OUTPUT, SCORE_OUTPUT, scoring_model
    from modeldesk.trainers.anomaly.scoring import auroc, pixel_auroc
    from modeldesk.trainers.backbones import get_backbone
    from modeldesk.trainers.feature_cache import FeatureCache

    backbone = get_backbone(template.backbone)
    photos = goods + defects
    start = time.monotonic()
    maps = extract_maps(backbone, template.neck, [(s.key, s.source) for s in photos], FeatureCache(cache_dir))
    maps = maps["identity"]
    row = {k: i for i, k in enumerate(maps.keys)}
    print(f"  maps at {template.neck.size} px: {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    dim = template.neck.dim(backbone)
    projection = random_projection(dim, template.projection)
    if w8 != 1.0:  # the stride-8 channels (first in the patch) weigh w8 times more in every distance
        scale = np.ones(dim, np.float32)
        scale[: backbone.outputs[template.neck.levels[0]]] = w8
        projection = np.diag(scale) if projection is None else (scale[:, None] * projection)
    computer = PatchComputer(template.neck, backbone, projection)

    def patches_of(chosen):
        return computer(maps.features[[row[s.key] for s in chosen]])

    fold = np.array([_hash("f" + s.key, 3) for s in goods])
    truth = {
        s.key: load_mask(masks[s.key], EVAL_SIZE) if s.key in masks else np.zeros((EVAL_SIZE,) * 2, bool)
        for s in photos
    }
    scores, heat, per_fold = {}, {}, []
    for f in range(3):
        bank = [s for s, g in zip(goods, fold) if g != f]
        test = [s for s, g in zip(goods, fold) if g == f] + defects
        normal = fit_normal(template, patches_of, bank, np.random.default_rng(0))
        model = scoring_model(
            template.neck,
            dim if projection is None else projection.shape[1],
            normal,
            template.top_k,
            0.0,
            template.score_border,
            sigma=template.smooth_sigma,
        )
        session = create_session(model.SerializeToString(), device="cpu")
        fold_scores, fold_heat = [], []
        batch = max(1, 8 * 256**2 // template.neck.size**2)  # the distances to the bank stay ~130 MB
        for i in range(0, len(test), batch):
            chunk = test[i : i + batch]
            s, h = session.run([SCORE_OUTPUT, HEATMAP_OUTPUT], {"patches": patches_of(chunk)})
            fold_scores += list(s)
            if heat_mode == "minus-median":  # each photo's usual heat taken off its heatmap
                h = h - np.median(h.reshape(len(h), -1), axis=1)[:, None, None]
            fold_heat += [_to_eval_size(x) for x in h]
        y = [s.target != "good" for s in test]
        per_fold.append(
            (
                auroc(y, fold_scores),
                pixel_auroc(fold_heat, [truth[s.key] for s in test], max_pixels=2_000_000),
            )
        )
        for s, sc, h in zip(test, fold_scores, fold_heat):
            if s.target == "good":
                scores[s.key], heat[s.key] = float(sc), h
            else:  # a defect is scored by every fold: its mean
                scores.setdefault(s.key, []).append(float(sc))
                heat.setdefault(s.key, []).append(h)
        print(
            f"  fold {f}: image {per_fold[-1][0]:.3f} pixel {per_fold[-1][1]:.3f}",
            file=sys.stderr,
            flush=True,
        )
    for s in defects:
        scores[s.key] = float(np.mean(scores[s.key]))
        heat[s.key] = np.mean(np.stack(heat[s.key]).astype(np.float32), 0).astype(np.float16)
    return scores, heat, truth, per_fold


def paired_bootstrap(photos, a, b, truth, n=200, seed=0):
    """90% intervals of the image and pixel AUROC differences b - a over resampled photos."""
    from modeldesk.trainers.anomaly.scoring import auroc, pixel_auroc

    rng = np.random.default_rng(seed)
    y = np.array([s.target != "good" for s in photos])
    sa = np.array([a[0][s.key] for s in photos])
    sb = np.array([b[0][s.key] for s in photos])
    image, pixel = [], []
    for r in range(n):
        idx = rng.integers(0, len(photos), len(photos))
        image.append(auroc(y[idx], sb[idx]) - auroc(y[idx], sa[idx]))
        if r < 60:  # pixel AUROC is costly: fewer resamples
            keys = [photos[i].key for i in idx]
            t = [truth[k] for k in keys]
            pixel.append(
                pixel_auroc([b[1][k] for k in keys], t, max_pixels=300_000, seed=r)
                - pixel_auroc([a[1][k] for k in keys], t, max_pixels=300_000, seed=r)
            )
    return interval(image), interval(pixel)


def main(argv=None) -> int:
    from modeldesk.trainers.templates import get_template

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "modeldesk-bench-anomaly")
    parser.add_argument("--sizes", type=int, nargs="*", default=[256, 512])
    parser.add_argument("--templates", nargs="*", default=["fast", "accurate"])
    parser.add_argument("--heat", nargs="*", choices=("grid", "minus-median"), default=["grid"])
    parser.add_argument("--w8", type=float, nargs="*", default=[1.0], help="weights of the stride-8 channels")
    parser.add_argument(
        "--scale", action="store_true", help="scale the smoothing and the edge rings with the input size"
    )
    args = parser.parse_args(argv)
    samples, masks = load(args.data)
    goods = [s for s in samples if s.target == "good" and s.split in ("train", "val")]
    defects = [s for s in samples if s.target != "good" and _hash(s.key, 2) == 0]
    photos = goods + defects
    print(f"{len(goods)} training goods in 3 folds; {len(defects)} defects (half, by hash)")
    for name in args.templates:
        base = get_template(f"anomaly-detection/{name}")
        results = {}
        for size in args.sizes:
            for heat, w8 in [(h, w) for h in args.heat for w in args.w8]:
                template = dataclasses.replace(base, neck=dataclasses.replace(base.neck, size=size))
                if args.scale:  # the smoothing and the left-out edge keep their size on the photo
                    factor = size / base.neck.size
                    template = dataclasses.replace(
                        template,
                        smooth_sigma=base.smooth_sigma * factor,
                        score_border=round(base.score_border * factor),
                    )
                label = f"{size} px {heat}" + (f" w8 {w8:g}" if w8 != 1.0 else "")
                print(f"{name} at {label}", file=sys.stderr, flush=True)
                start = time.monotonic()
                results[label] = cross_validate(template, goods, defects, masks, args.cache, heat, w8)
                folds = results[label][3]
                print(
                    f"{name:9} {label:18}: image {np.mean([f[0] for f in folds]):.3f} "
                    f"({' '.join(f'{f[0]:.3f}' for f in folds)}), pixel {np.mean([f[1] for f in folds]):.3f} "
                    f"({' '.join(f'{f[1]:.3f}' for f in folds)}); {time.monotonic() - start:.0f} s",
                    flush=True,
                )
                first = next(iter(results))
                if label != first:
                    image, pixel = paired_bootstrap(photos, results[first], results[label], results[label][2])
                    print(
                        f"{'':9} {label} - {first}: image [{image[0]:+.3f}, {image[1]:+.3f}], "
                        f"pixel [{pixel[0]:+.3f}, {pixel[1]:+.3f}] (90% paired bootstrap)",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
