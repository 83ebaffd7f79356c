"""What compression needs from the trainers: a head of the model's own kind, re-fitted on the
features a compressed candidate computes (deploy cannot build heads: it imports nothing of ours)."""

from __future__ import annotations

from modeldesk.trainers.image.selection import HEADS
from modeldesk.trainers.novelty import HeadWithNovelty, NoveltyReference


def head_refitter(card: dict):
    """``refit(X, y) -> fitted head`` for an image classifier's card, or None when its head is of a
    kind that cannot be re-fitted here (then compression keeps the trained head)."""
    head = card.get("head") or {}
    make = HEADS.get(head.get("kind"))
    if make is None:
        return None
    params = dict(head.get("params") or {})
    novelty = card.get("novelty")

    def refit(X, y):
        fitted = make(**params).fit(X, y)
        if not novelty:
            return fitted
        # the "not sure" references and threshold follow the candidate's own features too
        return HeadWithNovelty(fitted, NoveltyReference(**novelty.get("params", {})).fit(X))

    return refit
