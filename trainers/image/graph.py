"""The exported image classifier as one ONNX graph, and its check against the training path.

``image`` (N, 3, S, S) -> test-time views -> backbone -> pooling -> head -> mean over views ->
``probabilities``.  The pooling nodes are the very ones features were cached with.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.backbones import Backbone
from modeldesk.trainers.features import (
    FEATURES_OUTPUT,
    apply_view,
    feature_model,
    feature_model_path,
    view_nodes,
)
from modeldesk.trainers.heads import predict_views
from modeldesk.trainers.novelty import FAMILIARITY_OUTPUT

OUTPUT_NAME = "probabilities"


def build_classifier_graph(
    backbone: Backbone, template, head, views: Sequence[str], graph_dir, novelty=None
) -> onnx.ModelProto:
    """One graph: ``image`` (N, 3, S, S) -> views -> backbone -> pooling -> head -> ``probabilities``
    (and, with ``novelty``, ``familiarity`` (N,) from the features of the first view).

    Parameters
    ----------
    backbone : the frozen backbone the features came from.
    template : the template (its ``features`` say how the backbone outputs are pooled).
    head : a fitted head on those features.
    views : the test-time views whose predictions are averaged (``("identity",)`` for none).
    graph_dir : where the backbone graph is cached.
    novelty : a fitted ``trainers.novelty.NoveltyReference`` on the first view's features, or None.
    """
    model = feature_model(backbone, template.features, graph_dir)
    graph = model.graph
    source = backbone.input_name
    batch_name = "views/batch"
    nodes, inits, pieces = [], [], []
    for view in views:
        v_nodes, v_inits, out = view_nodes(view, source, f"views/{view}/", backbone.spec.size)
        nodes += v_nodes
        inits += v_inits
        pieces.append(out)
    if len(views) > 1:
        nodes.append(helper.make_node("Concat", pieces, [batch_name], name="views/concat", axis=0))
    else:
        batch_name = pieces[0]
    if batch_name != source:
        for node in graph.node:
            node.input[:] = [batch_name if name == source else name for name in node.input]
    head_out = OUTPUT_NAME if len(views) == 1 else "head/probabilities"
    h_nodes, h_inits = head.to_onnx(FEATURES_OUTPUT, head_out, prefix="head/")
    tail = []
    if len(views) > 1:
        inits.append(
            numpy_helper.from_array(np.array([len(views), -1, len(head.classes_)], np.int64), "views/shape")
        )
        tail.append(
            helper.make_node("Reshape", [head_out, "views/shape"], ["views/stacked"], name="views/reshape")
        )
        tail.append(
            helper.make_node(
                "ReduceMean", ["views/stacked"], [OUTPUT_NAME], name="views/mean", axes=[0], keepdims=0
            )
        )
    if novelty is not None:
        n_nodes, n_inits = novelty.to_onnx(
            FEATURES_OUTPUT,
            FAMILIARITY_OUTPUT if len(views) == 1 else "head/novelty/all_views",
            prefix="head/novelty/",
        )
        tail += n_nodes
        h_inits += n_inits
        if len(views) > 1:  # rows are view-major: keep the first view's (the one it was fitted on)
            inits += [
                numpy_helper.from_array(np.array([len(views), -1], np.int64), "views/novelty_shape"),
                numpy_helper.from_array(np.array(0, np.int64), "views/first"),
            ]
            tail.append(
                helper.make_node(
                    "Reshape",
                    ["head/novelty/all_views", "views/novelty_shape"],
                    ["views/novelty"],
                    name="views/novelty_reshape",
                )
            )
            tail.append(
                helper.make_node(
                    "Gather",
                    ["views/novelty", "views/first"],
                    [FAMILIARITY_OUTPUT],
                    name="views/novelty_first",
                    axis=0,
                )
            )
    all_nodes = nodes + list(graph.node) + h_nodes + tail
    del graph.node[:]
    graph.node.extend(all_nodes)
    graph.initializer.extend(inits + h_inits)
    del graph.output[:]
    graph.output.append(
        helper.make_tensor_value_info(OUTPUT_NAME, onnx.TensorProto.FLOAT, ["N", len(head.classes_)])
    )
    if novelty is not None:
        graph.output.append(helper.make_tensor_value_info(FAMILIARITY_OUTPUT, onnx.TensorProto.FLOAT, ["N"]))
    graph.name = "modeldesk_image_classifier"
    onnx.checker.check_model(model)
    return model


def check_parity(
    model: onnx.ModelProto,
    backbone: Backbone,
    template,
    head,
    paths: Sequence[str],
    cached: np.ndarray,
    views: Sequence[str],
    graph_dir,
) -> tuple[float, float]:
    """Compare the exported graph with the training path on a few images, both on the CPU.

    ``cached`` holds the training features of ``paths`` as (n_views, n_images, dim).  Returns
    (graph vs head(features recomputed on the CPU), graph vs head(cached features)).  The first
    checks that the graph was put together right and must be ~1e-6; the second also includes
    numeric differences of the device the features were computed on.
    """
    from modeldesk.deploy.preprocess import preprocess_batch

    paths = list(paths)[:4]
    if not paths:
        return 0.0, 0.0
    batch = preprocess_batch(paths, backbone.spec)
    exported = create_session(model.SerializeToString(), device="cpu").run(
        [OUTPUT_NAME], {backbone.input_name: batch}
    )[0]
    features = create_session(feature_model_path(backbone, template.features, graph_dir), device="cpu")
    recomputed = np.mean(
        [
            head.predict_proba(
                features.run([FEATURES_OUTPUT], {backbone.input_name: apply_view(batch, v)})[0]
            )
            for v in views
        ],
        axis=0,
    )
    return (
        float(np.abs(exported - recomputed).max()),
        float(np.abs(exported - predict_views(head, cached[:, : len(paths)])).max()),
    )
