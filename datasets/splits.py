"""Stable, stratified train/val/test assignment.

Each new labelled sample, taken in content-hash order, goes to the split that is furthest below its
target share for the sample's label; ties go to train, then val, then test, so the first sample of a
class lands in train. Already assigned samples never move, so adding data keeps old splits intact.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

SPLIT_TARGETS = (("train", 0.70), ("val", 0.15), ("test", 0.15))


def assign(
    new: Iterable[tuple[int, str, str]],
    counts: dict[str, dict[str, int]] | None = None,
    targets=SPLIT_TARGETS,
) -> dict[int, str]:
    """Choose a split for each new sample.

    Parameters
    ----------
    new : iterable of (sample_id, content_hash, key)
        Samples without a split; ``key`` is the label the assignment is stratified by.
    counts : dict key -> {split: count}
        How many samples of each key every split already holds (updated in place).

    Returns
    -------
    dict sample_id -> split
    """
    counts = counts if counts is not None else {}
    per_key: dict[str, dict[str, int]] = defaultdict(lambda: {name: 0 for name, _ in targets})
    for key, value in counts.items():
        per_key[key].update(value)
    chosen: dict[int, str] = {}
    for sample_id, _hash, key in sorted(new, key=lambda item: (item[1], item[0])):
        have = per_key[key]
        total = sum(have.values()) + 1
        best = max(targets, key=lambda t: (t[1] * total - have[t[0]], -targets.index(t)))[0]
        have[best] += 1
        chosen[sample_id] = best
    counts.update(per_key)
    return chosen
