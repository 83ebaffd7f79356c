"""Small trainable heads on frozen backbone features (numpy only), exportable to ONNX.

Every head follows the scikit-learn estimator contract: ``__init__`` only stores its
keyword parameters, ``fit`` validates its input and returns ``self``, learned attributes
end in ``_`` and ``predict_proba`` refuses to run before ``fit``.  Feature
standardisation is part of the head and is folded into the exported weights, so
``to_onnx`` maps raw float32 features of shape (N, D) to probabilities of shape (N, C).

Heads
-----
LogisticRegressionHead
    Multinomial softmax regression, L-BFGS (full batch) or Adam (minibatches).
MLPHead
    One hidden ReLU layer with dropout, trained with Adam.
SigmoidHead
    One independent sigmoid per label, for multi-label data (y is an (N, C) 0/1 matrix).

Example
-------
>>> head = LogisticRegressionHead(l2=1e-3).fit(X_train, y_train, X_val, y_val)
>>> proba = head.predict_proba(X_test)
>>> nodes, inits = head.to_onnx("embedding", "probabilities", prefix="head/")
"""
from __future__ import annotations

import inspect
import logging
from collections import deque
from typing import Callable

import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

log = logging.getLogger(__name__)

__all__ = [
    "NotFittedError",
    "LogisticRegressionHead",
    "MLPHead",
    "SigmoidHead",
    "cross_val_score",
    "stratified_folds",
    "head_onnx_model",
    "softmax_loss_grad",
    "sigmoid_loss_grad",
    "mlp_loss_grad",
]

Objective = Callable[[np.ndarray], "tuple[float, np.ndarray]"]


class NotFittedError(ValueError, AttributeError):
    """Raised when a head is used before :meth:`fit` was called."""


# --------------------------------------------------------------------------- numerics


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # stable for any z


def softmax_loss_grad(W, b, X, T, w, l2):
    """Weighted softmax cross-entropy plus ``0.5 * l2 * ||W||^2`` and its gradient.

    Parameters
    ----------
    W, b : arrays (D, C) and (C,)
    X : array (N, D)
    T : array (N, C), one-hot (or soft) targets
    w : array (N,), per-sample weights; the data term is ``sum_i w_i * CE_i``
    l2 : float

    Returns
    -------
    loss, (dW, db)
    """
    Z = X @ W + b
    logp = _log_softmax(Z)
    loss = -float(np.sum(w * np.sum(T * logp, axis=1))) + 0.5 * l2 * float(np.sum(W * W))
    G = (np.exp(logp) * T.sum(axis=1, keepdims=True) - T) * w[:, None]
    return loss, (X.T @ G + l2 * W, G.sum(axis=0))


def sigmoid_loss_grad(W, b, X, T, w, l2):
    """Element-weighted binary cross-entropy per label plus L2, and its gradient.

    ``w`` has the shape of ``T`` (N, C): the data term is ``sum_ic w_ic * BCE_ic``.
    """
    Z = X @ W + b
    bce = np.logaddexp(0.0, Z) - T * Z
    loss = float(np.sum(w * bce)) + 0.5 * l2 * float(np.sum(W * W))
    G = (_sigmoid(Z) - T) * w
    return loss, (X.T @ G + l2 * W, G.sum(axis=0))


def mlp_loss_grad(W1, b1, W2, b2, X, T, w, l2, mask=None):
    """Weighted softmax cross-entropy of a one-hidden-layer ReLU network, and its gradient.

    ``mask`` (N, H), when given, multiplies the hidden activations (inverted dropout:
    entries are 0 or ``1 / (1 - p)``).  L2 applies to ``W1`` and ``W2``, not to biases.

    Returns
    -------
    loss, (dW1, db1, dW2, db2)
    """
    A = X @ W1 + b1
    H = np.maximum(A, 0)
    if mask is not None:
        H = H * mask
    Z = H @ W2 + b2
    logp = _log_softmax(Z)
    loss = -float(np.sum(w * np.sum(T * logp, axis=1)))
    loss += 0.5 * l2 * float(np.sum(W1 * W1) + np.sum(W2 * W2))
    G2 = (np.exp(logp) * T.sum(axis=1, keepdims=True) - T) * w[:, None]
    dH = G2 @ W2.T
    if mask is not None:
        dH *= mask
    dA = dH * (A > 0)
    return loss, (X.T @ dA + l2 * W1, dA.sum(axis=0), H.T @ G2 + l2 * W2, G2.sum(axis=0))


