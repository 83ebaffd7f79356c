"""A one-hidden-layer ReLU network with dropout and a softmax output, trained with Adam."""

from __future__ import annotations

import numpy as np

from modeldesk.trainers.heads.base import Head, SoftmaxHeadMixin, check_params, check_sample_weight
from modeldesk.trainers.heads.losses import mlp_loss_grad, softmax
from modeldesk.trainers.heads.optim import Adam, EarlyStopper, Objective, Packer

__all__ = ["MLPHead"]


class MLPHead(SoftmaxHeadMixin, Head):
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
        check_params(
            self, positive=["hidden", "lr", "epochs", "batch_size", "patience"], nonnegative=["l2", "tol"]
        )
        if not (isinstance(self.dropout, (int, float)) and 0 <= self.dropout < 1):
            raise ValueError(f"MLPHead: dropout must be in [0, 1), got {self.dropout!r}")

    def _packer(self, d, c):
        h = int(self.hidden)
        return Packer([(d, h), (h,), (h, c), (c,)])

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
        self._fit_scaler(X, check_sample_weight(sample_weight, X.shape[0]))
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
        opt = Adam(packer.size, self.lr, dtype=dtype)
        if val is not None:
            val = tuple(a.astype(dtype) for a in val)
            stopper = EarlyStopper(int(self.patience), tol=0.0)
        else:
            stopper = EarlyStopper(int(self.patience), tol=float(self.tol))
        bs = int(min(self.batch_size, n))
        keep = 1.0 - float(self.dropout)
        epoch = 0
        for epoch in range(1, int(self.epochs) + 1):  # noqa: B007 (read after the loop)
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
        return softmax(H @ self.W2_ + self.b2_)

    def _layers(self):
        return [(self.W1_, self.b1_), (self.W2_, self.b2_)]

    def _loss_and_grad_fn(self, X, y, sample_weight=None):
        """(objective, n_params) of the training problem (without dropout), for gradient checks."""
        X, idx, w = self._prepare_targets(X, y, sample_weight)
        self._fit_scaler(X, np.ones(X.shape[0]))
        packer = self._packer(X.shape[1], len(self.classes_))
        fun = self._objective(self._transform(X), np.eye(len(self.classes_))[idx], w / w.sum(), packer)
        return fun, packer.size
