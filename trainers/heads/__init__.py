"""Small trainable heads on frozen backbone features (numpy only), exportable to ONNX.

Laid out as scikit-learn lays out its estimators:

``losses``           softmax, sigmoid and MLP losses with their gradients
``optim``            L-BFGS, Adam, early stopping
``base``             the estimator contract every head shares (params, checks, standardisation)
``linear``           :class:`LogisticRegressionHead`, :class:`SigmoidHead` (L-BFGS)
``mlp``              :class:`MLPHead` (Adam, dropout)
``export``           ONNX nodes of a fitted head, :func:`head_onnx_model`
``model_selection``  stratified folds, :func:`cross_val_score`, :func:`staged_search`

Example
-------
    from modeldesk.trainers import heads
    head = heads.LogisticRegressionHead(l2=1e-3).fit(X_train, y_train, X_val, y_val)
    proba = head.predict_proba(X_test)
    nodes, inits = head.to_onnx("embedding", "probabilities", prefix="head/")
"""

from modeldesk.trainers.heads.base import NotFittedError
from modeldesk.trainers.heads.export import head_onnx_model
from modeldesk.trainers.heads.linear import LogisticRegressionHead, SigmoidHead
from modeldesk.trainers.heads.losses import mlp_loss_grad, sigmoid_loss_grad, softmax_loss_grad
from modeldesk.trainers.heads.mlp import MLPHead
from modeldesk.trainers.heads.model_selection import (
    SearchResult,
    cross_val_predict,
    cross_val_score,
    predict_views,
    staged_search,
    stratified_folds,
    usable_folds,
)

__all__ = [
    "NotFittedError",
    "LogisticRegressionHead",
    "MLPHead",
    "SigmoidHead",
    "head_onnx_model",
    "softmax_loss_grad",
    "sigmoid_loss_grad",
    "mlp_loss_grad",
    "stratified_folds",
    "usable_folds",
    "predict_views",
    "cross_val_predict",
    "cross_val_score",
    "staged_search",
    "SearchResult",
]