class _Packer:
    """Views a flat parameter vector as a list of arrays of fixed shapes."""

    def __init__(self, shapes):
        self.shapes = [tuple(s) for s in shapes]
        sizes = [int(np.prod(s)) for s in self.shapes]
        self.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int)

    @property
    def size(self) -> int:
        return int(self.bounds[-1])

    def unpack(self, theta):
        return [theta[a:b].reshape(s) for a, b, s in zip(self.bounds[:-1], self.bounds[1:], self.shapes)]

    def pack(self, arrays, dtype=None):
        return np.concatenate([np.asarray(a, dtype=dtype).ravel() for a in arrays])


# --------------------------------------------------------------------------- optimisers


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


def _lbfgs(fun: Objective, x0, max_iter, tol, memory=10, callback=None):
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


class _Adam:
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


class _EarlyStopper:
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


# --------------------------------------------------------------------------- validation


def _check_X(X, name="X", n_features=None) -> np.ndarray:
    X = np.asarray(X)
    if X.dtype == object or not np.issubdtype(X.dtype, np.number):
        raise ValueError(f"{name} must be numeric, got dtype {X.dtype}")
    X = X.astype(np.float64, copy=False)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError(f"{name} has no samples")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinity")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features, the head was fitted on {n_features}")
    return X


def _check_sample_weight(sample_weight, n) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n)
    sw = np.asarray(sample_weight, dtype=np.float64)
    if sw.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), got {sw.shape}")
    if not np.all(np.isfinite(sw)) or np.any(sw < 0) or sw.sum() <= 0:
        raise ValueError("sample_weight must be finite, non-negative and not all zero")
    return sw


def _check_params_positive(head, names):
    for name in names:
        value = getattr(head, name)
        if not (isinstance(value, (int, float, np.integer, np.floating)) and value > 0):
            raise ValueError(f"{type(head).__name__}: {name} must be a positive number, got {value!r}")


def _check_params_nonnegative(head, names):
    for name in names:
        value = getattr(head, name)
        if not (isinstance(value, (int, float, np.integer, np.floating)) and value >= 0):
            raise ValueError(f"{type(head).__name__}: {name} must be >= 0, got {value!r}")


# --------------------------------------------------------------------------- base class


