"""What "normal" is: a memory bank of good patches (greedy coreset), one Gaussian over them, or one
Gaussian per patch position (PaDiM)."""

from __future__ import annotations

import time

import numpy as np

#: patches the coreset search looks at, at most (a random sample of all good patches beyond that)
MAX_POOL = 40_000
#: dimensions the coreset search measures distances in (a random projection, as PatchCore does)
SEARCH_DIM = 32


def sample_pool(patches: np.ndarray, limit: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """At most ``limit`` rows of ``patches`` (N, D), drawn at random; (rows, whether any were left out)."""
    if len(patches) <= limit:
        return patches, False
    return patches[np.sort(rng.choice(len(patches), limit, replace=False))], True


def greedy_coreset(
    patches: np.ndarray, size: int, rng: np.random.Generator, *, deadline: float | None = None
) -> np.ndarray:
    """Indices of ``size`` rows chosen by greedy k-center: each next one is the row farthest from those chosen.

    Distances are measured after a random projection to :data:`SEARCH_DIM` dimensions. Stops early
    (fewer rows) at ``deadline`` (``time.monotonic()`` seconds).
    """
    n = len(patches)
    if size >= n:
        return np.arange(n)
    X = patches.astype(np.float32)
    if X.shape[1] > SEARCH_DIM:
        X = X @ (rng.standard_normal((X.shape[1], SEARCH_DIM)).astype(np.float32) / np.sqrt(SEARCH_DIM))
    squares = np.einsum("ij,ij->i", X, X)
    chosen = [int(rng.integers(n))]
    nearest = squares - 2 * (X @ X[chosen[0]]) + squares[chosen[0]]
    for step in range(1, size):
        nxt = int(np.argmax(nearest))
        chosen.append(nxt)
        np.minimum(nearest, squares - 2 * (X @ X[nxt]) + squares[nxt], out=nearest)
        if deadline is not None and step % 256 == 0 and time.monotonic() > deadline:
            break
    return np.array(chosen)


def fit_gaussian(patches: np.ndarray, shrink: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """(mean (D,), whitening matrix W (D, D)): ``|(x - mean) @ W|`` is the Mahalanobis distance.

    The covariance is shrunk towards its average variance (``shrink``), so a few photos still give an
    invertible one."""
    X = patches.astype(np.float64)
    mean = X.mean(axis=0)
    cov = np.cov(X - mean, rowvar=False)
    cov = (1 - shrink) * cov + shrink * np.trace(cov) / len(cov) * np.eye(len(cov))
    values, vectors = np.linalg.eigh(cov)
    values = np.maximum(values, 1e-6 * values.max())
    return mean.astype(np.float32), (vectors / np.sqrt(values)).astype(np.float32)


class PositionGaussian:
    """One Gaussian per patch position (PaDiM), fitted from batches of photos' patches (n, P, D), so
    memory stays at P * D * D whatever the number of photos.

    ``whitening(shrink)`` gives (mean (P, D), W (P, D, D)): ``|(x_p - mean_p) @ W_p|`` is patch p's
    Mahalanobis distance. Each covariance is shrunk towards its average variance (``shrink``): 200
    photos are few for a D x D covariance per position."""

    def __init__(self):
        self.count = 0
        self.sum: np.ndarray | None = None
        self.outer: np.ndarray | None = None

    def add(self, patches: np.ndarray) -> None:
        X = np.asarray(patches, np.float64)
        if self.sum is None:
            self.sum = np.zeros(X.shape[1:])
            self.outer = np.zeros((X.shape[1], X.shape[2], X.shape[2]))
        self.count += len(X)
        self.sum += X.sum(axis=0)
        by_position = X.transpose(1, 0, 2)  # (P, n, D)
        self.outer += by_position.transpose(0, 2, 1) @ by_position

    @classmethod
    def merged(cls, parts) -> PositionGaussian:
        """One Gaussian fitted on the photos of every one of ``parts`` (exactly: the sums add up)."""
        out = cls()
        for part in parts:
            if part.sum is None:
                continue
            out.count += part.count
            out.sum = part.sum.copy() if out.sum is None else out.sum + part.sum
            out.outer = part.outer.copy() if out.outer is None else out.outer + part.outer
        return out

    def whitening(self, shrink: float = 0.05, *, cholesky: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``cholesky``: W from the Cholesky factor of the covariance (cov = L L^T, W = L^-T), a tenth
        of the eigendecomposition's time and the same distances while the shrinkage keeps every
        eigenvalue above the floor the eigendecomposition applies (shrink > 1e-6 * D)."""
        if self.count < 2:
            raise ValueError("a Gaussian per position needs at least 2 photos")
        mean = self.sum / self.count
        cov = (self.outer - self.count * np.einsum("pi,pj->pij", mean, mean)) / (self.count - 1)
        dim = cov.shape[-1]
        average = np.trace(cov, axis1=1, axis2=2) / dim
        cov = (1 - shrink) * cov + shrink * average[:, None, None] * np.eye(dim)
        if cholesky:
            try:
                whiten = np.linalg.inv(np.linalg.cholesky(cov)).transpose(0, 2, 1)
                return mean.astype(np.float32), whiten.astype(np.float32)
            except np.linalg.LinAlgError:  # not positive definite after all: the eigenvalue floor below
                pass
        values, vectors = np.linalg.eigh(cov)
        values = np.maximum(values, 1e-6 * values.max(axis=1, keepdims=True))
        return mean.astype(np.float32), (vectors / np.sqrt(values)[:, None, :]).astype(np.float32)
