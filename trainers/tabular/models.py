"""The models a table template fits on the encoded features, and each one's ONNX head.

- ``linear``: L2-regularised logistic regression (classes) or ridge regression (values), from
  scikit-learn; its head is written here as MatMul + Add (+ Softmax), a few lines of ONNX.
- ``trees``: gradient-boosted trees from LightGBM, converted by onnxmltools (``TreeEnsemble*``
  of ONNX-ML). scikit-learn's HistGradientBoosting was measured first: skl2onnx 1.20 cannot convert it
  under scikit-learn 1.9 (it writes booleans into an integer attribute), LightGBM converts exactly
  (max difference ~1e-7) and is as accurate on the benchmark tables (``bench/train_tabular.py``).

A candidate is a dict ``{"model": "linear" | "trees", ...parameters}``; :func:`fit` fits one on
(X, y) and :func:`head_model` turns a fitted one into a model from ``features`` to the answer.
"""

from __future__ import annotations

import warnings

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from modeldesk.trainers.tabular.encoding import FEATURES

PROBABILITIES = "probabilities"
VALUE = "value"
TREE_OPSET = 15  # the highest opset onnxmltools' LightGBM converter writes


def fit(candidate: dict, X: np.ndarray, y: np.ndarray, classes: int, seed: int = 0):
    """A fitted estimator for ``candidate`` (``classes`` 0: regression)."""
    from threadpoolctl import threadpool_limits

    # BLAS on one thread: L-BFGS's small products are 50x slower when threads fight for busy cores
    if candidate["model"] == "blend":
        return [fit(part, X, y, classes, seed) for part in candidate["parts"]]
    with threadpool_limits(1):
        return _fit(candidate, X, y, classes, seed)


def _fit(candidate: dict, X: np.ndarray, y: np.ndarray, classes: int, seed: int):
    params = {k: v for k, v in candidate.items() if k != "model"}
    if candidate["model"] == "linear":
        if classes:
            from sklearn.linear_model import LogisticRegression

            return LogisticRegression(C=params["C"], max_iter=2000).fit(X, y)
        from sklearn.linear_model import Ridge

        return Ridge(alpha=params["alpha"]).fit(X, y)
    import lightgbm

    options = dict(
        n_estimators=params.get("n_estimators", 300),
        learning_rate=params.get("learning_rate", 0.05),
        num_leaves=params.get("num_leaves", 15),
        min_child_samples=params.get("min_child_samples", 10),
        reg_lambda=params.get("reg_lambda", 1.0),
        subsample=0.8,
        subsample_freq=1,
        colsample_bytree=0.8,
        random_state=seed,
        n_jobs=1,
        verbose=-1,
    )
    model = lightgbm.LGBMClassifier(**options) if classes else lightgbm.LGBMRegressor(**options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "X does not have valid feature names": numpy in, numpy out
        return model.fit(X, y)


def predict(model, X: np.ndarray, classes: int) -> np.ndarray:
    """(N, C) probabilities in class order 0..C-1, or (N,) values."""
    if isinstance(model, list):  # a blend: the average of its parts
        return np.mean([predict(part, X, classes) for part in model], axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not classes:
            return np.asarray(model.predict(X), dtype=np.float64)
        proba = np.zeros((len(X), classes))
        proba[:, np.asarray(model.classes_, dtype=int)] = model.predict_proba(X)
        return proba


def _linear_head(model, width: int, classes: int):
    W = np.asarray(model.coef_, dtype=np.float32)
    b = np.atleast_1d(np.asarray(model.intercept_, dtype=np.float32))
    nodes = []
    if classes and W.shape[0] == 1:  # binary logistic: scores (-z, z) through a softmax = (1 - p, p)
        W = np.concatenate([-W, W]) / 2
        b = np.concatenate([-b, b]) / 2
    inits = [
        numpy_helper.from_array(W.T.reshape(width, -1).copy(), "head_W"),
        numpy_helper.from_array(b, "head_b"),
    ]
    nodes += [
        helper.make_node("MatMul", [FEATURES, "head_W"], ["head_xw"]),
        helper.make_node("Add", ["head_xw", "head_b"], ["head_logits" if classes else VALUE]),
    ]
    if classes:
        nodes.append(helper.make_node("Softmax", ["head_logits"], [PROBABILITIES], axis=1))
    out = PROBABILITIES if classes else VALUE
    shape = ["N", classes] if classes else ["N", 1]
    graph = helper.make_graph(
        nodes,
        "head",
        [helper.make_tensor_value_info(FEATURES, TensorProto.FLOAT, ["N", width])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _tree_head(model, width: int, classes: int):
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    onnx_model = convert_lightgbm(
        model,
        initial_types=[(FEATURES, FloatTensorType([None, width]))],
        zipmap=False,
        target_opset=TREE_OPSET,
    )
    graph = onnx_model.graph
    if not classes:  # the regressor's output is "variable" (N, 1)
        for node in graph.node:
            node.output[:] = [VALUE if name == graph.output[0].name else name for name in node.output]
        graph.output[0].name = VALUE
    return onnx_model


def _blend_head(models_: list, parts: list[dict], width: int, classes: int):
    """The parts' heads side by side on the same ``features``, their answers averaged."""
    out = PROBABILITIES if classes else VALUE
    nodes, inits, versions = [], [], {}
    for i, (model, part) in enumerate(zip(models_, parts)):
        head, name = head_model(model, part, width, classes)

        def renamed(edge: str, prefix=f"blend{i}_") -> str:
            return edge if edge in (FEATURES, "") else prefix + edge

        for node in head.graph.node:
            node.input[:] = [renamed(e) for e in node.input]
            node.output[:] = [renamed(e) for e in node.output]
            node.name = renamed(node.name) if node.name else node.name
            nodes.append(node)
        for init in head.graph.initializer:
            init.name = renamed(init.name)
            inits.append(init)
        for opset in head.opset_import:
            versions[opset.domain] = max(versions.get(opset.domain, 0), opset.version)
        nodes.append(helper.make_node("Identity", [renamed(name)], [f"blend{i}_answer"]))
    inits.append(numpy_helper.from_array(np.array(1.0 / len(parts), np.float32), "blend_share"))
    nodes += [
        helper.make_node("Sum", [f"blend{i}_answer" for i in range(len(parts))], ["blend_sum"]),
        helper.make_node("Mul", ["blend_sum", "blend_share"], [out]),
    ]
    shape = ["N", classes] if classes else ["N", 1]
    graph = helper.make_graph(
        nodes,
        "blend",
        [helper.make_tensor_value_info(FEATURES, TensorProto.FLOAT, ["N", width])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in versions.items()])


def head_model(model, candidate: dict, width: int, classes: int):
    """(ONNX model from ``features`` to the answer, the output's name)."""
    if candidate["model"] == "blend":
        return _blend_head(model, candidate["parts"], width, classes), PROBABILITIES if classes else VALUE
    build = _linear_head if candidate["model"] == "linear" else _tree_head
    return build(model, width, classes), PROBABILITIES if classes else VALUE
