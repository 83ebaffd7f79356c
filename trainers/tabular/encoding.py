"""The encoding of a table's columns into one feature matrix, fitted in numpy and run as ONNX.

Per column (each a graph input (N, 1), see ``deploy/row_input.py``):

- number, date: the training median fills a missing cell, then ``(x - mean) / std``; a column that had
  missing cells also gets a 0/1 "was missing" feature;
- category: one-hot over the values seen at least twice in training (an empty cell is a value like
  any other; a value never seen gives all zeros);
- text: lower-cased, split into words, one 0/1 feature per frequent word.

The same graph computes the features the models are fitted on (the training path runs it with ONNX
Runtime), so the exported model cannot disagree with training about a single cell.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from modeldesk.deploy.row_input import NUMERIC_TYPES, READERS

FEATURES = "features"
MAX_CATEGORIES = 100  # most frequent values of a category column kept (the rest count as unseen)
MAX_WORDS = 300  # most frequent words of a text column kept
PAD = "\x01"
TOKEN_RE2 = "[\\p{L}\\p{N}]+"  # the graph's words: runs of letters and digits
_TOKEN_PY = re.compile(r"[^\W_]+")  # the same in Python (to choose the vocabulary)
OPSETS = {"": 17, "ai.onnx.ml": 3, "com.microsoft": 1}


@dataclass
class ColumnCode:
    """How one column becomes features."""

    name: str
    type: str
    input: str
    fill: float = 0.0
    mean: float = 0.0
    std: float = 1.0
    missing_flag: bool = False
    values: list = field(default_factory=list)  # categories, or words of a text column

    @property
    def width(self) -> int:
        if self.type in NUMERIC_TYPES:
            return 1 + int(self.missing_flag)
        return len(self.values)

    def feature_names(self) -> list[str]:
        if self.type in NUMERIC_TYPES:
            return [self.name] + ([f"{self.name} (missing)"] * self.missing_flag)
        if self.type == "category":
            return [f"{self.name} = {v or '(empty)'}" for v in self.values]
        return [f"{self.name} has '{v}'" for v in self.values]


def fit_columns(rows: list[dict], types: dict[str, str]) -> list[ColumnCode]:
    """The encoding of every usable column, fitted on ``rows`` (identifier columns are not used)."""
    codes = []
    for i, (name, kind) in enumerate(types.items()):
        if kind not in READERS:
            continue
        cells = [READERS[kind](row.get(name)) for row in rows]
        code = ColumnCode(name, kind, f"c{i}")
        if kind in NUMERIC_TYPES:
            x = np.array(cells, dtype=np.float64)
            seen = x[np.isfinite(x)]
            if not len(seen):
                continue
            code.fill = float(np.median(seen))
            filled = np.where(np.isfinite(x), x, code.fill)
            code.mean = float(filled.mean())
            code.std = float(filled.std()) or 1.0
            code.missing_flag = bool(len(seen) < len(x))
        elif kind == "category":
            counts = Counter(cells)
            code.values = [v for v, n in counts.most_common(MAX_CATEGORIES) if n >= 2]
            if len(code.values) < 2 and len(counts) < 2:
                continue  # one value everywhere says nothing
        else:
            counts = Counter(w for cell in cells for w in set(_TOKEN_PY.findall(cell.lower())))
            code.values = [w for w, n in counts.most_common(MAX_WORDS) if n >= 2]
        if code.width:
            codes.append(code)
    return codes


def _column_nodes(code: ColumnCode, inits: list) -> tuple[list, str]:
    p, x = f"pre_{code.input}", code.input
    if code.type in NUMERIC_TYPES:
        inits += [
            numpy_helper.from_array(np.array([code.mean], np.float32), f"{p}_mean"),
            numpy_helper.from_array(np.array([code.std], np.float32), f"{p}_std"),
        ]
        nodes = [
            helper.make_node(
                "Imputer",
                [x],
                [f"{p}_filled"],
                domain="ai.onnx.ml",
                imputed_value_floats=[code.fill],
                replaced_value_float=float("nan"),
            ),
            helper.make_node("Sub", [f"{p}_filled", f"{p}_mean"], [f"{p}_centred"]),
            helper.make_node(
                "Div", [f"{p}_centred", f"{p}_std"], [f"{p}_out" if not code.missing_flag else f"{p}_z"]
            ),
        ]
        if code.missing_flag:
            nodes += [
                helper.make_node("IsNaN", [x], [f"{p}_nan"]),
                helper.make_node("Cast", [f"{p}_nan"], [f"{p}_flag"], to=TensorProto.FLOAT),
                helper.make_node("Concat", [f"{p}_z", f"{p}_flag"], [f"{p}_out"], axis=1),
            ]
        return nodes, f"{p}_out"
    inits.append(numpy_helper.from_array(np.array([-1, code.width], np.int64), f"{p}_shape"))
    if code.type == "category":
        return [
            helper.make_node(
                "OneHotEncoder", [x], [f"{p}_hot"], domain="ai.onnx.ml", cats_strings=code.values, zeros=1
            ),
            helper.make_node("Reshape", [f"{p}_hot", f"{p}_shape"], [f"{p}_out"]),
        ], f"{p}_out"
    inits += [
        numpy_helper.from_array(np.array([-1], np.int64), f"{p}_flat_shape"),
        numpy_helper.from_array(np.array([1.0], np.float32), f"{p}_one"),
    ]
    return [
        helper.make_node("Reshape", [x, f"{p}_flat_shape"], [f"{p}_flat"]),
        helper.make_node(
            "StringNormalizer",
            [f"{p}_flat"],
            [f"{p}_lower"],
            case_change_action="LOWER",
            is_case_sensitive=1,
            locale="C",
        ),
        helper.make_node(
            "Tokenizer",
            [f"{p}_lower"],
            [f"{p}_tokens"],
            domain="com.microsoft",
            mark=0,
            pad_value=PAD,
            tokenexp=TOKEN_RE2,
            mincharnum=1,
        ),
        helper.make_node(
            "TfIdfVectorizer",
            [f"{p}_tokens"],
            [f"{p}_counts"],
            mode="TF",
            min_gram_length=1,
            max_gram_length=1,
            max_skip_count=0,
            ngram_counts=[0],
            ngram_indexes=list(range(code.width)),
            pool_strings=code.values,
        ),
        helper.make_node("Min", [f"{p}_counts", f"{p}_one"], [f"{p}_min"]),
        helper.make_node("Reshape", [f"{p}_min", f"{p}_shape"], [f"{p}_out"]),
    ], f"{p}_out"


def encoding_graph(codes: list[ColumnCode]):
    """(nodes, initializers, inputs) computing ``features`` (N, F) from one input per column."""
    nodes: list = []
    inits: list = []
    parts = []
    inputs = []
    for code in codes:
        kind = TensorProto.FLOAT if code.type in NUMERIC_TYPES else TensorProto.STRING
        inputs.append(helper.make_tensor_value_info(code.input, kind, ["N", 1]))
        column_nodes, out = _column_nodes(code, inits)
        nodes += column_nodes
        parts.append(out)
    nodes.append(helper.make_node("Concat", parts, [FEATURES], axis=1))
    return nodes, inits, inputs


def encoding_model(codes: list[ColumnCode]):
    """The encoding alone as a model (named columns -> ``features``), for the training path."""
    nodes, inits, inputs = encoding_graph(codes)
    width = sum(c.width for c in codes)
    graph = helper.make_graph(
        nodes,
        "encoding",
        inputs,
        [helper.make_tensor_value_info(FEATURES, TensorProto.FLOAT, ["N", width])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in OPSETS.items()])


class Encoder:
    """The encoding graph of fitted columns as a session: ``transform(rows)`` -> (N, F) features."""

    def __init__(self, codes: list[ColumnCode]):
        from modeldesk.deploy.row_input import RowInput
        from modeldesk.deploy.runtime import create_session

        self.codes = codes
        self.width = sum(c.width for c in codes)
        card = {
            "preprocessing": {"columns": [{"name": c.name, "type": c.type, "input": c.input} for c in codes]}
        }
        self.row_input = RowInput(card)
        self.session = create_session(encoding_model(codes).SerializeToString(), threads=1)

    def transform(self, rows: list[dict]) -> np.ndarray:
        """The features of ``rows`` (dicts of cells), computed by the encoding graph itself."""
        items = [self.row_input.load(row) for row in rows]
        out = [
            self.session.run([FEATURES], self.row_input.feeds(items[start : start + 4096], ""))[0]
            for start in range(0, len(items), 4096)
        ]
        return np.concatenate(out) if out else np.zeros((0, self.width), np.float32)


def encode(codes: list[ColumnCode], rows: list[dict]) -> np.ndarray:
    """The (N, F) features of ``rows`` (dicts of cells), computed by the encoding graph itself."""
    return Encoder(codes).transform(rows)


def merge(codes: list[ColumnCode], head_model, outputs: list[str]):
    """One model: the encoding's nodes in front of ``head_model`` (whose input is ``features``), keeping
    only ``outputs`` of the head."""
    nodes, inits, inputs = encoding_graph(codes)
    head = head_model.graph
    kept = [o for o in head.output if o.name in outputs]
    graph = helper.make_graph(
        nodes + list(head.node), "table_model", inputs, kept, inits + list(head.initializer)
    )
    versions = dict(OPSETS)
    for opset in head_model.opset_import:
        versions[opset.domain] = max(versions.get(opset.domain, 0), opset.version)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in versions.items()])
    model.ir_version = 8
    return model
