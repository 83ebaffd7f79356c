"""Cross-validation of the accurate segmentation template's head settings on camvid's training frames.

Only the training part of ``bench/train_segment.py``'s split is used (the test quarter of every sequence
is never read). Every sequence's training frames are cut into ``--folds`` contiguous blocks; a fold holds
out one block of each sequence (and ``--guard`` frames on each side of it). The features are the
template's neck on the cached maps, projected once on their main directions (PCA on all training frames:
unsupervised, so a small leak that does not favour any variant). Scores are mean IoU at the grid's
points (not the photo's pixels), so they rank variants, not predict the bench.

    python bench/cv_segment.py --workspace /tmp/bench-seg [--folds 3] [--rows 40000] [--epochs 10]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, required=True, help="a train_segment.py workspace")
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--guard", type=int, default=2)
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--components", type=int, default=256)
    parser.add_argument("--variants", default="base")
    parser.add_argument("--seed", type=int, default=0, help="of the drawn points and the head (noise check)")
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="also score per-class logit offsets chosen on the last 15%% of each sequence's fitting "
        "frames (left out of the head's points), as the trainer chooses them on its held-out photos",
    )
    args = parser.parse_args(argv)

    from train_segment import frame_order, held_out_splits

    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.app.workspace import Workspace
    from modeldesk.datasets.masks import VOID
    from modeldesk.trainers.backbones import get_backbone
    from modeldesk.trainers.feature_cache import FeatureCache
    from modeldesk.trainers.heads.mlp import MLPHead
    from modeldesk.trainers.segmentation.calibration import class_offsets
    from modeldesk.trainers.segmentation.evaluation import confusion, iou_per_class
    from modeldesk.trainers.segmentation.features import (
        FeatureGrid,
        SegNeck,
        edge_points,
        extract_maps,
        label_grid,
    )
    from modeldesk.trainers.segmentation.graph import head_layers
    from modeldesk.trainers.segmentation.trainer import principal_directions
    from modeldesk.trainers.templates import get_template

    ws = Workspace(args.workspace, cleanup=False)
    found = labeled_samples(ws.store, ws.project("camvid"))
    splits = held_out_splits(found, 2)
    train = sorted((s for s in found if splits[s.key] == "train"), key=lambda s: frame_order(s.name))
    classes = list(train[0].target.classes)
    n_classes = len(classes)
    template = get_template("segmentation/accurate")
    backbone = get_backbone(template.backbone)
    cache = FeatureCache(args.workspace / "cache" / "features")
    necks = {
        "main": template.neck,
        "small": SegNeck(size=512, stride=8, levels=template.neck.levels, pyramid=(1, 2, 4)),
    }
    started = time.monotonic()
    data = {}  # (neck, view) -> (P, G*G, k) float16
    labels = {}  # (neck, view) -> (P, G*G) uint8
    projection = None
    saved = args.workspace / "cv-grids.npz"  # the projected grids, reused by the next run
    if saved.exists():
        with np.load(saved) as z:
            for name, view in itertools.product(necks, ("identity", "hflip")):
                data[name, view], labels[name, view] = z[f"{name}-{view}-x"], z[f"{name}-{view}-y"]
    for name, neck in necks.items():
        if (name, "hflip") in data:
            continue
        views = ("identity", "hflip")
        extracted = extract_maps(backbone, neck, [(s.key, s.path) for s in train], cache, views=views)
        grid = FeatureGrid(neck, backbone)
        for view in views:
            result = extracted[view]
            row_of = {k: r for r, k in enumerate(result.keys)}
            if projection is None:
                rng = np.random.default_rng(0)
                rows = []
                for s in train:
                    f = grid(result.features[[row_of[s.key]]])[0]
                    f = f.reshape(f.shape[0], -1).T
                    rows.append(f[rng.choice(len(f), 150, replace=False)])
                projection = principal_directions(np.concatenate(rows), args.components)
                print(f"PCA done {time.monotonic() - started:.0f} s", flush=True)
            mean, directions = projection
            out = np.empty((len(train), neck.grid**2, args.components), np.float16)
            lab = np.empty((len(train), neck.grid**2), np.uint8)
            for i, s in enumerate(train):
                f = grid(result.features[[row_of[s.key]]])[0]
                out[i] = (f.reshape(f.shape[0], -1).T - mean) @ directions
                g = label_grid(s.target.read(), neck.grid)
                lab[i] = (g[:, ::-1] if view == "hflip" else g).ravel()
            data[name, view], labels[name, view] = out, lab
            print(f"{name}/{view} done {time.monotonic() - started:.0f} s", flush=True)

    if not saved.exists():
        arrays = {f"{n}-{v}-x": a for (n, v), a in data.items()}
        np.savez(saved, **arrays, **{f"{n}-{v}-y": a for (n, v), a in labels.items()})

    # folds: contiguous blocks of every sequence's training frames
    by_sequence = defaultdict(list)
    for i, s in enumerate(train):
        by_sequence[frame_order(s.name)[0]].append(i)
    folds = []
    for k in range(args.folds):
        held, drop = [], []
        for idx in by_sequence.values():
            blocks = np.array_split(np.array(idx), args.folds)
            held += list(blocks[k])
            lo, hi = idx.index(blocks[k][0]), idx.index(blocks[k][-1])
            drop += idx[max(0, lo - args.guard) : lo] + idx[hi + 1 : hi + 1 + args.guard]
        fit = [i for i in range(len(train)) if i not in set(held) | set(drop)]
        inner = []  # the trainer's held-out photos: the last frames of each sequence's fitting part
        if args.calibrate:
            for idx in by_sequence.values():
                mine = [i for i in idx if i in set(fit)]
                inner += mine[-max(1, int(round(0.15 * len(mine)))) :]
            fit = [i for i in fit if i not in set(inner)]
        folds.append((fit, held, inner))

    G = necks["main"].grid
    from modeldesk.trainers.views import resize_matrix

    small_up = resize_matrix(necks["small"].grid, G).astype(np.float64)
    variants = {
        "base": dict(balance=0.5, edge=0.0, hidden=256),
        "bal25": dict(balance=0.25, edge=0.0, hidden=256),
        "bal25edge2": dict(balance=0.25, edge=2.0, hidden=256),
        "edge1": dict(balance=0.5, edge=1.0, hidden=256),
        "edge4": dict(balance=0.5, edge=4.0, hidden=256),
        "bal75": dict(balance=0.75, edge=0.0, hidden=256),
        "bal100": dict(balance=1.0, edge=0.0, hidden=256),
        "edge2": dict(balance=0.5, edge=2.0, hidden=256),
        "bal75edge2": dict(balance=0.75, edge=2.0, hidden=256),
        "h512": dict(balance=0.5, edge=0.0, hidden=512),
    }
    report_classes = [c for c in ("Pole", "SignSymbol", "Pedestrian", "Bicyclist", "Fence") if c in classes]
    for vname in args.variants.split(","):
        v = variants[vname]
        totals = defaultdict(lambda: np.zeros((n_classes, n_classes), np.int64))
        for fit, held, inner in folds:
            # rows: grid points of the fitting photos' two views, rare classes and edges drawn more
            lab = np.concatenate([labels["main", view][fit] for view in ("identity", "hflip")])
            flat = lab.ravel()
            counts = np.bincount(flat[flat != VOID], minlength=n_classes)[:n_classes]
            weight = np.zeros(256)
            weight[:n_classes] = np.where(counts > 0, np.maximum(counts, 1.0) ** -v["balance"], 0.0)
            p = weight[flat]
            if v["edge"]:
                edges = np.stack([edge_points(row.reshape(G, G)) for row in lab]).ravel()
                p = p * (1.0 + v["edge"] * edges)
            rng = np.random.default_rng(args.seed)
            chosen = np.sort(rng.choice(p.size, size=args.rows, replace=False, p=p / p.sum()))
            photo, point = np.divmod(chosen, G * G)
            n_fit = len(fit)
            X = np.empty((len(chosen), args.components), np.float32)
            for half, view in enumerate(("identity", "hflip")):
                sel = (photo >= half * n_fit) & (photo < (half + 1) * n_fit)
                X[sel] = data["main", view][np.array(fit)[photo[sel] - half * n_fit], point[sel]]
            y = flat[chosen].astype(np.int64)
            head = MLPHead(
                hidden=v["hidden"],
                l2=1e-4,
                dropout=0.1,
                lr=2e-3,
                epochs=args.epochs,
                batch_size=512,
                patience=3,
                random_state=args.seed,
            )
            head.fit(X, y)
            layers = [(W.astype(np.float32), b.astype(np.float32)) for W, b in head_layers(head, n_classes)]

            def logits(x, layers=layers):
                h = np.maximum(x.astype(np.float32) @ layers[0][0] + layers[0][1], 0)
                return h @ layers[1][0] + layers[1][1]

            def scored(i):
                """(key, logits (G*G, C)) of photo ``i``: one view, with its mirror, and with 512 px too."""
                single = logits(data["main", "identity"][i])
                flip = logits(data["main", "hflip"][i]).reshape(G, G, -1)[:, ::-1].reshape(G * G, -1)
                both = 0.5 * (single + flip)
                gs = necks["small"].grid
                small = logits(data["small", "identity"][i]).reshape(gs, gs, -1)
                small_f = logits(data["small", "hflip"][i]).reshape(gs, gs, -1)[:, ::-1]
                sm = 0.5 * (small + small_f)
                sm = np.einsum("ia,abc,jb->ijc", small_up, sm, small_up, optimize=True).reshape(G * G, -1)
                return {"single": single, "flip": both, "flip+512": 0.5 * (both + sm)}

            offsets = {}
            if inner:
                inner_scores = [scored(i) for i in inner]
                for key in inner_scores[0]:
                    offsets[key] = class_offsets(
                        [s[key].T for s in inner_scores],
                        [labels["main", "identity"][i] for i in inner],
                        n_classes,
                    )[0]
                print(f"  offsets {' '.join(f'{k}: {np.round(o, 2).tolist()}' for k, o in offsets.items())}")
            for i in held:
                truth = labels["main", "identity"][i]
                for key, lg in scored(i).items():
                    totals[key] += confusion(truth, lg.argmax(1), n_classes)
                    if key in offsets:
                        totals[key + "+cal"] += confusion(truth, (lg + offsets[key]).argmax(1), n_classes)
        for key, total in totals.items():
            iou = iou_per_class(total)
            rare = " ".join(f"{c} {iou[classes.index(c)]:.3f}" for c in report_classes)
            print(
                f"{vname:12s} {key:9s} mIoU {np.nanmean(iou):.4f}  {rare}  ({time.monotonic() - started:.0f} s)",
                flush=True,
            )
    ws.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