class _Head:
    """Shared estimator plumbing: params, standardisation, fitted checks, ONNX export."""

    _activation = "Softmax"

    # -- sklearn-style parameter handling
    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict:
        """Return the constructor parameters as a dict."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters; returns self."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}")
            setattr(self, name, value)
        return self

    def __repr__(self):
        defaults = {k: p.default for k, p in inspect.signature(type(self).__init__).parameters.items()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if not _same(v, defaults.get(k))]
        return f"{type(self).__name__}({', '.join(changed)})"

    # -- fitted state
    def _check_is_fitted(self):
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet: call fit(X, y) before using it."
            )

    def _fit_scaler(self, X, sw):
        if self.standardize:
            mean = np.average(X, axis=0, weights=sw)
            std = np.sqrt(np.average((X - mean) ** 2, axis=0, weights=sw))
            self.mean_ = mean
            self.scale_ = np.where(std > 1e-8 * np.maximum(1.0, np.abs(mean)), std, 1.0)
        else:
            self.mean_ = np.zeros(X.shape[1])
            self.scale_ = np.ones(X.shape[1])

    def _transform(self, X, dtype=np.float64):
        return ((X - self.mean_) / self.scale_).astype(dtype, copy=False)

    def predict_proba(self, X) -> np.ndarray:
        """Class (or per-label) probabilities, shape (N, C), float64."""
        self._check_is_fitted()
        X = _check_X(X, n_features=self.n_features_in_)
        return self._forward(self._transform(X))

    # -- export
    def _folded_layers(self):
        """Dense layers ``[(W, b), ...]`` with standardisation folded into the first one."""
        layers = [(np.asarray(W, np.float64), np.asarray(b, np.float64)) for W, b in self._layers()]
        W, b = layers[0]
        layers[0] = (W / self.scale_[:, None], b - (self.mean_ / self.scale_) @ W)
        return layers

    def to_onnx(self, input_name: str, output_name: str, prefix: str):
        """ONNX nodes and initializers mapping float32 (N, D) ``input_name`` to (N, C) probabilities.

        Parameters
        ----------
        input_name : name of an existing float32 tensor of shape (N, D) in the target graph
        output_name : name given to the probabilities tensor
        prefix : prepended to every node, initializer and intermediate tensor name

        Returns
        -------
        (nodes, initializers) : lists of ``onnx.NodeProto`` and ``onnx.TensorProto``
        """
        self._check_is_fitted()
        nodes: list[NodeProto] = []
        inits: list[TensorProto] = []
        current = input_name
        layers = self._folded_layers()
        for i, (W, b) in enumerate(layers):
            w_name, b_name = f"{prefix}dense{i}_W", f"{prefix}dense{i}_b"
            inits.append(numpy_helper.from_array(W.astype(np.float32), w_name))
            inits.append(numpy_helper.from_array(b.astype(np.float32), b_name))
            mm, out = f"{prefix}dense{i}_matmul", f"{prefix}dense{i}_out"
            nodes.append(helper.make_node("MatMul", [current, w_name], [mm], name=f"{prefix}dense{i}/MatMul"))
            nodes.append(helper.make_node("Add", [mm, b_name], [out], name=f"{prefix}dense{i}/Add"))
            current = out
            if i < len(layers) - 1:
                relu = f"{prefix}dense{i}_relu"
                nodes.append(helper.make_node("Relu", [current], [relu], name=f"{prefix}dense{i}/Relu"))
                current = relu
        if self._activation == "Softmax":
            nodes.append(helper.make_node("Softmax", [current], [output_name], name=f"{prefix}Softmax", axis=-1))
        else:
            nodes.append(helper.make_node("Sigmoid", [current], [output_name], name=f"{prefix}Sigmoid"))
        return nodes, inits


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except (TypeError, ValueError):
        return a is b


def _class_weight_vector(class_weight, classes, counts_w, name) -> np.ndarray:
    """Per-class weights aligned with ``classes`` (``counts_w``: weighted class counts)."""
    if class_weight is None:
        return np.ones(len(classes))
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"{name}: class_weight must be None, 'balanced' or a dict, got {class_weight!r}")
        return counts_w.sum() / (len(classes) * np.maximum(counts_w, 1e-12))
    if isinstance(class_weight, dict):
        unknown = set(class_weight) - set(classes.tolist())
        if unknown:
            raise ValueError(f"{name}: class_weight names classes not in y: {sorted(map(str, unknown))}")
        return np.array([float(class_weight.get(c, 1.0)) for c in classes.tolist()])
    raise ValueError(f"{name}: class_weight must be None, 'balanced' or a dict, got {class_weight!r}")


class _SoftmaxHeadMixin:
    """Label encoding and weighting shared by the single-label (softmax) heads."""

    def _prepare_targets(self, X, y, sample_weight):
        X = _check_X(X)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be 1-D with {X.shape[0]} entries, got shape {y.shape}")
        sw = _check_sample_weight(sample_weight, X.shape[0])
        classes, idx = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"y needs at least 2 classes to train a classifier, got {classes.tolist()}")
        counts_w = np.bincount(idx, weights=sw, minlength=len(classes))
        cw = _class_weight_vector(self.class_weight, classes, counts_w, type(self).__name__)
        self.classes_ = classes
        self.class_weight_ = cw
        return X, idx, sw * cw[idx]

    def _prepare_val(self, X_val, y_val):
        if (X_val is None) != (y_val is None):
            raise ValueError("give both X_val and y_val, or neither")
        if X_val is None:
            return None
        Xv = _check_X(X_val, "X_val", n_features=self.n_features_in_)
        yv = np.asarray(y_val)
        if yv.ndim != 1 or yv.shape[0] != Xv.shape[0]:
            raise ValueError(f"y_val must be 1-D with {Xv.shape[0]} entries, got shape {yv.shape}")
        pos = np.searchsorted(self.classes_, yv)
        pos = np.clip(pos, 0, len(self.classes_) - 1)
        bad = self.classes_[pos] != yv
        if np.any(bad):
            raise ValueError(f"y_val has classes not seen in y: {sorted(map(str, set(yv[bad].tolist())))}")
        wv = self.class_weight_[pos]
        return self._transform(Xv), np.eye(len(self.classes_))[pos], wv / wv.sum()

    def predict(self, X) -> np.ndarray:
        """Most probable class for each row of X."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


