"""Pixel AUROC of an anomaly model from the defect masks stored in its project.

The figure is computed the way ``modeldesk evaluate MODEL FOLDER`` computes it on an inspection folder
(the task trainer's ``evaluate`` with ``masks``: sample key -> mask file, white = defect): the stored
masks are written as such files into a scratch folder for the run, so the in-app figure and the
folder's are one computation. Photos labeled good without a mask count as all good.
"""

from __future__ import annotations

import io
import logging
import shutil
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from modeldesk.datasets.anomaly_folders import DEFECT_LABEL
from modeldesk.datasets.defect_masks import has_defect_masks, is_good_label, read_defect_mask

log = logging.getLogger(__name__)

__all__ = ["DEFECT_LABEL", "is_good_label", "project_has_defect_masks", "stored_pixel_auroc"]


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
    records = {s.content_hash: s for s in store.samples(project)}
    scratch = Path(tempfile.mkdtemp(prefix="defect-masks-", dir=ws.paths.tmp))
    try:
        masks = {}
        for sample in samples:
            defect = read_defect_mask(store, records[sample.key])
            if defect is None:
                continue
            buffer = io.BytesIO()
            Image.fromarray(np.where(defect, 255, 0).astype(np.uint8), mode="L").save(buffer, format="PNG")
            path = scratch / f"{sample.key}.png"
            path.write_bytes(buffer.getvalue())
            masks[sample.key] = path
        if not masks:
            return None
        metrics = get_trainer(project.task).evaluate(
            ws.model_path(model_id), samples, progress=progress, masks=masks
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    log.info(
        "pixel AUROC of %s on %d photos (%d masks): %s",
        model_id,
        len(samples),
        len(masks),
        metrics["pixel_auroc"],
    )
    return {"pixel_auroc": metrics.get("pixel_auroc"), "masks": len(masks), "photos": len(samples)}
