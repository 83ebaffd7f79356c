"""How long a text training run takes, and how its time budget is shared among its steps.

A run is: n-gram counting (per text), sentence embeddings (per text not yet cached, accurate template
only), the logistic-regression fits of the cross-validation and the final fit, and the export (per
n-gram in the graph). Each step's speed comes from the cost model (``scheduler.CostModel``, measured
by earlier runs on this machine) or, the first time, from a prior measured on 2 busy cores.

After training, the job scores every text of the project with the exported graph (label
suggestions, the model's mistakes): that is in the ETA too (``"scoring"``), as the user waits for it.

A fit's cost is ``evaluations x seconds per evaluation``; one evaluation (loss + gradient) costs in
proportion to the stored values times the classes (:func:`fit_units`). The number of evaluations a
fit needs is measured too (its moving average over runs), so the ETA follows the data the machine has
seen instead of a worst case. When the fits would not fit in the budget, the plan drops the sentence
encoder first, then settings of the search, and finally bounds each fit in seconds: L-BFGS keeps the
best solution it has when its time is up, so a 60,000-text run ends near its ETA.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from modeldesk.deploy.text_input import DEFAULT_MAX_CHARS
from modeldesk.scheduler import CostModel

EMBED_WORK, NGRAM_WORK, EVAL_WORK, EXPORT_WORK = (
    "text-embedding",
    "text-ngrams",
    "text-fit-eval",
    "text-export",
)
SCORE_WORK = "text-scoring"  # the exported graph on texts, per :func:`score_units`
#: "items" are fits, "seconds" their evaluations (1 / rate = evaluations per fit), for fits started from
#: zeros and fits started from a neighbouring solution (the next C of the search, the final fit)
EVALS_WORK = {"cold": "text-fit-evaluations", "warm": "text-fit-evaluations-warm"}
#: Priors until this machine has measured them (between a quiet and a busy 2-core machine): seconds per
#: text / per fit unit and evaluation / per graph n-gram / per scoring unit; evaluations per fit. The
#: encoder's is rarely used: a short probe times it first (``text_classification._probe_encoder``).
PRIOR_S = {EMBED_WORK: 0.035, NGRAM_WORK: 0.0005, EVAL_WORK: 0.035, EXPORT_WORK: 1e-5, SCORE_WORK: 1.2e-3}
PRIOR_EVALS = {"cold": 50.0, "warm": 23.0}
NNZ_PER_CHAR = 2.1  # stored values per character of text, both tokenizations (measured on both data sets)
FEATURES_PER_TRAIN_CHAR = 0.21  # n-grams kept (min_df 2) per character of training text (both data sets)
EMBED_DIM = 512
USABLE = 0.9  # share of the budget planned for; the rest absorbs a busy machine
FIXED_S = 0.2  # reading texts, evaluation, writing the artifact (0.1-0.2 s for 375 texts, 2026-12-04)
#: the sentence encoder's first call in a process (loading and setting up): 1.4 s in the job at probe
#: slowdown 1.2 (bench/estimates.py, 2026-12-04), 2 s in the priors' units
ENCODER_SETUP_S = 2.0


def fit_units(nnz: float, n_rows: int, n_classes: int, embedding_dim: int = 0) -> float:
    """Work of one loss + gradient evaluation (unit: 1e6 stored values x classes; a dense embedding
    value counts a quarter of a stored one, as BLAS reads it in order)."""
    return max((nnz + n_rows * embedding_dim / 4) * max(n_classes, 2) / 1e6, 1e-4)


def score_units(n_texts: int, n_features: float, n_classes: int) -> float:
    """Work of the exported graph on ``n_texts`` (unit: 1e6 values): it holds each text's n-gram counts
    as a dense row, read by a few element-wise steps and a product with one column per class."""
    return n_texts * n_features * (4 + max(n_classes, 2)) / 1e6


def seconds_per(cost: CostModel, work: str, units: float) -> float:
    """Seconds for ``units`` of ``work`` on one CPU thread: measured rate, or the prior."""
    rate = cost.items_per_s(work, "cpu", 1, 1)
    return units / rate if rate else units * PRIOR_S[work]


def evals_per_fit(cost: CostModel, start: str = "cold") -> float:
    """Average evaluations of a fit started ``"cold"`` or ``"warm"``, as measured here (else the prior)."""
    rate = cost.items_per_s(EVALS_WORK[start], "cpu", 1, 1)
    return 1.0 / rate if rate else PRIOR_EVALS[start]


@dataclass
class FitPlan:
    """The fits of a run: which candidates the search tries, and seconds for the search and the final fit."""

    candidates: list
    folds: int
    search_s: float
    final_s: float
    cut: bool = False  # True when fits were bounded below what they are expected to need
    dropped: list = field(default_factory=list)  # what the budget left out, in words


def plan_fits(
    cost: CostModel,
    candidates: list,
    *,
    nnz_fit: float,
    n_fit: int,
    n_train: int,
    n_classes: int,
    folds: int,
    available_s: float,
) -> FitPlan:
    """Share ``available_s`` among the search's fits and the final fit.

    ``nnz_fit``/``n_fit``: stored values and rows of the final fit (train + val); the search fits on
    ``(folds - 1) / folds`` of the ``n_train`` training rows. Candidates are dicts with ``"C"`` and
    ``"embedding"`` (None or an encoder name), in the order they are tried.
    """
    per_row = nnz_fit / max(n_fit, 1)

    def fit_s(rows: float, embedding, start: str = "cold") -> float:
        units = fit_units(per_row * rows, int(rows), n_classes, EMBED_DIM if embedding else 0)
        return evals_per_fit(cost, start) * seconds_per(cost, EVAL_WORK, units)

    final_s = fit_s(n_fit, None)
    dropped: list[str] = []
    if len(candidates) <= 1 or folds < 2:
        final_s = fit_s(n_fit, candidates[0]["embedding"]) if candidates else final_s
        return FitPlan(list(candidates[:1]), folds, 0.0, min(final_s, available_s), final_s > available_s)
    fold_rows = n_train * (folds - 1) / folds
    kept = list(candidates)

    def search_s(cands) -> float:  # per feature set, the first C starts cold and the next ones warm
        total, seen = 0.0, set()
        for c in cands:
            total += folds * fit_s(fold_rows, c["embedding"], "warm" if c["embedding"] in seen else "cold")
            seen.add(c["embedding"])
        return total

    def worst_final(cands) -> float:  # started from the chosen candidate's solution
        return max(fit_s(n_fit, c["embedding"], "warm") for c in cands)

    while len(kept) > 1 and search_s(kept) + worst_final(kept) > available_s:
        if any(c["embedding"] for c in kept):
            kept = [c for c in kept if not c["embedding"]] or kept[:1]
            dropped.append("the sentence encoder")
        else:
            kept = kept[:-1] if len(kept) > 2 else [c for c in kept if c["C"] == _middle(kept)][:1]
            if "some settings of the search" not in dropped:
                dropped.append("some settings of the search")
    if len(kept) == 1:
        final_s = fit_s(n_fit, kept[0]["embedding"])
        return FitPlan(kept, folds, 0.0, min(final_s, available_s), final_s > available_s, dropped)
    final_s, total = worst_final(kept), search_s(kept) + worst_final(kept)
    scale = min(1.0, available_s / total)
    return FitPlan(kept, folds, search_s(kept) * scale, final_s * scale, scale < 1.0, dropped)


def _middle(candidates) -> float:
    values = sorted(c["C"] for c in candidates)
    return values[len(values) // 2]


def plan_run(samples, template, cost: CostModel, missing_embeddings, budget: float) -> dict:
    """The plan of a run before any text is read: steps, seconds per step, ETA.

    ``missing_embeddings(samples) -> int``: texts whose sentence embedding is not cached yet.
    """
    labeled = [s for s in samples if s.label is not None]
    n_classes = max(len({s.label for s in labeled}), 2)
    n_train = sum(1 for s in labeled if s.split == "train")
    n_fit = sum(1 for s in labeled if s.split in ("train", "val")) or len(labeled)
    chars = sum(min(len(s.source), DEFAULT_MAX_CHARS) for s in labeled)
    nnz_fit = NNZ_PER_CHAR * chars * n_fit / max(len(labeled), 1)
    ngram_s = seconds_per(cost, NGRAM_WORK, len(labeled))
    train_chars = chars * n_train / max(len(labeled), 1)
    n_features = min(template.max_features, FEATURES_PER_TRAIN_CHAR * train_chars + 1)
    export_s = seconds_per(cost, EXPORT_WORK, n_features)
    scoring_s = seconds_per(cost, SCORE_WORK, score_units(len(samples), n_features, n_classes))
    usable = USABLE * budget - FIXED_S - ngram_s - export_s
    embed_s, encoders, loaded = 0.0, [], False  # loaded: the job's training reads texts with the encoder
    for name in template.embeddings:
        if name is None:
            continue
        missing = missing_embeddings(labeled)
        loaded = loaded or missing > 0
        needed = seconds_per(cost, EMBED_WORK, missing) + (ENCODER_SETUP_S if missing else 0.0)
        if needed <= 0.5 * usable:
            encoders.append(name)
            embed_s += needed
    candidates = [c for c in template.candidates() if c["embedding"] is None or c["embedding"] in encoders]
    fits = plan_fits(
        cost,
        candidates,
        nnz_fit=nnz_fit,
        n_fit=n_fit,
        n_train=n_train,
        n_classes=n_classes,
        folds=template.cv_folds,
        available_s=max(usable - embed_s, 0.0),
    )
    if not any(c["embedding"] for c in fits.candidates) and embed_s:
        embed_s, encoders = 0.0, []
    if encoders:  # the graph's second input: every text read by the encoder again when the job scores
        # (the encoder is loaded once a process: here, when training had every embedding cached)
        scoring_s += seconds_per(cost, EMBED_WORK, len(samples)) + (0.0 if loaded else ENCODER_SETUP_S)
    eta = FIXED_S + ngram_s + embed_s + fits.search_s + fits.final_s + export_s + scoring_s
    return {
        "eta_s": round(eta, 1),
        "devices": ["cpu"],
        "texts": len(labeled),
        "embeddings": encoders,
        "candidates": len(fits.candidates),
        "bounded": fits.cut,
        "left_out": fits.dropped,
        "seconds": {
            "ngrams": round(ngram_s, 1),
            "embeddings": round(embed_s, 1),
            "search": round(fits.search_s, 1),
            "final_fit": round(fits.final_s, 1),
            "export": round(export_s, 1),
            "scoring": round(scoring_s, 1),
        },
    }
