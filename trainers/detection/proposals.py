"""A detector's box proposals for the photos still without boxes: how sure it is about each photo,
and the proposals file kept beside the model (``proposals.json``: sample id -> boxes)."""

from __future__ import annotations

import json
from pathlib import Path

PROPOSALS_FILE = "proposals.json"
#: boxes scored under this are not proposals, and do not count for how sure the detector is
FLOOR = 0.05


def box_confidence(boxes: list, threshold: float) -> float:
    """How sure a detector is about a photo, 0..1: the distance of its most borderline box score
    (any box over 0.05) from the threshold, relative to the room on that side; 1 without any box."""
    distances = [
        abs(b["score"] - threshold) / max(threshold if b["score"] < threshold else 1 - threshold, 1e-6)
        for b in boxes
        if b["score"] >= FLOOR
    ]
    return float(min(min(distances), 1.0)) if distances else 1.0


def proposal_rows(sample_ids, predictions, threshold: float) -> tuple[list, dict]:
    """(predictions-table rows (sample id, best label, :func:`box_confidence`), sample id -> the boxes
    at or above ``threshold``) for one chunk; a None prediction (an unreadable photo) is left out."""
    rows, proposals = [], {}
    for sample_id, prediction in zip(sample_ids, predictions):
        if prediction is None:
            continue
        boxes = prediction["boxes"]
        kept = [b for b in boxes if b["score"] >= threshold]
        proposals[str(sample_id)] = kept
        rows.append((sample_id, kept[0]["label"] if kept else "", box_confidence(boxes, threshold)))
    return rows, proposals


def write_proposals(model_dir, proposals: dict) -> None:
    """Replace the model's proposals file (written to a temporary name, then renamed)."""
    path = Path(model_dir) / PROPOSALS_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(proposals), encoding="utf-8")
    tmp.replace(path)


def read_proposals(model_dir, keep) -> dict:
    """sample id -> proposed boxes for the sample ids in ``keep`` ({} without a readable file)."""
    try:
        proposals = json.loads((Path(model_dir) / PROPOSALS_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return {int(sid): boxes for sid, boxes in proposals.items() if int(sid) in keep}
