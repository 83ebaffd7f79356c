""" "Unlike anything it was trained on": how familiar an input's features are to the training features.

A classifier's probabilities always sum to one, so a photo of something it never saw (a raccoon for a
hand-sign model, noise) can still come out "100% sure". :class:`NoveltyReference` measures instead how
close the input's features come to the training photos' features: the cosine similarity of the
centred features to the nearest of a few reference points (spherical k-means centres of the training
features). Its threshold is calibrated on held-out photos (each photo is scored against references
built without it, by folds), so that ``pass_fraction`` of photos of the kind it was trained on pass.

The graph output ``familiarity`` is that similarity minus the threshold: below 0 the answer is
"not sure". Because the threshold lives in the graph, every copy of the model (a compressed one whose
head and references were re-fitted on its own features, with its own threshold) reads the same rule,
and the card's ``novelty`` says it once (``threshold`` 0 on ``familiarity``).
"""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

FAMILIARITY_OUTPUT = "familiarity"
PASS_FRACTION = 0.98
# Reference points are capped so that they add at most ~1.2 MB of floats to the model.
MAX_FLOATS = 300_000
MIN_REFERENCES, MAX_REFERENCES = 16, 256


def _unit(X: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.maximum(np.einsum("ij,ij->i", X, X), 1e-12))
    return X / norms[:, None]


def _centres(U: np.ndarray, k: int, rng: np.random.Generator, iterations: int = 8) -> np.ndarray:
    """``k`` unit reference points for the unit rows ``U``: the rows themselves when there are at most
    ``k`` (repeated to fill ``k``), else spherical k-means centres started from ``k`` distinct rows."""
    if len(U) <= k:
        return U[np.resize(np.arange(len(U)), k)]
    centres = U[rng.choice(len(U), size=k, replace=False)]
    for _ in range(iterations):
        nearest = np.argmax(U @ centres.T, axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, nearest, U)
        used = np.bincount(nearest, minlength=k) > 0
        centres[used] = _unit(sums[used])
    return centres


