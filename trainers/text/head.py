"""Multinomial logistic regression on sparse TF-IDF rows, optionally beside a dense block (embeddings).

Shaped like a scikit-learn estimator: parameters in ``__init__``, ``fit`` returns self, learned
attributes end in ``_``. ``C`` is scikit-learn's inverse regularisation strength, so figures carry
over: the objective is ``mean_i w_i CE_i + ||W||^2 / (2 C n)``, minimised by full-batch L-BFGS.
A fit can be bounded in time (``max_seconds``: the training budget is honoured on 60,000 texts as on
600) and started from the previous solution (``warm_start``, as scikit-learn's), which makes a search
over ``C`` or a refit on more texts take a fraction of the evaluations of a cold start.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from modeldesk.trainers.heads.losses import log_softmax, softmax
from modeldesk.trainers.heads.optim import lbfgs
from modeldesk.trainers.text.features import CSR


def one_blas_thread():
    """Context: BLAS on one thread. L-BFGS's many small vector products run 50x slower with
    OpenBLAS's thread pool on a busy machine (measured: 2 ms vs 40 us for a 52k dot product)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


class SparseLogisticRegression:
    """Softmax regression over ``X`` (a :class:`CSR`) and an optional dense block ``E``.

    Parameters
    ----------
    C : inverse L2 strength (larger: less regularised).
    dense_weight : the dense block is multiplied by this before the fit (its share of the features).
    class_weight : None or ``"balanced"``.
    max_iter, tol : L-BFGS limits.
    max_seconds : stop after this many seconds (the solution so far is kept); None: no limit.
    warm_start : start from the coefficients of the previous ``fit`` (same features and classes).

    Attributes
    ----------
    coef_, dense_coef_, intercept_, n_classes_ : the fitted model.
    n_iter_, n_evals_ : L-BFGS iterations and objective evaluations of the last fit.
    timed_out_ : True when the last fit stopped at ``max_seconds``.
    """

    def __init__(
        self,
        C: float = 10.0,
        dense_weight: float = 0.5,
        class_weight=None,
        max_iter: int = 300,
        tol: float = 1e-5,
        max_seconds: float | None = None,
        warm_start: bool = False,
    ):
        self.C = C
        self.dense_weight = dense_weight
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.max_seconds = max_seconds
        self.warm_start = warm_start

    def _weights(self, y, n_classes):
        counts = np.bincount(y, minlength=n_classes).astype(float)
        if self.class_weight == "balanced":
            per_class = len(y) / (n_classes * np.maximum(counts, 1))
            return per_class[y] / len(y)
        return np.full(len(y), 1.0 / len(y))

    def _start(self, d: int, e_dim: int, k: int) -> np.ndarray:
        if (
            self.warm_start
            and hasattr(self, "coef_")
            and self.coef_.shape == (d, k)
            and (0 if self.dense_coef_ is None else self.dense_coef_.shape[0]) == e_dim
        ):
            parts = [self.coef_.ravel()]
            if e_dim:
                parts.append((self.dense_coef_ / self.dense_weight).ravel())
            return np.concatenate(parts + [self.intercept_])
        return np.zeros((d + e_dim) * k + k)

    def fit(self, X: CSR, y, E: np.ndarray | None = None, n_classes: int | None = None, should_stop=None):
        """Fit on class indices ``y`` (0..C-1).

        ``should_stop()`` is polled after each iteration; when it returns True, InterruptedError is raised.
        """
        y = np.asarray(y, dtype=np.int64)
        k = int(n_classes or y.max() + 1)
        n, d = X.shape
        e_dim = 0 if E is None else E.shape[1]
        Ed = None if E is None else np.asarray(E, np.float64) * self.dense_weight
        T = np.eye(k)[y]
        w = self._weights(y, k)
        l2 = 1.0 / (self.C * n)

        evals = [0]

        def fun(theta):
            evals[0] += 1
            W, V, b = (
                theta[: d * k].reshape(d, k),
                theta[d * k : (d + e_dim) * k].reshape(e_dim, k),
                theta[-k:],
            )
            Z = X.dot(W) + b
            if Ed is not None:
                Z += Ed @ V
            logp = log_softmax(Z)
            loss = -float(np.sum(w * np.sum(T * logp, axis=1))) + 0.5 * l2 * (
                float(np.sum(W * W)) + float(np.sum(V * V))
            )
            G = (np.exp(logp) - T) * w[:, None]
            parts = [(X.tdot(G) + l2 * W).ravel()]
            if Ed is not None:
                parts.append((Ed.T @ G + l2 * V).ravel())
            parts.append(G.sum(axis=0))
            return loss, np.concatenate(parts)

        started = time.monotonic()
        timed_out = [False]

        def stop(_theta) -> bool:
            if should_stop is not None and should_stop():
                raise InterruptedError("stopped")
            timed_out[0] = self.max_seconds is not None and time.monotonic() - started > self.max_seconds
            return timed_out[0]

        with one_blas_thread():
            theta, _, self.n_iter_ = lbfgs(
                fun, self._start(d, e_dim, k), self.max_iter, self.tol, callback=stop
            )
        self.n_evals_, self.timed_out_ = evals[0], timed_out[0]
        self.coef_ = theta[: d * k].reshape(d, k)
        self.dense_coef_ = (
            theta[d * k : (d + e_dim) * k].reshape(e_dim, k) * self.dense_weight if e_dim else None
        )
        self.intercept_ = theta[-k:]
        self.n_classes_ = k
        return self

    def decision_function(self, X: CSR, E: np.ndarray | None = None) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise ValueError("this head is not fitted yet: call fit first")
        Z = X.dot(self.coef_) + self.intercept_
        if self.dense_coef_ is not None:
            if E is None:
                raise ValueError("this head was fitted with sentence embeddings: pass E")
            Z += np.asarray(E, np.float64) @ self.dense_coef_
        return Z

    def predict_proba(self, X: CSR, E: np.ndarray | None = None) -> np.ndarray:
        return softmax(self.decision_function(X, E))