# --------------------------------------------------------------------------- linear heads


class _LinearHead(_Head):
    """A dense layer + link function trained with L-BFGS or Adam; subclasses pick the loss."""

    def _loss_grad(self, W, b, X, T, w, l2):
        raise NotImplementedError

    def _validate_params(self):
        if self.solver not in ("lbfgs", "adam"):
            raise ValueError(f"{type(self).__name__}: solver must be 'lbfgs' or 'adam', got {self.solver!r}")
        _check_params_positive(self, ["max_iter", "tol", "lr", "batch_size", "patience"])
        _check_params_nonnegative(self, ["l2"])

    def _objective(self, Xs, T, w) -> tuple[Objective, _Packer]:
        packer = _Packer([(Xs.shape[1], T.shape[1]), (T.shape[1],)])

        def fun(theta):
            W, b = packer.unpack(theta)
            loss, grads = self._loss_grad(W, b, Xs, T, w, self.l2)
            return loss, packer.pack(grads)

        return fun, packer

    def _fit_linear(self, Xs, T, w, val):
        """Train on standardised ``Xs``, targets ``T`` and weights ``w`` (sum of a row block = 1)."""
        fun, packer = self._objective(Xs, T, w)
        theta = np.zeros(packer.size)
        stopper = _EarlyStopper(self.patience, tol=0.0) if val is not None else None

        def val_loss(theta_):
            W, b = packer.unpack(theta_)
            return self._loss_grad(W, b, val[0], val[1], val[2], 0.0)[0]

        if self.solver == "lbfgs":
            callback = (lambda th: stopper.update(val_loss(th), th)) if stopper else None
            theta, _, self.n_iter_ = _lbfgs(fun, theta, self.max_iter, self.tol, callback=callback)
        else:
            theta, self.n_iter_ = self._adam(Xs, T, w, packer, theta, stopper, val_loss)
        if stopper is not None and stopper.best_theta is not None:
            if val_loss(theta) > stopper.best_loss:
                theta = stopper.best_theta
            self.best_val_loss_ = float(min(stopper.best_loss, val_loss(theta)))
        self.coef_, self.intercept_ = (a.copy() for a in packer.unpack(theta))

    def _adam(self, Xs, T, w, packer, theta, stopper, val_loss):
        rng = np.random.default_rng(self.random_state)
        n = Xs.shape[0]
        bs = int(min(self.batch_size, n))
        opt = _Adam(packer.size, self.lr)
        train_stop = _EarlyStopper(self.patience, tol=self.tol)
        epoch = 0
        for epoch in range(1, int(self.max_iter) + 1):
            order = rng.permutation(n)
            total = 0.0
            for start in range(0, n, bs):
                batch = order[start : start + bs]
                wb = w[batch] * (n / len(batch))
                W, b = packer.unpack(theta)
                loss, grads = self._loss_grad(W, b, Xs[batch], T[batch], wb, self.l2)
                total += loss * len(batch) / n
                opt.step(theta, packer.pack(grads))
            if stopper is not None:
                if stopper.update(val_loss(theta), theta):
                    break
            elif train_stop.update(total, theta):
                break
        return theta, epoch

    def _layers(self):
        return [(self.coef_, self.intercept_)]