class NoveltyReference:
    """Familiarity of features to the training features, with a threshold calibrated on held-out photos.

    Parameters
    ----------
    n_references : int or None
        Reference points kept (None: ``MAX_FLOATS // dim`` within 16..256, at most the photos given).
        A re-fit (compression) passes the trained model's value so the graph keeps its shapes.
    pass_fraction : float
        Share of held-out photos of the training kind that must score as familiar.
    folds : int
        Folds used to score each photo against references built without it.
    random_state : int
        Seed of the k-means starts and the folds.

    Attributes
    ----------
    mean_ : (dim,) the training features' mean (features are centred before the cosine).
    references_ : (n_references_, dim) unit reference points.
    similarity_threshold_ : float, the held-out similarity that ``pass_fraction`` of photos reach.
    held_out_similarity_ : (n,) each training photo's similarity to references built without it.

    Examples
    --------
        ref = NoveltyReference().fit(train_features)
        ref.familiarity(new_features) < 0
    array([False,  True])                                       # the second one: "not sure"
    """

    def __init__(
        self,
        n_references: int | None = None,
        pass_fraction: float = PASS_FRACTION,
        folds: int = 5,
        random_state: int = 0,
    ):
        self.n_references = n_references
        self.pass_fraction = pass_fraction
        self.folds = folds
        self.random_state = random_state

    def get_params(self) -> dict:
        return {
            "n_references": self.n_references,
            "pass_fraction": self.pass_fraction,
            "folds": self.folds,
            "random_state": self.random_state,
        }

    def fit(self, X, y=None) -> NoveltyReference:
        """Learn the references and calibrate the threshold on ``X`` (n, dim); ``y`` is ignored."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or len(X) < 2:
            raise ValueError("novelty needs the features of at least two photos")
        n, dim = X.shape
        k = self.n_references or int(np.clip(MAX_FLOATS // dim, MIN_REFERENCES, MAX_REFERENCES))
        self.n_references_ = int(k if self.n_references else min(k, n))
        rng = np.random.default_rng(self.random_state)
        self.mean_ = X.mean(axis=0)
        U = _unit(X - self.mean_)
        order = rng.permutation(n)
        folds = np.array_split(order, max(2, min(self.folds, n)))
        held_out = np.empty(n)
        for fold in folds:
            rest = np.setdiff1d(order, fold, assume_unique=True)
            centres = _centres(U[rest], self.n_references_, rng)
            held_out[fold] = np.max(U[fold] @ centres.T, axis=1)
        self.held_out_similarity_ = held_out
        self.similarity_threshold_ = float(np.quantile(held_out, 1.0 - self.pass_fraction, method="lower"))
        self.references_ = _centres(U, self.n_references_, rng)
        self.n_features_in_ = dim
        return self

    def similarity(self, X) -> np.ndarray:
        """Cosine similarity of each row's centred features to the nearest reference point."""
        if not hasattr(self, "references_"):
            raise ValueError("this NoveltyReference is not fitted yet: call fit first")
        U = _unit(np.asarray(X, dtype=np.float64) - self.mean_)
        return np.max(U @ self.references_.T, axis=1)

    def familiarity(self, X) -> np.ndarray:
        """Similarity minus the calibrated threshold: below 0 the input is unlike the training photos."""
        return self.similarity(X) - self.similarity_threshold_

    def card(self) -> dict:
        """What the model card says about the signal (the rule and how it was calibrated)."""
        return {
            "output": FAMILIARITY_OUTPUT,
            "threshold": 0.0,
            "similarity_threshold": round(self.similarity_threshold_, 6),
            "pass_fraction": self.pass_fraction,
            "calibrated_on": int(len(self.held_out_similarity_)),
            "references": self.n_references_,
            "params": {**self.get_params(), "n_references": self.n_references_},
            "text": (
                f"'not sure' when a photo's features are less similar to the training photos' than "
                f"{self.pass_fraction:.0%} of held-out training photos are (familiarity below 0)"
            ),
        }

    def to_onnx(self, input_name: str, output_name: str = FAMILIARITY_OUTPUT, prefix: str = "head/novelty/"):
        """ONNX nodes and initializers: float (N, dim) features -> (N,) familiarity.

        The initializer names and shapes depend only on ``prefix``, ``dim`` and ``n_references_``, so a
        re-fitted reference can replace a trained one's weights in place (compression does so).
        """
        p = prefix
        inits = [
            numpy_helper.from_array(self.mean_.astype(np.float32), p + "mean"),
            numpy_helper.from_array(
                np.ascontiguousarray(self.references_.T, dtype=np.float32), p + "references"
            ),
            numpy_helper.from_array(np.array([self.similarity_threshold_], np.float32), p + "threshold"),
            numpy_helper.from_array(np.array([1], np.int64), p + "axis"),
            numpy_helper.from_array(np.array([1e-12], np.float32), p + "eps"),
        ]
        nodes = [
            helper.make_node("Sub", [input_name, p + "mean"], [p + "centred"], name=p + "centre"),
            helper.make_node("Mul", [p + "centred", p + "centred"], [p + "squared"], name=p + "square"),
            helper.make_node(
                "ReduceSum", [p + "squared", p + "axis"], [p + "sum"], name=p + "sum", keepdims=1
            ),
            helper.make_node("Max", [p + "sum", p + "eps"], [p + "safe"], name=p + "floor"),
            helper.make_node("Sqrt", [p + "safe"], [p + "norm"], name=p + "norm"),
            helper.make_node("Div", [p + "centred", p + "norm"], [p + "unit"], name=p + "unit"),
            helper.make_node("MatMul", [p + "unit", p + "references"], [p + "cosines"], name=p + "cosines"),
            helper.make_node(
                "ReduceMax", [p + "cosines"], [p + "nearest"], name=p + "nearest", axes=[1], keepdims=0
            ),
            helper.make_node("Sub", [p + "nearest", p + "threshold"], [output_name], name=p + "familiarity"),
        ]
        return nodes, inits


class HeadWithNovelty:
    """A fitted head and a :class:`NoveltyReference` on the same features, exported side by side.

    ``to_onnx`` gives the head's nodes (output ``output_name``) and the reference's (output
    ``familiarity``, under ``prefix + "novelty/"``): what compression's head re-fit swaps in.
    """

    def __init__(self, head, novelty: NoveltyReference):
        self.head, self.novelty = head, novelty

    def __getattr__(self, name):  # classes_, predict_proba, get_params... come from the head
        if name in ("head", "novelty"):
            raise AttributeError(name)
        return getattr(self.head, name)

    def to_onnx(self, input_name: str, output_name: str, prefix: str = "head/"):
        nodes, inits = self.head.to_onnx(input_name, output_name, prefix=prefix)
        more_nodes, more_inits = self.novelty.to_onnx(
            input_name, FAMILIARITY_OUTPUT, prefix=prefix + "novelty/"
        )
        return nodes + more_nodes, inits + more_inits
