"""Optimisers of the heads: full-batch L-BFGS, Adam, and early stopping.

All work on one flat parameter vector; :class:`Packer` views it as the head's arrays.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["Objective", "Packer", "lbfgs", "Adam", "EarlyStopper", "one_blas_thread"]


def one_blas_thread():
    """Context: BLAS on one thread while heads are fitted. Their products are small, and OpenBLAS's
    thread pool makes them many times slower on a busy machine (a 200 x 1280 logistic fit: 0.12 s on
    one thread, 1.5 s on two, with other programs running), which also makes the ETA unpredictable."""
    import contextlib

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


Objective = Callable[[np.ndarray], "tuple[float, np.ndarray]"]


class Packer:
    """Views a flat parameter vector as a list of arrays of fixed shapes."""

    def __init__(self, shapes):
        self.shapes = [tuple(s) for s in shapes]
        sizes = [int(np.prod(s)) for s in self.shapes]
        self.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int)

    @property
    def size(self) -> int:
        """Length of the flat vector."""
        return int(self.bounds[-1])

    def unpack(self, theta):
        """The arrays, as views of ``theta``."""
        return [theta[a:b].reshape(s) for a, b, s in zip(self.bounds[:-1], self.bounds[1:], self.shapes)]

    def pack(self, arrays, dtype=None):
        """One flat vector of ``arrays``."""
        return np.concatenate([np.asarray(a, dtype=dtype).ravel() for a in arrays])


def _cubic_step(lo, hi):
    """Minimiser of the cubic through (a, f, dg) at lo and hi, safeguarded inside the interval."""
    (a0, f0, _, d0), (a1, f1, _, d1) = lo, hi
    width = a1 - a0
    with np.errstate(all="ignore"):
        t1 = d0 + d1 - 3.0 * (f0 - f1) / (a0 - a1)
        disc = t1 * t1 - d0 * d1
        if np.isfinite(disc) and disc >= 0:
            t2 = np.sign(a1 - a0) * np.sqrt(disc)
            a = a1 - (a1 - a0) * (d1 + t2 - t1) / (d1 - d0 + 2.0 * t2)
            lo_b, hi_b = sorted((a0 + 0.1 * width, a1 - 0.1 * width))
            if np.isfinite(a) and lo_b <= a <= hi_b:
                return float(a)
    return 0.5 * (a0 + a1)


def _wolfe_line_search(fun: Objective, x, f0, g0, d, c1=1e-4, c2=0.9, max_evals=30):
    """Strong-Wolfe line search (Nocedal & Wright, algorithms 3.5 and 3.6).

    Returns ``(step, f, g)``, or ``None`` when no step with sufficient decrease was found.
    """
    dg0 = float(g0 @ d)
    prev = (0.0, f0, g0, dg0)
    a = 1.0
    lo = hi = None
    for i in range(max_evals):
        f, g = fun(x + a * d)
        cur = (a, f, g, float(g @ d))
        if not np.isfinite(f) or f > f0 + c1 * a * dg0 or (i > 0 and f >= prev[1]):
            lo, hi = prev, cur
            break
        if abs(cur[3]) <= -c2 * dg0:
            return a, f, g
        if cur[3] >= 0:
            lo, hi = cur, prev
            break
        prev = cur
        a *= 2.0
    else:
        return prev[0], prev[1], prev[2]
    for _ in range(max_evals):
        a = _cubic_step(lo, hi)
        f, g = fun(x + a * d)
        cur = (a, f, g, float(g @ d))
        if not np.isfinite(f) or f > f0 + c1 * a * dg0 or f >= lo[1]:
            hi = cur
        else:
            if abs(cur[3]) <= -c2 * dg0:
                return a, f, g
            if cur[3] * (hi[0] - lo[0]) >= 0:
                hi = lo
            lo = cur
        if abs(hi[0] - lo[0]) <= 1e-12 * max(1.0, abs(lo[0])):
            break
    return (lo[0], lo[1], lo[2]) if lo[0] > 0 else None


def lbfgs(fun: Objective, x0, max_iter, tol, memory=10, callback=None):
    """Minimise ``fun(x) -> (f, grad)`` with L-BFGS (two-loop recursion, strong-Wolfe steps).

    Stops when the largest gradient entry is below ``tol``, when the relative decrease of
    ``f`` falls below ``tol * 1e-3``, after ``max_iter`` iterations, or when
    ``callback(x)`` returns True.  Returns ``(x, f, n_iter)``.
    """
    x = np.array(x0, dtype=float)
    f, g = fun(x)
    S: deque = deque(maxlen=memory)
    Y: deque = deque(maxlen=memory)
    it = 0
    for it in range(1, max_iter + 1):
        if np.max(np.abs(g)) <= tol:
            break
        q = g.copy()
        alphas = []
        for s, y in zip(reversed(S), reversed(Y)):
            a = (s @ q) / (s @ y)
            alphas.append(a)
            q -= a * y
        if S:
            q *= (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1])
        else:
            q /= max(1.0, float(np.linalg.norm(g)))
        for (s, y), a in zip(zip(S, Y), reversed(alphas)):
            q += s * (a - (y @ q) / (s @ y))
        d = -q
        if g @ d >= 0:  # not a descent direction: restart from steepest descent
            S.clear()
            Y.clear()
            d = -g / max(1.0, float(np.linalg.norm(g)))
        found = _wolfe_line_search(fun, x, f, g, d)
        if found is None:
            log.debug("L-BFGS line search failed at iteration %d", it)
            break
        step, f_new, g_new = found
        s, y = step * d, g_new - g
        if s @ y > 1e-10 * float(y @ y):
            S.append(s)
            Y.append(y)
        x = x + s
        decrease = (f - f_new) / max(abs(f), abs(f_new), 1.0)
        f, g = f_new, g_new
        if callback is not None and callback(x):
            break
        if decrease <= tol * 1e-3:
            break
    return x, f, it


class Adam:
    """Adam on a flat parameter vector."""

    def __init__(self, size, lr, beta1=0.9, beta2=0.999, eps=1e-8, dtype=float):
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.m = np.zeros(size, dtype=dtype)
        self.v = np.zeros(size, dtype=dtype)
        self.t = 0

    def step(self, theta, grad):
        """Update ``theta`` in place (bias correction folded into the step size)."""
        self.t += 1
        self.m *= self.beta1
        self.m += (1 - self.beta1) * grad
        self.v *= self.beta2
        self.v += (1 - self.beta2) * (grad * grad)
        lr_t = self.lr * np.sqrt(1 - self.beta2**self.t) / (1 - self.beta1**self.t)
        denom = np.sqrt(self.v)
        denom += self.eps * np.sqrt(1 - self.beta2**self.t)
        theta -= (lr_t * self.m / denom).astype(theta.dtype, copy=False)


class EarlyStopper:
    """Keeps the parameters with the lowest monitored loss; says when to stop."""

    def __init__(self, patience, tol):
        self.patience, self.tol = patience, tol
        self.best_loss = np.inf
        self.best_theta = None
        self.best_round = 0
        self.round = 0

    def update(self, loss, theta) -> bool:
        """Record one round; return True when training should stop."""
        self.round += 1
        if not np.isfinite(loss):
            return self.round - self.best_round >= self.patience
        if loss < self.best_loss:
            margin = self.tol * max(1.0, abs(self.best_loss)) if np.isfinite(self.best_loss) else 0.0
            if loss < self.best_loss - margin:  # a real improvement resets the patience
                self.best_round = self.round
            self.best_loss, self.best_theta = float(loss), theta.copy()
        return self.round - self.best_round >= self.patience
