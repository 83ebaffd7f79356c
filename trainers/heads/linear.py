"""Linear heads trained with full-batch L-BFGS: softmax (one label) and sigmoid (several labels)."""

from __future__ import annotations

import numpy as np

from modeldesk.trainers.heads.base import Head, SoftmaxHeadMixin, check_params, check_sample_weight, check_X
from modeldesk.trainers.heads.losses import sigmoid, sigmoid_loss_grad, softmax, softmax_loss_grad
from modeldesk.trainers.heads.optim import EarlyStopper, Objective, Packer, lbfgs

__all__ = ["LogisticRegressionHead", "SigmoidHead"]


class _LinearHead(Head):
    """A dense layer + link function trained with L-BFGS; subclasses pick the loss."""

    def _loss_grad(self, W, b, X, T, w, l2):
        raise NotImplementedError

    def _validate_params(self):
        check_params(self, positive=["max_iter", "tol", "patience"], nonnegative=["l2"])

    def _objective(self, Xs, T, w) -> tuple[Objective, Packer]:
        packer = Packer([(Xs.shape[1], T.shape[1]), (T.shape[1],)])

        def fun(theta):
            W, b = packer.unpack(theta)
            loss, grads = self._loss_grad(W, b, Xs, T, w, self.l2)
            return loss, packer.pack(grads)

        return fun, packer

    def _fit_linear(self, Xs, T, w, val):
        """Train on standardised ``Xs``, targets ``T`` and weights ``w`` (summing to 1 per column block)."""
        fun, packer = self._objective(Xs, T, w)
        theta = np.zeros(packer.size)
        stopper = EarlyStopper(self.patience, tol=0.0) if val is not None else None

        def val_loss(theta_):
            W, b = packer.unpack(theta_)
            return self._loss_grad(W, b, val[0], val[1], val[2], 0.0)[0]

        callback = (lambda th: stopper.update(val_loss(th), th)) if stopper else None
        theta, _, self.n_iter_ = lbfgs(fun, theta, self.max_iter, self.tol, callback=callback)
        if stopper is not None and stopper.best_theta is not None:
            if val_loss(theta) > stopper.best_loss:
                theta = stopper.best_theta
            self.best_val_loss_ = float(min(stopper.best_loss, val_loss(theta)))
        self.coef_, self.intercept_ = (a.copy() for a in packer.unpack(theta))

    def _layers(self):
        return [(self.coef_, self.intercept_)]


class LogisticRegressionHead(SoftmaxHeadMixin, _LinearHead):
    """Multinomial softmax regression on (standardised) features, fitted with L-BFGS.

    Parameters
    ----------
    l2 : float
        L2 penalty ``0.5 * l2 * ||W||^2`` added to the weighted mean cross-entropy.
    class_weight : None, "balanced" or dict {class: weight}
        "balanced" weighs each class by ``n_samples / (n_classes * count)``.
    max_iter : int
        L-BFGS iterations.
    tol : float
        Gradient tolerance (the relative loss decrease must also stay above ``tol * 1e-3``).
    standardize : bool
        Learn per-feature mean/std on the training set (folded into the export).
    patience : int
        Iterations without validation improvement before stopping (only with a validation set).

    Attributes
    ----------
    classes_, coef_ (D, C), intercept_ (C,), mean_, scale_, n_features_in_, n_iter_,
    class_weight_, best_val_loss_ (only when a validation set was given).

    Examples
    --------
        head = LogisticRegressionHead(l2=1e-3).fit(X_train, y_train, X_val, y_val)
        proba = head.predict_proba(X_test)
        nodes, inits = head.to_onnx("embedding", "probabilities", prefix="head/")
    """

    def __init__(self, l2=1e-3, class_weight=None, max_iter=500, tol=1e-5, standardize=True, patience=20):
        self.l2 = l2
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.patience = patience

    _loss_grad = staticmethod(softmax_loss_grad)

    def fit(self, X, y, X_val=None, y_val=None, sample_weight=None):
        """Fit on features X (N, D) and labels y (N,); early-stop on (X_val, y_val) if given."""
        self._validate_params()
        X, idx, w = self._prepare_targets(X, y, sample_weight)
        self._fit_scaler(X, check_sample_weight(sample_weight, X.shape[0]))
        self.n_features_in_ = X.shape[1]
        val = self._prepare_val(X_val, y_val)
        T = np.eye(len(self.classes_))[idx]
        self._fit_linear(self._transform(X), T, w / w.sum(), val)
        return self

    def _forward(self, Xs):
        return softmax(Xs @ self.coef_ + self.intercept_)

    def _loss_and_grad_fn(self, X, y, sample_weight=None):
        """(objective, n_params) of the training problem on X, y, for gradient checks."""
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
        self, l2=1e-3, class_weight=None, max_iter=500, tol=1e-5, standardize=True, patience=20, threshold=0.5
    ):
        self.l2 = l2
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.patience = patience
        self.threshold = threshold

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
            raise ValueError(
                f"SigmoidHead: class_weight must be None or 'balanced', got {self.class_weight!r}"
            )
        return sw[:, None] * cw / sw.sum()

    def fit(self, X, y, X_val=None, y_val=None, sample_weight=None):
        """Fit on features X (N, D) and a 0/1 label matrix y (N, C)."""
        self._validate_params()
        X = check_X(X)
        Y = self._check_Y(y, X.shape[0])
        sw = check_sample_weight(sample_weight, X.shape[0])
        self._fit_scaler(X, sw)
        self.n_features_in_ = X.shape[1]
        self.classes_ = np.arange(Y.shape[1])
        val = None
        if (X_val is None) != (y_val is None):
            raise ValueError("give both X_val and y_val, or neither")
        if X_val is not None:
            Xv = check_X(X_val, "X_val", n_features=self.n_features_in_)
            Yv = self._check_Y(y_val, Xv.shape[0], "y_val")
            if Yv.shape[1] != Y.shape[1]:
                raise ValueError(f"y_val has {Yv.shape[1]} labels, y has {Y.shape[1]}")
            val = (self._transform(Xv), Yv, self._weights(Yv, np.ones(Xv.shape[0])))
        self._fit_linear(self._transform(X), Y, self._weights(Y, sw), val)
        return self

    def _forward(self, Xs):
        return sigmoid(Xs @ self.coef_ + self.intercept_)

    def predict(self, X) -> np.ndarray:
        """0/1 matrix (N, C): probability >= threshold."""
        return (self.predict_proba(X) >= self.threshold).astype(np.int64)

    def _loss_and_grad_fn(self, X, y, sample_weight=None):
        """(objective, n_params) of the training problem on X, y, for gradient checks."""
        X = check_X(X)
        Y = self._check_Y(y, X.shape[0])
        sw = check_sample_weight(sample_weight, X.shape[0])
        self._fit_scaler(X, np.ones(X.shape[0]))
        fun, packer = self._objective(self._transform(X), Y, self._weights(Y, sw))
        return fun, packer.size
