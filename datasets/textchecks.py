"""Checks of the labels a file of texts gives: texts in the label column, and one class only."""

from __future__ import annotations

import statistics

from .items import ImportReport

LONG_LABEL_CHARS = 20  # labels whose median length is above this, nearly all different, are texts


def check_labels(name: str, pairs, column: str = "label") -> None:
    """ValueError when the labels of ``pairs`` (text, label) look like texts: long and nearly all different.

    ``pairs`` are the first rows of a file; ``column`` names the label column in the message.
    """
    labeled = [(text, label) for text, label in pairs if label]
    if len(labeled) < 3:
        return
    labels = [label for _, label in labeled]
    long_labels = statistics.median(len(label) for label in labels) > LONG_LABEL_CHARS
    if long_labels and len(set(labels)) > 0.5 * len(labels):
        example = labels[0][:40] + ("..." if len(labels[0]) > 40 else "")
        swapped = statistics.median(len(text) for text, _ in labeled) <= LONG_LABEL_CHARS
        hint = "the text and label columns look swapped" if swapped else "it looks like a second text column"
        raise ValueError(
            f"{name}: the {column} column holds long texts (such as {example!r}), not class names; "
            f"{hint}: name the columns with --text-column and --label-column, or fix the file"
        )


def warn_one_class(report: ImportReport, name: str, labels: set) -> None:
    """A warning when every labeled text of a file has the same label (training needs two classes)."""
    if len(labels) == 1:
        report.warn(
            f"{name}: every text has the label {next(iter(labels))!r}; training needs texts of at least "
            "two classes, so import texts of another class too"
        )
