"""The anchor-free detection head: per cell, a score per class (a logistic heatmap) and a box.

Training targets follow CenterNet and FCOS: a cell's class target is a Gaussian bump around each
box's centre (soft labels, fitted by a logistic regression), and the cells near a centre regress the
log distances from the cell's point to the box's four sides (a ridge regression), so every cell can
propose a whole box and non-maximum suppression keeps the best. Both are linear in the cell features,
i.e. one 1x1 convolution in the exported graph; a numpy twin of the graph's decoding is used while
training (thresholds, model selection) and checked against the graph.
"""

from __future__ import annotations

import numpy as np

from modeldesk.trainers.heads.losses import sigmoid_loss_grad
from modeldesk.trainers.heads.optim import Packer, lbfgs
from modeldesk.trainers.views import shrunk_size


def cell_points(grid: int, stride: int) -> np.ndarray:
    """(grid*grid, 2) centres (x, y) of the cells in letterbox pixels, row-major (y, then x)."""
    ys, xs = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
    return np.stack([(xs.ravel() + 0.5) * stride, (ys.ravel() + 0.5) * stride], axis=1).astype(np.float64)


def encode(
    boxes: np.ndarray,
    classes: np.ndarray,
    n_classes: int,
    points: np.ndarray,
    stride: int,
    *,
    sigma: float = 0.12,
    positive: float = 0.35,
):
    """Targets of one image's cells.

    Parameters
    ----------
    boxes : (M, 4) boxes in letterbox pixels.  classes : (M,) class indices.
    points : the cells' centres (:func:`cell_points`).
    sigma : the Gaussian's width as a share of the box's width and height (at least half a cell).
    positive : cells whose bump value is above this regress their box.

    Returns
    -------
    heat (P, C) soft class targets, sides (P, 4) log side distances / stride, weight (P,) of each
    cell's box regression (0 for cells that do not regress).
    """
    heat = np.zeros((len(points), n_classes))
    sides = np.zeros((len(points), 4))
    weight = np.zeros(len(points))
    if not len(boxes):
        return heat, sides, weight
    boxes = np.asarray(boxes, np.float64)
    centre = (boxes[:, :2] + boxes[:, 2:]) / 2
    size = np.maximum(boxes[:, 2:] - boxes[:, :2], 1.0)
    spread = np.maximum(sigma * size, stride / 2)
    d = (points[:, None, :] - centre[None]) / spread[None]
    bumps = np.exp(-0.5 * (d**2).sum(axis=2))  # (P, M)
    for c in range(n_classes):
        mine = classes == c
        if mine.any():
            heat[:, c] = bumps[:, mine].max(axis=1)
    owner = bumps.argmax(axis=1)
    best = bumps[np.arange(len(points)), owner]
    box = boxes[owner]
    dist = np.stack(
        [
            points[:, 0] - box[:, 0],
            points[:, 1] - box[:, 1],
            box[:, 2] - points[:, 0],
            box[:, 3] - points[:, 1],
        ],
        axis=1,
    )
    inside = (dist > 0).all(axis=1)
    use = inside & (best >= positive)
    sides[use] = np.log(dist[use] / stride)
    weight[use] = best[use]
    return heat, sides, weight


def flip_boxes(boxes: np.ndarray, size: int) -> np.ndarray:
    """Boxes of a horizontally flipped ``size`` x ``size`` letterbox."""
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    return np.stack([size - boxes[:, 2], boxes[:, 1], size - boxes[:, 0], boxes[:, 3]], axis=1)


def view_boxes(boxes: np.ndarray, view: str, size: int) -> np.ndarray:
    """Boxes of a ``size`` x ``size`` letterbox as they sit in one of its training views
    (``trainers.views``): the same for ``identity``, mirrored for ``hflip``, scaled for ``shrink``."""
    if view == "identity":
        return np.asarray(boxes, np.float64).reshape(-1, 4)
    if view == "hflip":
        return flip_boxes(boxes, size)
    if view == "shrink":
        return np.asarray(boxes, np.float64).reshape(-1, 4) * (shrunk_size(size) / size)
    raise ValueError(f"the {view!r} view cannot be used to train a detector: its boxes cannot be followed")


