"""Small whole-graph edits shared by artifact saving and compression."""

from __future__ import annotations

import logging

import onnx

log = logging.getLogger(__name__)


def prune_unused(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` without nodes and initializers that no graph output depends on."""
    needed = {o.name for o in model.graph.output}
    kept = []
    for node in reversed(model.graph.node):
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    if len(kept) == len(model.graph.node):
        return model
    pruned = onnx.ModelProto()
    pruned.CopyFrom(model)
    del pruned.graph.node[:]
    pruned.graph.node.extend(reversed(kept))
    inits = [t for t in pruned.graph.initializer if t.name in needed]
    del pruned.graph.initializer[:]
    pruned.graph.initializer.extend(inits)
    log.info("pruned %d unused nodes", len(model.graph.node) - len(kept))
    return pruned
