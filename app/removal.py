"""Removing samples from a project so that the last removal can be undone (Ctrl+Z on the Data page).

Before the rows go, the samples are written down (kind, source, labels, boxes, split) and their media
copied beside that record under the workspace's ``tmp/removed/``; undoing puts the media back and the
samples in again, in the splits they had. Only the last removal is kept, so the copies never pile up.
"""

from __future__ import annotations

import json
import logging
import shutil
import uuid
from pathlib import Path

from modeldesk.errors import UserError
from modeldesk.fileio import atomic_write

log = logging.getLogger(__name__)

RECORD = "samples.json"


def _folder(ws) -> Path:
    return Path(ws.paths.tmp) / "removed"


def _record(sample) -> dict:
    return {
        "kind": sample.kind,
        "content_hash": sample.content_hash,
        "source": sample.source,
        "ext": sample.path.suffix if sample.path is not None else None,
        "text": sample.text,
        "width": sample.width,
        "height": sample.height,
        "duration": sample.duration,
        "labels": list(sample.labels),
        "boxes": [[b.label, b.x0, b.y0, b.x1, b.y1] for b in sample.boxes],
        "split": sample.split,
    }


def remove_samples(ws, project, sample_ids) -> dict:
    """Remove samples (with their labels and boxes) from ``project``, keeping what undoing needs.

    Returns ``removed`` (how many went) and ``undo`` (the token :func:`restore_samples` takes).
    """
    target = ws.project(project)
    wanted = {int(i) for i in sample_ids}
    samples = [s for s in ws.store.samples(target) if s.id in wanted]
    shutil.rmtree(_folder(ws), ignore_errors=True)  # only the last removal can be undone
    token = uuid.uuid4().hex[:12]
    folder = _folder(ws) / token
    folder.mkdir(parents=True)
    for sample in samples:
        if sample.path is not None and Path(sample.path).is_file():
            shutil.copy2(sample.path, folder / Path(sample.path).name)
    record = {"project": target.name, "samples": [_record(s) for s in samples]}
    atomic_write(folder / RECORD, json.dumps(record).encode("utf-8"))
    removed = ws.store.delete_samples(target, [s.id for s in samples])
    log.info("removed %d samples from %r (undo %s)", removed, target.name, token)
    return {"removed": removed, "undo": token}


def restore_samples(ws, token: str) -> int:
    """Undo the removal ``token`` names: media back, samples back with their labels, boxes and splits.
    Returns how many came back; UserError when that removal can no longer be undone."""
    from modeldesk.datasets import Box, NewSample
    from modeldesk.safejson import JSONLimitError, load_file

    folder = _folder(ws) / str(token)
    try:
        record = load_file(folder / RECORD)
    except (OSError, JSONLimitError):
        raise UserError("that removal can no longer be undone (only the last one can)") from None
    project = ws.project(record["project"])
    items, splits = [], []
    for entry in record["samples"]:
        if entry["ext"]:
            data = (folder / f"{entry['content_hash']}{entry['ext']}").read_bytes()
            ws.store.media.put(data, entry["ext"], entry["content_hash"])
        boxes = [Box(str(b[0]), *map(float, b[1:5])) for b in entry["boxes"]]
        fields = {
            k: entry[k]
            for k in ("kind", "content_hash", "source", "ext", "text", "width", "height", "duration")
        }
        items.append(NewSample(**fields, labels=entry["labels"], boxes=boxes))
        splits.append(entry["split"])
    added = ws.store.add_samples(project, items)
    ws.store.set_splits({sid: split for (sid, is_new), split in zip(added, splits) if is_new})
    shutil.rmtree(folder, ignore_errors=True)
    restored = sum(is_new for _sid, is_new in added)
    log.info("restored %d samples to %r", restored, project.name)
    return restored