class LogisticRegressionHead(_SoftmaxHeadMixin, _LinearHead):
    """Multinomial softmax regression on (standardised) features.

    Parameters
    ----------
    l2 : float
        L2 penalty ``0.5 * l2 * ||W||^2`` added to the weighted mean cross-entropy.
    solver : {"lbfgs", "adam"}
        Full-batch L-BFGS (deterministic, best for up to ~100k samples) or minibatch Adam.
    class_weight : None, "balanced" or dict {class: weight}
        "balanced" weighs each class by ``n_samples / (n_classes * count)``.
    max_iter : int
        L-BFGS iterations, or Adam epochs.
    tol : float
        L-BFGS: gradient tolerance; Adam: relative training-loss improvement.
    standardize : bool
        Learn per-feature mean/std on the training set (folded into the export).
    lr, batch_size : Adam step size and minibatch size.
    patience : int
        Rounds (iterations or epochs) without validation improvement before stopping.
    random_state : int
        Seed for Adam's shuffling (L-BFGS is deterministic).

    Attributes
    ----------
    classes_, coef_ (D, C), intercept_ (C,), mean_, scale_, n_features_in_, n_iter_,
    class_weight_, best_val_loss_ (only when a validation set was given).
    """

    def __init__(
        self,
        l2=1e-3,
        solver="lbfgs",
        class_weight=None,
        max_iter=500,
        tol=1e-5,
        standardize=True,
        lr=1e-2,
        batch_size=256,
        patience=20,
        random_state=0,
    ):
        self.l2 = l2
        self.solver = solver
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.lr = lr
        self.batch_size = batch_size
        self.patience = patience
        self.random_state = random_state

    _loss_grad = staticmethod(softmax_loss_grad)

    def fit(self, X, y, X_val=None, y_val=None, sample_weight=None):
        """Fit on features X (N, D) and labels y (N,); early-stop on (X_val, y_val) if given."""
        self._validate_params()
        X, idx, w = self._prepare_targets(X, y, sample_weight)
        self._fit_scaler(X, _check_sample_weight(sample_weight, X.shape[0]))
        self.n_features_in_ = X.shape[1]
        val = self._prepare_val(X_val, y_val)
        T = np.eye(len(self.classes_))[idx]
        self._fit_linear(self._transform(X), T, w / w.sum(), val)
        return self

    def _forward(self, Xs):
        return _softmax(Xs @ self.coef_ + self.intercept_)

    def _loss_and_grad_fn(self, X, y, sample_weight=None):
        """(objective, theta0) of the training problem on X, y, for gradient checks."""
        X, idx, w = self._prepare_targets(X, y, sample_weight)
        self._fit_scaler(X, np.ones(X.shape[0]))
        fun, packer = self._objective(self._transform(X), np.eye(len(self.classes_))[idx], w / w.sum())
        return fun, packer.size


