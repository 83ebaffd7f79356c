"""What every head shares: input validation, sklearn-style parameters, standardisation, export.

Every head follows the scikit-learn estimator contract: ``__init__`` only stores its keyword
parameters, ``fit`` validates its input and returns ``self``, learned attributes end in ``_``
and ``predict_proba`` refuses to run before ``fit``.  Feature standardisation is part of the
head and is folded into the exported weights, so ``to_onnx`` maps raw float32 features of
shape (N, D) to probabilities of shape (N, C).
"""

from __future__ import annotations

import inspect

import numpy as np

from modeldesk.trainers.heads.export import dense_onnx_nodes

__all__ = ["NotFittedError", "Head", "SoftmaxHeadMixin", "check_X", "check_sample_weight"]


class NotFittedError(ValueError, AttributeError):
    """Raised when a head is used before :meth:`fit` was called."""


def check_X(X, name="X", n_features=None) -> np.ndarray:
    """``X`` as a finite float64 (N, D) array with at least one row, else ValueError."""
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


def check_sample_weight(sample_weight, n) -> np.ndarray:
    """Per-sample weights of shape (n,) (ones when None); finite, non-negative, not all zero."""
    if sample_weight is None:
        return np.ones(n)
    sw = np.asarray(sample_weight, dtype=np.float64)
    if sw.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), got {sw.shape}")
    if not np.all(np.isfinite(sw)) or np.any(sw < 0) or sw.sum() <= 0:
        raise ValueError("sample_weight must be finite, non-negative and not all zero")
    return sw


def check_params(head, positive=(), nonnegative=()):
    """ValueError naming the first parameter of ``head`` that is not a positive (non-negative) number."""
    number = (int, float, np.integer, np.floating)
    for names, ok, what in (
        (positive, lambda v: v > 0, "a positive number"),
        (nonnegative, lambda v: v >= 0, ">= 0"),
    ):
        for name in names:
            value = getattr(head, name)
            if not (isinstance(value, number) and ok(value)):
                raise ValueError(f"{type(head).__name__}: {name} must be {what}, got {value!r}")


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except (TypeError, ValueError):
        return a is b


class Head:
    """Shared estimator plumbing: params, standardisation, fitted checks, ONNX export.

    Subclasses define ``_forward(Xs)`` on standardised features and ``_layers()``, the dense
    layers [(W, b), ...] of the fitted head; ``_activation`` names the output link.
    """

    _activation = "Softmax"

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
            scale = np.where(std > 1e-8 * np.maximum(1.0, np.abs(mean)), std, 1.0)
            # A feature that barely varies in training must not be blown up a thousandfold on a new
            # input where it does vary: no scale below a tenth of the typical one.
            self.scale_ = np.maximum(scale, 0.1 * np.median(scale))
        else:
            self.mean_ = np.zeros(X.shape[1])
            self.scale_ = np.ones(X.shape[1])

    def _transform(self, X, dtype=np.float64):
        return ((X - self.mean_) / self.scale_).astype(dtype, copy=False)

    def predict_proba(self, X) -> np.ndarray:
        """Class (or per-label) probabilities, shape (N, C), float64."""
        self._check_is_fitted()
        X = check_X(X, n_features=self.n_features_in_)
        return self._forward(self._transform(X))

    def _folded_layers(self):
        """Dense layers ``[(W, b), ...]`` with standardisation folded into the first one."""
        layers = [(np.asarray(W, np.float64), np.asarray(b, np.float64)) for W, b in self._layers()]
        W, b = layers[0]
        layers[0] = (W / self.scale_[:, None], b - (self.mean_ / self.scale_) @ W)
        return layers

    def to_onnx(self, input_name: str, output_name: str, prefix: str):
        """ONNX nodes and initializers mapping float32 (N, D) ``input_name`` to (N, C) probabilities.

        See :func:`modeldesk.trainers.heads.export.dense_onnx_nodes` for the parameters.
        """
        self._check_is_fitted()
        return dense_onnx_nodes(self._folded_layers(), self._activation, input_name, output_name, prefix)


def class_weight_vector(class_weight, classes, counts_w, name) -> np.ndarray:
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


class SoftmaxHeadMixin:
    """Label encoding and weighting shared by the single-label (softmax) heads."""

    def _prepare_targets(self, X, y, sample_weight):
        X = check_X(X)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be 1-D with {X.shape[0]} entries, got shape {y.shape}")
        sw = check_sample_weight(sample_weight, X.shape[0])
        classes, idx = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"y needs at least 2 classes to train a classifier, got {classes.tolist()}")
        counts_w = np.bincount(idx, weights=sw, minlength=len(classes))
        cw = class_weight_vector(self.class_weight, classes, counts_w, type(self).__name__)
        self.classes_ = classes
        self.class_weight_ = cw
        return X, idx, sw * cw[idx]

    def _prepare_val(self, X_val, y_val):
        if (X_val is None) != (y_val is None):
            raise ValueError("give both X_val and y_val, or neither")
        if X_val is None:
            return None
        Xv = check_X(X_val, "X_val", n_features=self.n_features_in_)
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
