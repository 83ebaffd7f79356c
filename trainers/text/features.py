"""Text features of the linear text models: tokens, an n-gram vocabulary, TF-IDF rows in a small CSR.

The tokenization here is the exported graph's, written twice: ``StringNormalizer`` lower-cases in
the ``"C"`` locale (ASCII letters only; the locale exists on every platform, unlike ``en_US.UTF-8``,
whose absence makes ONNX Runtime refuse the model), and the contrib ``Tokenizer`` finds the same
regular expression with RE2 that :class:`Branch` finds with Python's ``re`` here. Which branches a
model has is chosen by the script its texts are written in (:func:`choose_branches`): words and
character n-grams for alphabetic scripts, character 1-3 grams for Chinese, Japanese and Korean.

Values are ``log(1 + count) * idf``, L2-normalised per branch; training checks the graph against
these rows (``text_graph.check_parity``), so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
CJK_SHARE = 0.2  # texts whose letters are at least this share CJK get character n-grams only


@dataclass(frozen=True)
class Branch:
    """One tokenization + n-gram range; ``python`` and ``re2`` are the same expression in two syntaxes."""

    name: str
    python: str
    re2: str
    min_n: int
    max_n: int

    @property
    def chars(self) -> bool:
        """True when every token is one character (n-grams are then plain substrings)."""
        return self.name == "char"

    def to_dict(self) -> dict:
        return asdict(self)


#: one non-space, non-control character (the same text in both syntaxes)
CHAR_RE = r"[^\x00-\x20]"
#: a run of letters and digits of the Latin, Greek and Cyrillic scripts (after ASCII lower-casing)
WORD_PY = "[a-z0-9\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]+"
WORD_RE2 = r"[a-z0-9\x{00C0}-\x{024F}\x{0370}-\x{03FF}\x{0400}-\x{04FF}]+"

CJK_BRANCHES = (Branch("char", CHAR_RE, CHAR_RE, 1, 3),)
ALPHABETIC_BRANCHES = (Branch("word", WORD_PY, WORD_RE2, 1, 2), Branch("char", CHAR_RE, CHAR_RE, 2, 4))


def lower(text: str) -> str:
    """Lower-case ASCII letters only, as ``StringNormalizer(locale="C")`` does."""
    return text.translate(_ASCII_LOWER)


def cjk_share(texts, sample: int = 2000) -> float:
    """Share of CJK characters among the non-space characters of (up to ``sample``) texts."""
    cjk = total = 0
    for text in list(texts)[:sample]:
        cjk += len(_CJK.findall(text))
        total += len(text) - text.count(" ")
    return cjk / total if total else 0.0


def choose_branches(texts) -> tuple[str, tuple[Branch, ...]]:
    """``("cjk", char 1-3 grams)`` or ``("alphabetic", words 1-2 + char 2-4 grams)`` by script."""
    if cjk_share(texts) >= CJK_SHARE:
        return "cjk", CJK_BRANCHES
    return "alphabetic", ALPHABETIC_BRANCHES


def ngrams(text: str, branch: Branch, compiled=None) -> list[str]:
    """The branch's n-grams of one text; tokens of an n-gram are joined by a space (never in a token)."""
    tokens = (compiled or re.compile(branch.python)).findall(lower(text))
    out = []
    if branch.chars:
        joined = "".join(tokens)
        for n in range(branch.min_n, branch.max_n + 1):
            out.extend(joined[i : i + n] for i in range(len(joined) - n + 1))
        return out
    for n in range(branch.min_n, branch.max_n + 1):
        out.extend(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return out


def gram_tokens(gram: str, branch: Branch) -> list[str]:
    """The tokens of one n-gram (what ``TfIdfVectorizer``'s ``pool_strings`` lists)."""
    return list(gram) if branch.chars else gram.split(" ")


class CSR:
    """A compressed sparse row matrix in numpy: what the linear text head needs and no more."""

    def __init__(self, data, indices, indptr, n_cols: int):
        self.data = np.asarray(data, dtype=np.float64)
        self.indices = np.asarray(indices, dtype=np.int64)
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.shape = (len(self.indptr) - 1, int(n_cols))
        self._rows = None

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    @property
    def row_ids(self) -> np.ndarray:
        """The row of every stored value."""
        if self._rows is None:
            self._rows = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        return self._rows

    def take(self, rows) -> CSR:
        """The rows ``rows`` (indices), in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, lengths = self.indptr[rows], self.indptr[rows + 1] - self.indptr[rows]
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        where = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        return CSR(self.data[where], self.indices[where], indptr, self.shape[1])

    def dot(self, W: np.ndarray) -> np.ndarray:
        """``self @ W`` for a dense (n_cols, k) W (one class column at a time, from a contiguous copy:
        gathering from a (n_cols,) row is twice as fast as from a strided column)."""
        Wt = np.ascontiguousarray(np.asarray(W, np.float64).T)
        out = np.empty((Wt.shape[0], self.shape[0]))
        for c in range(Wt.shape[0]):
            out[c] = np.bincount(self.row_ids, self.data * Wt[c].take(self.indices), minlength=self.shape[0])
        return out.T

    def tdot(self, G: np.ndarray) -> np.ndarray:
        """``self.T @ G`` for a dense (n_rows, k) G."""
        Gt = np.ascontiguousarray(np.asarray(G, np.float64).T)
        out = np.empty((Gt.shape[0], self.shape[1]))
        for c in range(Gt.shape[0]):
            out[c] = np.bincount(self.indices, self.data * Gt[c].take(self.row_ids), minlength=self.shape[1])
        return out.T

    def toarray(self) -> np.ndarray:
        dense = np.zeros(self.shape)
        dense[self.row_ids, self.indices] = self.data
        return dense


class TfidfVocabulary:
    """The n-gram vocabulary of each branch, with idf weights (fitted on training texts only).

    Parameters
    ----------
    branches : the tokenizations (:func:`choose_branches`).
    max_features : the most frequent n-grams kept over all branches together.
    min_df : n-grams in fewer training texts are dropped (1 for small data sets).
    """

    def __init__(self, branches, max_features: int = 100_000, min_df: int = 2):
        self.branches = tuple(branches)
        self.max_features = int(max_features)
        self.min_df = int(min_df)

    def fit(self, texts, should_stop=None) -> TfidfVocabulary:
        """Learn ``vocab_`` (branch -> list of n-grams, sorted by n) and ``idf_`` (branch -> array)."""
        texts = list(texts)
        counted = []
        for branch in self.branches:
            df: Counter = Counter()
            pattern = re.compile(branch.python)
            for i, text in enumerate(texts):
                if should_stop is not None and i % 2000 == 0 and should_stop():
                    raise InterruptedError("stopped")
                df.update(set(ngrams(text, branch, pattern)))
            counted.append(df)
        pooled = sorted(
            ((n, b, g) for b, df in enumerate(counted) for g, n in df.items() if n >= self.min_df),
            key=lambda t: -t[0],
        )[: self.max_features]
        keep = [set() for _ in self.branches]
        for _, b, gram in pooled:
            keep[b].add(gram)
        n_docs = len(texts)
        self.vocab_, self.idf_ = {}, {}
        for branch, df, kept in zip(self.branches, counted, keep):
            grams = sorted(kept, key=lambda g: (len(gram_tokens(g, branch)), g))
            self.vocab_[branch.name] = grams
            self.idf_[branch.name] = np.array([np.log((1 + n_docs) / (1 + df[g])) + 1 for g in grams])
        return self

    @property
    def n_features(self) -> int:
        return sum(len(v) for v in self.vocab_.values())

    def transform(self, texts) -> CSR:
        """TF-IDF rows: ``log(1 + count) * idf``, unit L2 norm per branch, branches side by side."""
        texts = list(texts)
        data, indices, lengths = [], [], np.zeros(len(texts), np.int64)
        offset = 0
        blocks = []
        for branch in self.branches:
            index = {g: i for i, g in enumerate(self.vocab_[branch.name])}
            idf = self.idf_[branch.name]
            pattern = re.compile(branch.python)
            rows = []
            for text in texts:
                counts = Counter(j for j in map(index.get, ngrams(text, branch, pattern)) if j is not None)
                cols = np.fromiter(counts.keys(), np.int64, len(counts))
                vals = np.log1p(np.fromiter(counts.values(), np.float64, len(counts))) * idf[cols]
                norm = np.sqrt(vals @ vals)
                rows.append((cols + offset, vals / norm if norm > 0 else vals))
            blocks.append(rows)
            offset += len(index)
        for i in range(len(texts)):
            for rows in blocks:
                cols, vals = rows[i]
                indices.append(cols)
                data.append(vals)
                lengths[i] += len(cols)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        return CSR(
            np.concatenate(data) if data else [], np.concatenate(indices) if indices else [], indptr, offset
        )

    def to_dict(self) -> dict:
        return {
            "branches": [b.to_dict() for b in self.branches],
            "max_features": self.max_features,
            "min_df": self.min_df,
            "n_features": self.n_features,
        }