class SigmoidHead(_LinearHead):
    """Independent sigmoid per label for multi-label data; y is an (N, C) 0/1 matrix.

    Parameters are those of :class:`LogisticRegressionHead`; ``class_weight="balanced"``
    weighs, per label, positives by ``N / (2 * n_pos)`` and negatives by ``N / (2 * n_neg)``.
    ``threshold`` is used by :meth:`predict`.

    Attributes
    ----------
    classes_ (label indices 0..C-1), coef_ (D, C), intercept_ (C,), mean_, scale_,
    n_features_in_, n_iter_, best_val_loss_ (only with a validation set).
    """

    _activation = "Sigmoid"

    def __init__(
        self,
        l2=1e-3,
        solver="lbfgs",
        class_weight=None,
        max_iter=500,
        tol=1e-5,
        standardize=True,
        lr=1e-2,
        batch_size=256,
        patience=20,
        threshold=0.5,
        random_state=0,
    ):
        self.l2 = l2
        self.solver = solver
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.lr = lr
        self.batch_size = batch_size
        self.patience = patience
        self.threshold = threshold
        self.random_state = random_state

    _loss_grad = staticmethod(sigmoid_loss_grad)

    @staticmethod
    def _check_Y(Y, n, name="y"):
        Y = np.asarray(Y)
        if Y.ndim != 2 or Y.shape[0] != n:
            raise ValueError(f"{name} must be an ({n}, n_labels) 0/1 matrix, got shape {Y.shape}")
        if not np.all((Y == 0) | (Y == 1)):
            raise ValueError(f"{name} must contain only 0 and 1")
        return Y.astype(np.float64)

    def _weights(self, Y, sw):
        """Element weights (N, C) with per-label class balancing."""
        if self.class_weight is None:
            cw = np.ones_like(Y)
        elif self.class_weight == "balanced":
            total = sw.sum()
            pos = (sw[:, None] * Y).sum(axis=0)
            neg = total - pos
            w_pos = total / (2.0 * np.maximum(pos, 1e-12))
            w_neg = total / (2.0 * np.maximum(neg, 1e-12))
            cw = np.where(Y > 0, w_pos, w_neg)
        else:
            raise ValueError(f"SigmoidHead: class_weight must be None or 'balanced', got {self.class_weight!r}")
        return sw[:, None] * cw / sw.sum()

    def fit(self, X, y, X_val=None, y_val=None, sample_weight=None):
        """Fit on features X (N, D) and a 0/1 label matrix y (N, C)."""
        self._validate_params()
        X = _check_X(X)
        Y = self._check_Y(y, X.shape[0])
        sw = _check_sample_weight(sample_weight, X.shape[0])
        self._fit_scaler(X, sw)
        self.n_features_in_ = X.shape[1]
        self.classes_ = np.arange(Y.shape[1])
        val = None
        if (X_val is None) != (y_val is None):
            raise ValueError("give both X_val and y_val, or neither")
        if X_val is not None:
            Xv = _check_X(X_val, "X_val", n_features=self.n_features_in_)
            Yv = self._check_Y(y_val, Xv.shape[0], "y_val")
            if Yv.shape[1] != Y.shape[1]:
                raise ValueError(f"y_val has {Yv.shape[1]} labels, y has {Y.shape[1]}")
            val = (self._transform(Xv), Yv, self._weights(Yv, np.ones(Xv.shape[0])))
        self._fit_linear(self._transform(X), Y, self._weights(Y, sw), val)
        return self

    def _forward(self, Xs):
        return _sigmoid(Xs @ self.coef_ + self.intercept_)

    def predict(self, X) -> np.ndarray:
        """0/1 matrix (N, C): probability >= threshold."""
        return (self.predict_proba(X) >= self.threshold).astype(np.int64)

    def _loss_and_grad_fn(self, X, y, sample_weight=None):
        """(objective, n_params) of the training problem on X, y, for gradient checks."""
        X = _check_X(X)
        Y = self._check_Y(y, X.shape[0])
        sw = _check_sample_weight(sample_weight, X.shape[0])
        self._fit_scaler(X, np.ones(X.shape[0]))
        fun, packer = self._objective(self._transform(X), Y, self._weights(Y, sw))
        return fun, packer.size


# --------------------------------------------------------------------------- MLP head


