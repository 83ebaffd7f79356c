"""The one check of single-label training samples that every classifier runs (images, texts, clips)."""

from __future__ import annotations

from collections import Counter

from modeldesk.errors import UserError
from modeldesk.trainers.tasks import FEW_EXAMPLES


def check_label_samples(samples, noun: str = "image", *, one_class_hint: str = "") -> tuple[list, list, list]:
    """(labeled samples, sorted labels, warnings) for single-label training.

    Raises UserError in one plain sentence when there is nothing to train on, a single class, or a
    class with only one example. A class with no example in the training split gets its held-out
    examples moved into training, with a warning; a class with fewer than ``FEW_EXAMPLES`` gets a
    warning. ``noun`` names one example ("image", "text", "clip").
    """
    nouns = f"{noun}s"
    labeled = [s for s in samples if s.label not in (None, "")]
    if not samples:
        raise UserError(f"no {nouns} to train on")
    if not labeled:
        raise UserError(f"none of the {len(samples)} {nouns} has a label: label some {nouns} first")
    counts = Counter(s.label for s in labeled)
    if len(counts) < 2:
        (only,) = counts
        raise UserError(
            f"all labeled {nouns} are in one class ({only!r}): a model needs at least two "
            f"classes{one_class_hint}"
        )
    lonely = sorted(label for label, n in counts.items() if n < 2)
    if lonely:
        raise UserError(
            f"class {', '.join(map(repr, lonely))} has only one {noun}: add at least one more "
            f"{noun} per class (better: {FEW_EXAMPLES} or more)"
        )
    warnings = []
    moved = sorted(set(counts) - {s.label for s in labeled if s.split == "train"})
    if moved:
        warnings.append(
            f"class {', '.join(map(repr, moved))} had no training {nouns}; its held-out {nouns} "
            "were used for training, so its metrics are optimistic"
        )
        labeled = [s.with_split("train") if s.label in moved else s for s in labeled]
    few = sorted(label for label, n in counts.items() if 2 <= n < FEW_EXAMPLES)
    if few:
        warnings.append(
            f"class {', '.join(map(repr, few))} has fewer than {FEW_EXAMPLES} {nouns}; expect "
            "unreliable predictions for it"
        )
    return labeled, sorted(counts), warnings
