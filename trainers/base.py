"""What every task's trainer shares: the evaluation of an exported model, the split the metrics are
measured on, the parity rule of the export and the card's split counts (the card's ``versions`` are
``trainers/versions.py``'s).

A trainer subclasses :class:`TaskTrainer`, names its ``evaluator`` and writes its own ``check``,
``estimate`` and ``train`` (the features, the head search and the graph are the task's own).
"""

from __future__ import annotations

import numpy as np

#: how far the exported graph may differ from the training path's scores before the export fails
PARITY_TOLERANCE = 1e-4


class TaskTrainer:
    """The shared half of the :class:`~modeldesk.trainers.tasks.Trainer` protocol.

    Attributes
    ----------
    evaluator : ``"module:function"`` that scores an exported model on labeled samples
        (``function(artifact_path, samples, progress=...) -> metrics``).
    """

    evaluator = "modeldesk.trainers.evaluation:evaluate_labels"

    def evaluate(self, artifact_path, samples, *, progress=None) -> dict:
        """The metrics of an exported model on labeled samples, by the task's ``evaluator``."""
        from modeldesk.trainers.tasks import resolve

        return resolve(self.evaluator)(artifact_path, samples, progress=progress)


def evaluation_split(
    test: np.ndarray, val: np.ndarray, train: np.ndarray, warnings: list | None = None, why: str = ""
) -> tuple[np.ndarray, str]:
    """The samples the metrics are measured on and the split's name: the test split, else the
    validation split, else (``why`` added to ``warnings``) the training samples."""
    if len(test):
        return test, "test"
    if len(val):
        return val, "val"
    if warnings is not None and why:
        warnings.append(why)
    return train, "train"


def split_counts(train, val, test) -> dict:
    """``card["training"]["samples"]``: how many samples each split held."""
    return {"train": int(len(train)), "val": int(len(val)), "test": int(len(test))}