class MLPHead(_SoftmaxHeadMixin, _Head):
    """One hidden ReLU layer with dropout and a softmax output, trained with Adam.

    Parameters
    ----------
    hidden : int, hidden units.
    l2 : float, penalty ``0.5 * l2 * (||W1||^2 + ||W2||^2)``.
    dropout : float in [0, 1), dropout rate on the hidden layer during training.
    lr, epochs, batch_size : Adam settings.
    class_weight : None, "balanced" or dict {class: weight}.
    patience : int, epochs without improvement (validation loss when given, else
        training loss by more than ``tol``) before stopping; the best weights are kept.
    tol : float, relative improvement that counts.
    standardize : bool, learn per-feature mean/std (folded into the export).
    random_state : int, seeds initialisation, shuffling and dropout.

    Attributes
    ----------
    classes_, W1_ (D, H), b1_, W2_ (H, C), b2_, mean_, scale_, n_features_in_, n_iter_,
    class_weight_, best_val_loss_ (only with a validation set).
    """

    def __init__(
        self,
        hidden=256,
        l2=1e-4,
        dropout=0.2,
        lr=1e-3,
        epochs=100,
        batch_size=128,
        class_weight=None,
        patience=10,
        tol=1e-4,
        standardize=True,
        random_state=0,
    ):
        self.hidden = hidden
        self.l2 = l2
        self.dropout = dropout
        self.lr = lr
        self.epochs = epochs
        self.batch_size = batch_size
        self.class_weight = class_weight
        self.patience = patience
        self.tol = tol
        self.standardize = standardize
        self.random_state = random_state

    def _validate_params(self):
        _check_params_positive(self, ["hidden", "lr", "epochs", "batch_size", "patience"])
        _check_params_nonnegative(self, ["l2", "tol"])
        if not (isinstance(self.dropout, (int, float)) and 0 <= self.dropout < 1):
            raise ValueError(f"MLPHead: dropout must be in [0, 1), got {self.dropout!r}")

    def _packer(self, d, c):
        h = int(self.hidden)
        return _Packer([(d, h), (h,), (h, c), (c,)])

    def _init_theta(self, packer, rng, dtype):
        (d, h), _, _, (c,) = packer.shapes
        W1 = rng.normal(0.0, np.sqrt(2.0 / d), size=(d, h))
        W2 = rng.normal(0.0, np.sqrt(1.0 / h), size=(h, c))
        return packer.pack([W1, np.zeros(h), W2, np.zeros(c)], dtype=dtype)

    def _objective(self, Xs, T, w, packer, mask=None) -> Objective:
        def fun(theta):
            loss, grads = mlp_loss_grad(*packer.unpack(theta), Xs, T, w, self.l2, mask)
            return loss, packer.pack(grads, dtype=theta.dtype)

        return fun

    def fit(self, X, y, X_val=None, y_val=None, sample_weight=None):
        """Fit on features X (N, D) and labels y (N,); early-stop on (X_val, y_val) if given."""
        self._validate_params()
        X, idx, w = self._prepare_targets(X, y, sample_weight)
        self._fit_scaler(X, _check_sample_weight(sample_weight, X.shape[0]))
        self.n_features_in_ = X.shape[1]
        val = self._prepare_val(X_val, y_val)
        dtype = np.float32  # twice the speed of float64; plenty for SGD
        Xs = self._transform(X, dtype)
        n, c = X.shape[0], len(self.classes_)
        T = np.eye(c, dtype=dtype)[idx]
        w = (w / w.sum()).astype(dtype)
        packer = self._packer(X.shape[1], c)
        rng = np.random.default_rng(self.random_state)
        theta = self._init_theta(packer, rng, dtype)
        opt = _Adam(packer.size, self.lr, dtype=dtype)
        if val is not None:
            val = tuple(a.astype(dtype) for a in val)
            stopper = _EarlyStopper(int(self.patience), tol=0.0)
        else:
            stopper = _EarlyStopper(int(self.patience), tol=float(self.tol))
        bs = int(min(self.batch_size, n))
        keep = 1.0 - float(self.dropout)
        epoch = 0
        for epoch in range(1, int(self.epochs) + 1):
            order = rng.permutation(n)
            total = 0.0
            for start in range(0, n, bs):
                batch = order[start : start + bs]
                mask = None
                if self.dropout > 0:
                    mask = (rng.random((len(batch), int(self.hidden))) < keep).astype(dtype) / dtype(keep)
                wb = w[batch] * dtype(n / len(batch))
                loss, grads = mlp_loss_grad(*packer.unpack(theta), Xs[batch], T[batch], wb, self.l2, mask)
                total += loss * len(batch) / n
                opt.step(theta, packer.pack(grads, dtype=dtype))
            if not np.isfinite(total):
                raise FloatingPointError("MLPHead diverged (loss is not finite): lower lr")
            monitored = total if val is None else mlp_loss_grad(*packer.unpack(theta), *val, 0.0)[0]
            if stopper.update(monitored, theta):
                break
        if stopper.best_theta is not None:
            theta = stopper.best_theta
        if val is not None:
            self.best_val_loss_ = float(stopper.best_loss)
        self.n_iter_ = epoch
        self.W1_, self.b1_, self.W2_, self.b2_ = (a.astype(np.float64) for a in packer.unpack(theta))
        return self

    def _forward(self, Xs):
        H = np.maximum(Xs @ self.W1_ + self.b1_, 0)
        return _softmax(H @ self.W2_ + self.b2_)

    def _layers(self):
        return [(self.W1_, self.b1_), (self.W2_, self.b2_)]

    def _loss_and_grad_fn(self, X, y, sample_weight=None):
        """(objective, n_params) of the training problem (without dropout), for gradient checks."""
        X, idx, w = self._prepare_targets(X, y, sample_weight)
        self._fit_scaler(X, np.ones(X.shape[0]))
        packer = self._packer(X.shape[1], len(self.classes_))
        fun = self._objective(self._transform(X), np.eye(len(self.classes_))[idx], w / w.sum(), packer)
        return fun, packer.size


