"""Segmentation masks: the Workspace calls that read and write a photo's class-per-pixel mask.

:class:`MaskCalls` is mixed into :class:`~modeldesk.app.workspace.Workspace`. A mask is an (H, W)
uint8 numpy array at the photo's size (``sample(id).width/height``); a value is an index into the
project's class list (:meth:`labels`, sorted names, as it is at the time of the call) and 255 means
"not labeled" (ignored by training and the metrics). Storage: ``datasets/masks.py``.
"""

from __future__ import annotations

import logging

import numpy as np

from modeldesk.datasets.defect_masks import read_defect_mask, write_defect_mask
from modeldesk.datasets.masks import VOID, read_mask, write_mask

log = logging.getLogger(__name__)

__all__ = ["VOID", "MaskCalls"]


class MaskCalls:
    """Workspace calls on segmentation masks (mixed into ``Workspace``; uses its ``store``)."""

    def sample_mask(self, sample_id: int) -> np.ndarray | None:
        """The photo's mask (H, W) uint8: indices into :meth:`labels` of its project, 255 = not labeled;
        None when nothing of it is labeled yet."""
        return read_mask(self.store, int(sample_id))

    def set_sample_mask(self, sample_id: int, mask) -> None:
        """Save a photo's mask (same layout as :meth:`sample_mask`; None or all-255 clears it).

        The PNG is written atomically and the classes it shows become the sample's labels, so it
        counts as labeled. ``datasets.masks.MaskError`` (a ValueError) says what does not fit: the
        shape against the photo's size, a value that is no class.
        """
        present = write_mask(self.store, int(sample_id), mask)
        log.info("saved the mask of sample %s (%s)", sample_id, ", ".join(present) or "nothing labeled")

    def defect_mask(self, sample_id: int) -> np.ndarray | None:
        """Where the defect is on a photo of an anomaly project: (H, W) bool, True = defect; None when
        no mask is stored (a good photo's is then all good)."""
        return read_defect_mask(self.store, int(sample_id))

    def set_defect_mask(self, sample_id: int, defect, *, label: str | None = None) -> None:
        """Save where the defect is on a photo of an anomaly project ((H, W), non-zero = defect; None or
        nothing marked removes it), written atomically. ``label``, when given, is set as the photo's
        label in the same call (painting a defect on a photo labeled good makes it a defect)."""
        stored = write_defect_mask(self.store, int(sample_id), defect)
        if label is not None:
            self.store.set_label(int(sample_id), label)
        log.info(
            "saved the defect mask of sample %s (%s)", sample_id, "a defect marked" if stored else "none"
        )
