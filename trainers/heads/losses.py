"""Losses of the heads and their gradients (numpy, float64 or float32).

Every loss is a weighted sum over samples, plus an L2 penalty on the weights (not the
biases), and comes with its exact gradient; ``tests/trainers/test_heads.py`` checks each
one against finite differences.
"""

from __future__ import annotations

import numpy as np

__all__ = ["log_softmax", "softmax", "sigmoid", "softmax_loss_grad", "sigmoid_loss_grad", "mlp_loss_grad"]


def log_softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax, stable for large logits."""
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax, stable for large logits."""
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Logistic function, stable for any z."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


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
    logp = log_softmax(Z)
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
    G = (sigmoid(Z) - T) * w
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
    logp = log_softmax(Z)
    loss = -float(np.sum(w * np.sum(T * logp, axis=1)))
    loss += 0.5 * l2 * float(np.sum(W1 * W1) + np.sum(W2 * W2))
    G2 = (np.exp(logp) * T.sum(axis=1, keepdims=True) - T) * w[:, None]
    dH = G2 @ W2.T
    if mask is not None:
        dH *= mask
    dA = dH * (A > 0)
    return loss, (X.T @ dA + l2 * W1, dA.sum(axis=0), H.T @ G2 + l2 * W2, G2.sum(axis=0))