def decode_boxes(sides: np.ndarray, points: np.ndarray, stride: int) -> np.ndarray:
    """(P, 4) log side distances -> (P, 4) boxes (x0, y0, x1, y1) in letterbox pixels."""
    dist = np.exp(np.clip(sides, -10, 10)) * stride
    return np.concatenate([points - dist[:, :2], points + dist[:, 2:]], axis=1)


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, limit: int) -> np.ndarray:
    """Indices kept by greedy non-maximum suppression, best score first."""
    from modeldesk.trainers.detection.metrics import box_iou

    order = np.argsort(-scores, kind="stable")
    keep = []
    while len(order) and len(keep) < limit:
        i = order[0]
        keep.append(i)
        if len(order) == 1:
            break
        overlap = box_iou(boxes[i : i + 1], boxes[order[1:]])[0]
        order = order[1:][overlap <= iou_threshold]
    return np.array(keep, int)


class CellHead:
    """Per-cell class logits (logistic heatmap) and box sides (ridge), on standardised cell features.

    Parameters
    ----------
    l2 : L2 penalty of the class logits (on standardised features, per row of data).
    ridge : L2 penalty of the box regression, relative to the weighted row count.
    positive_weight : extra weight of cells whose class target is above 0.1.
    max_iter : L-BFGS iterations of the class logits.
    """

    def __init__(self, l2=1e-3, ridge=1e-2, positive_weight=3.0, max_iter=150):
        self.l2 = l2
        self.ridge = ridge
        self.positive_weight = positive_weight
        self.max_iter = max_iter

    def fit(self, X, heat, sides, side_weight, sample_weight=None):
        """Fit on cell rows ``X`` (n, D) with targets from :func:`encode`; returns self."""
        X = np.asarray(X, np.float32)
        n, dim = X.shape
        classes = heat.shape[1]
        self.mean_ = X.mean(axis=0, dtype=np.float64).astype(np.float32)
        self.scale_ = np.sqrt(np.mean(np.square(X - self.mean_), axis=0)) + np.float32(1e-3)
        Xs = (X - self.mean_) / self.scale_
        w = (
            np.ones((n, classes))
            if sample_weight is None
            else np.repeat(np.asarray(sample_weight)[:, None], classes, 1)
        )
        w = w * np.where(heat > 0.1, self.positive_weight, 1.0)
        w = (w / w.sum() * n).astype(np.float32)
        packer = Packer([(dim, classes), (classes,)])
        T = heat.astype(np.float32)
        l2 = self.l2 * n

        def fun(theta):
            W, b = packer.unpack(theta)
            loss, (gW, gb) = sigmoid_loss_grad(W.astype(np.float32), b.astype(np.float32), Xs, T, w, l2)
            return loss / n, packer.pack([gW, gb]).astype(np.float64) / n

        prior = np.log(np.clip(T.mean(axis=0), 1e-4, 0.5) / (1 - np.clip(T.mean(axis=0), 1e-4, 0.5)))
        theta0 = packer.pack([np.zeros((dim, classes)), prior])
        theta, _, self.n_iter_ = lbfgs(fun, theta0, self.max_iter, 1e-6)
        self.coef_, self.intercept_ = (a.astype(np.float32) for a in packer.unpack(theta))
        rows = side_weight > 0
        Xr, Yr, wr = Xs[rows].astype(np.float64), sides[rows], side_weight[rows]
        self.side_mean_ = (Yr * wr[:, None]).sum(axis=0) / max(wr.sum(), 1e-9) if rows.any() else np.zeros(4)
        gram = (Xr * wr[:, None]).T @ Xr + self.ridge * max(wr.sum(), 1.0) * np.eye(dim)
        self.side_coef_ = np.linalg.solve(gram, (Xr * wr[:, None]).T @ (Yr - self.side_mean_)).astype(
            np.float32
        )
        return self

    def predict(self, X) -> tuple[np.ndarray, np.ndarray]:
        """(scores (n, C) in 0..1, log box sides (n, 4)) of cell rows ``X``."""
        weight, bias = self.folded()
        out = np.asarray(X, np.float32) @ weight.T + bias
        classes = self.coef_.shape[1]
        return 1.0 / (1.0 + np.exp(-np.clip(out[:, :classes], -30, 30))), out[:, classes:]

    def folded(self) -> tuple[np.ndarray, np.ndarray]:
        """One linear map on raw cell features: weight (C + 4, D) and bias (C + 4,)."""
        coef = np.concatenate([self.coef_, self.side_coef_], axis=1) / self.scale_[:, None]
        bias = np.concatenate([self.intercept_, self.side_mean_]) - self.mean_ @ coef
        return coef.T.astype(np.float32), bias.astype(np.float32)
