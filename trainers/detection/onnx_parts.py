"""ONNX nodes and constants added a few at a time, every name under one prefix (the detection
graph's parts: the duplicate drop, the test views and their fusion)."""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper


class Parts:
    """Collects ``nodes`` and ``inits`` named ``prefix + name``; each method returns that name."""

    def __init__(self, prefix: str):
        self.prefix, self.nodes, self.inits = prefix, [], []

    def const(self, name: str, value, dtype=np.int64) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), self.prefix + name))
        return self.prefix + name

    def node(self, op: str, inputs, name: str, **attrs) -> str:
        self.nodes.append(
            helper.make_node(op, inputs, [self.prefix + name], name=self.prefix + name, **attrs)
        )
        return self.prefix + name

    def columns(self, rows: str, start: int, stop: int, name: str, axis1: str) -> str:
        """Columns ``start:stop`` of the (K, C) tensor ``rows``; ``axis1`` names the int64 [1] constant."""
        return self.node(
            "Slice", [rows, self.const(name + "_s", [start]), self.const(name + "_e", [stop]), axis1], name
        )