# --------------------------------------------------------------------------- helpers


def head_onnx_model(head, input_name="features", output_name="probabilities", opset=17):
    """A standalone ONNX model of a fitted head: float32 (N, D) -> (N, C) probabilities."""
    nodes, inits = head.to_onnx(input_name, output_name, prefix="head/")
    n_out = len(head.classes_)
    graph = helper.make_graph(
        nodes,
        "head",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, ["N", head.n_features_in_])],
        [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["N", n_out])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def stratified_folds(y, folds=3, random_state=0):
    """Index pairs ``[(train, test), ...]``: each class is spread evenly over the folds.

    For a 2-D (multi-label) ``y`` the folds are a plain shuffled split.
    """
    y = np.asarray(y)
    folds = int(folds)
    if folds < 2 or folds > len(y):
        raise ValueError(f"folds must be between 2 and the number of samples ({len(y)}), got {folds}")
    rng = np.random.default_rng(random_state)
    assign = np.empty(len(y), dtype=int)
    if y.ndim == 1:
        offset = 0
        for cls in np.unique(y):
            members = rng.permutation(np.flatnonzero(y == cls))
            assign[members] = (np.arange(len(members)) + offset) % folds
            offset += len(members)  # keep fold sizes balanced across classes
    else:
        assign[rng.permutation(len(y))] = np.arange(len(y)) % folds
    return [(np.flatnonzero(assign != k), np.flatnonzero(assign == k)) for k in range(folds)]


def cross_val_score(make_head, X, y, folds=3, random_state=0, scoring="accuracy"):
    """Score a head configuration with stratified k-fold cross-validation.

    Parameters
    ----------
    make_head : callable returning a new unfitted head, e.g. ``lambda: MLPHead(hidden=128)``
    X : (N, D) features; y : (N,) labels or (N, C) 0/1 matrix for :class:`SigmoidHead`
    scoring : "accuracy" (for multi-label: mean per-label accuracy at the head's
        threshold) or "neg_log_loss" (higher is better)

    Returns
    -------
    numpy array of one score per fold
    """
    if scoring not in ("accuracy", "neg_log_loss"):
        raise ValueError(f"scoring must be 'accuracy' or 'neg_log_loss', got {scoring!r}")
    X = _check_X(X)
    y = np.asarray(y)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows, y has {y.shape[0]}")
    scores = []
    for train, test in stratified_folds(y, folds, random_state):
        head = make_head().fit(X[train], y[train])
        proba = head.predict_proba(X[test])
        if y.ndim == 2:
            if scoring == "accuracy":
                scores.append(float(np.mean(head.predict(X[test]) == y[test])))
            else:
                p = np.clip(proba, 1e-15, 1 - 1e-15)
                scores.append(float(np.mean(y[test] * np.log(p) + (1 - y[test]) * np.log(1 - p))))
            continue
        if scoring == "accuracy":
            scores.append(float(np.mean(head.predict(X[test]) == y[test])))
        else:
            col = {c: i for i, c in enumerate(head.classes_.tolist())}
            p_true = np.array([proba[i, col[c]] if c in col else 0.0 for i, c in enumerate(y[test].tolist())])
            scores.append(float(np.mean(np.log(np.clip(p_true, 1e-15, 1.0)))))
    return np.array(scores)
