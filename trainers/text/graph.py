"""One ONNX graph from a string tensor to class probabilities, for the linear text models.

text (N,) -> StringNormalizer (lower-case, locale "C") -> per branch: contrib Tokenizer (the branch's
RE2 expression) -> TfIdfVectorizer (counts of the vocabulary's n-grams) -> log(1 + count) * idf, unit
L2 norm, times the branch's weights (the idf folded into the weights and the norm, see below) -> sum
of the branches + bias [+ embedding (N, 512) MatMul] -> Softmax.

Standard ONNX ops and one ONNX Runtime contrib op (``com.microsoft.Tokenizer``, in every
onnxruntime build); onnxruntime-extensions is not needed, so the bundle's requirements stay as
they are. The sentence encoder (a SentencePiece tokenizer + a numpy network) cannot be expressed
in ONNX: models that use it take its embeddings as a second input, computed by ``deploy.text_input``.
"""

from __future__ import annotations

import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from modeldesk.deploy.runtime import create_session
from modeldesk.deploy.text_input import EMBEDDING_INPUT
from modeldesk.trainers.text.features import gram_tokens

INPUT_NAME = "text"
OUTPUT_NAME = "probabilities"
PAD = "\x01"  # never a token: both expressions exclude control characters
OPSET = 17


def _tfidf_node(branch, grams: list[str], prefix: str, source: str, output: str) -> list:
    """Tokenizer + TfIdfVectorizer for one branch; ``grams`` sorted by their number of tokens."""
    pool, counts = [], []
    for n in range(1, branch.max_n + 1):
        counts.append(len(pool))
        for gram in grams:
            tokens = gram_tokens(gram, branch)
            if len(tokens) == n:
                pool.extend(tokens)
    return [
        helper.make_node(
            "Tokenizer",
            [source],
            [f"{prefix}_tokens"],
            domain="com.microsoft",
            mark=0,
            pad_value=PAD,
            tokenexp=branch.re2,
            mincharnum=1,
            name=f"{prefix}_tokenizer",
        ),
        helper.make_node(
            "TfIdfVectorizer",
            [f"{prefix}_tokens"],
            [output],
            mode="TF",
            min_gram_length=branch.min_n,
            max_gram_length=branch.max_n,
            max_skip_count=0,
            ngram_counts=counts,
            ngram_indexes=list(range(len(grams))),
            pool_strings=pool,
            name=f"{prefix}_ngrams",
        ),
    ]


def build_text_graph(vocabulary, head, *, embedding_dim: int = 0) -> onnx.ModelProto:
    """The model for a fitted :class:`TfidfVocabulary` and :class:`SparseLogisticRegression`."""
    nodes = [
        helper.make_node(
            "StringNormalizer",
            [INPUT_NAME],
            ["lowered"],
            case_change_action="LOWER",
            is_case_sensitive=1,
            locale="C",
            name="lowercase",
        )
    ]
    inits = [
        numpy_helper.from_array(np.array([1.0], np.float32), "one"),
        numpy_helper.from_array(np.array([1e-12], np.float32), "tiny"),
    ]
    parts, offset = [], 0
    for branch in vocabulary.branches:
        grams = vocabulary.vocab_[branch.name]
        if not grams:
            continue
        p, idf = branch.name, vocabulary.idf_[branch.name]
        W = head.coef_[offset : offset + len(grams)]
        offset += len(grams)
        nodes += _tfidf_node(branch, grams, p, "lowered", f"{p}_counts")
        # (log(1 + c) * idf / ||log(1 + c) * idf||) @ W == (log(1 + c) @ (idf * W)) / sqrt(log(1 + c)^2 @ idf^2):
        # three passes over the dense (N, n-grams) counts instead of six
        inits += [
            numpy_helper.from_array((idf[:, None] * W).astype(np.float32), f"{p}_W"),
            numpy_helper.from_array((idf**2)[:, None].astype(np.float32), f"{p}_idf2"),
        ]
        nodes += [
            helper.make_node("Add", [f"{p}_counts", "one"], [f"{p}_plus1"]),
            helper.make_node("Log", [f"{p}_plus1"], [f"{p}_log"]),
            helper.make_node("Mul", [f"{p}_log", f"{p}_log"], [f"{p}_log2"]),
            helper.make_node("MatMul", [f"{p}_log2", f"{p}_idf2"], [f"{p}_norm2"]),
            helper.make_node("Sqrt", [f"{p}_norm2"], [f"{p}_norm"]),
            helper.make_node("Max", [f"{p}_norm", "tiny"], [f"{p}_safe"]),
            helper.make_node("MatMul", [f"{p}_log", f"{p}_W"], [f"{p}_raw"]),
            helper.make_node("Div", [f"{p}_raw", f"{p}_safe"], [f"{p}_logits"]),
        ]
        parts.append(f"{p}_logits")
    inits.append(numpy_helper.from_array(head.intercept_.astype(np.float32), "b"))
    total = "b"
    for i, part in enumerate(parts):
        nodes.append(helper.make_node("Add", [part, total], [f"sum{i}"]))
        total = f"sum{i}"
    nodes.append(helper.make_node("Identity", [total], ["logits0"]))
    inputs = [helper.make_tensor_value_info(INPUT_NAME, TensorProto.STRING, ["N"])]
    logits = "logits0"
    if embedding_dim:
        inputs.append(helper.make_tensor_value_info(EMBEDDING_INPUT, TensorProto.FLOAT, ["N", embedding_dim]))
        inits.append(numpy_helper.from_array(head.dense_coef_.astype(np.float32), "V"))
        nodes += [
            helper.make_node("MatMul", [EMBEDDING_INPUT, "V"], ["dense_logits"]),
            helper.make_node("Add", ["logits0", "dense_logits"], ["logits"]),
        ]
        logits = "logits"
    nodes.append(helper.make_node("Softmax", [logits], [OUTPUT_NAME], axis=1))
    graph = helper.make_graph(
        nodes,
        "text_classifier",
        inputs,
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["N", head.n_classes_])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)],
        producer_name="modeldesk",
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def graph_probabilities(
    model: onnx.ModelProto, texts, embeddings=None, *, timing: list | None = None
) -> np.ndarray:
    """Run the graph on cleaned texts (and their embeddings) on the CPU, one thread.

    ``timing``, when given, gets the seconds of the run itself (not the session's creation) appended.
    """
    session = create_session(model.SerializeToString(), device="cpu", threads=1)
    feeds = {INPUT_NAME: np.array(list(texts), dtype=object)}
    if embeddings is not None:
        feeds[EMBEDDING_INPUT] = np.asarray(embeddings, np.float32)
    out = session.run([OUTPUT_NAME], feeds)[0]
    if timing is not None:  # a second run: the first one also sets the session up
        started = time.perf_counter()
        session.run([OUTPUT_NAME], feeds)
        timing.append(time.perf_counter() - started)
    return out


def check_parity(model, texts, expected: np.ndarray, embeddings=None, *, timing: list | None = None) -> float:
    """Largest difference between the graph's probabilities and the training path's."""
    if not len(texts):
        return 0.0
    return float(np.max(np.abs(graph_probabilities(model, texts, embeddings, timing=timing) - expected)))
