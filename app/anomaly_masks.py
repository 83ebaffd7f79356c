"""Pixel AUROC of an anomaly model from the defect masks stored in its project.

The figure is computed the way ``modeldesk evaluate MODEL FOLDER`` computes it on an inspection folder
(the task trainer's ``evaluate`` with ``masks``: sample key -> mask), with the stored masks read as they
are needed (:class:`StoredDefectMasks`), so the in-app figure and the folder's are one computation.
Training measures it too (:func:`defect_mask_options` hands the same masks to the trainer), and the
saved figure is what the Evaluate page shows. Photos labeled good without a mask count as all good.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

import numpy as np

from modeldesk.datasets.anomaly_folders import DEFECT_LABEL
from modeldesk.datasets.defect_masks import has_defect_masks, is_good_label, read_defect_mask
from modeldesk.datasets.masks import MaskError, mask_path

log = logging.getLogger(__name__)

__all__ = [
    "DEFECT_LABEL",
    "StoredDefectMasks",
    "defect_mask_options",
    "is_good_label",
    "project_has_defect_masks",
    "stored_pixel_auroc",
]

#: the train option of a trainer that measures pixel AUROC on the project's stored defect masks
OPTION = "defect_masks"


class StoredDefectMasks(Mapping):
    """Content hash -> the stored defect mask ((H, W) bool, True = defect) of each photo of ``project``
    that has a mask file; each mask is read from its file when asked for (a mask that cannot be read is
    logged and left out)."""

    def __init__(self, store, project):
        self.store = store
        self._samples = {
            s.content_hash: s
            for s in store.samples(store.get_project(project))
            if s.path is not None and mask_path(store, s).is_file()
        }

    def __getitem__(self, key: str) -> np.ndarray:
        try:
            mask = read_defect_mask(self.store, self._samples[key])
        except MaskError as exc:
            log.warning("%s", exc)
            mask = None
        if mask is None:
            raise KeyError(key)
        return mask

    def __contains__(self, key) -> bool:  # a file's presence: nothing is decoded
        return key in self._samples

    def __iter__(self) -> Iterator[str]:
        return iter(self._samples)

    def __len__(self) -> int:
        return len(self._samples)


def defect_mask_options(store, project, trainer) -> dict:
    """``{"defect_masks": StoredDefectMasks}`` for a trainer that takes them (its ``train_options``
    name the option) when the project has stored masks, so training saves the pixel AUROC; else {}."""
    if OPTION not in getattr(trainer, "train_options", {}):
        return {}
    masks = StoredDefectMasks(store, project)
    return {OPTION: masks} if len(masks) else {}


def project_has_defect_masks(ws, model_id: str) -> bool:
    """Whether the project ``model_id`` was trained in holds any stored defect mask."""
    try:
        project = ws.store.get_model(str(model_id))["project"]
    except KeyError:  # an exported artifact: no project
        return False
    return has_defect_masks(ws.store, project)


def stored_pixel_auroc(ws, model_id: str, keys=None, *, progress=None) -> dict | None:
    """``{"pixel_auroc", "masks", "photos"}`` of ``model_id`` on its project's labeled photos (only those
    whose content hash is in ``keys`` when given, e.g. the report's test photos), scored against the
    stored defect masks; None when the project holds no mask or none of the photos has one."""
    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.trainers.tasks import get_trainer

    if not project_has_defect_masks(ws, model_id):
        return None
    store = ws.store
    project = store.get_project(store.get_model(str(model_id))["project"])
    wanted = None if keys is None else set(keys)
    samples = [s for s in labeled_samples(store, project) if wanted is None or s.key in wanted]
    masks = StoredDefectMasks(store, project)
    if not any(s.key in masks for s in samples):
        return None
    metrics = get_trainer(project.task).evaluate(
        ws.model_path(model_id), samples, progress=progress, masks=masks
    )
    found = metrics.get("masks", 0)
    log.info(
        "pixel AUROC of %s on %d photos (%d masks): %s", model_id, len(samples), found, metrics["pixel_auroc"]
    )
    return {"pixel_auroc": metrics.get("pixel_auroc"), "masks": found, "photos": len(samples)}
