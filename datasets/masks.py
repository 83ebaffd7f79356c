"""Segmentation masks of a project's photos: one PNG per (project, photo) beside the photo's media.

A mask is an (H, W) uint8 array at the photo's (EXIF-oriented) size; a pixel's value is an index into
the project's class list (``Store.labels``: its class names, sorted) and ``VOID`` (255) is "not labeled"
(training and the metrics ignore it). The file, ``media/ab/<photo hash>.p<project id>.mask``, is a
grayscale PNG with a text chunk naming the class of every value (name and label row id, so a renamed
class keeps its pixels and a class added later shifts nothing already stored) and the project's creation
time (a project id SQLite hands out again never inherits an old project's masks). It starts with the
photo's hash, so the workspace cleanup keeps it exactly as long as a sample uses the photo, and its
suffix is not an image's, so ``modeldesk recover`` never takes it for a photo. The classes present in a
mask are also written as the sample's tags: the sample counts as labeled, and the per-class counts and
filters of every page work unchanged.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, PngImagePlugin

from modeldesk.fileio import atomic_write
from modeldesk.safejson import loads

#: the value of a pixel nobody labeled (ignored by training and the metrics)
VOID = 255
#: a mask file's suffix (a PNG inside; not an image suffix, so it is never imported as a photo)
MASK_SUFFIX = ".mask"
_CHUNK = "modeldesk-mask"
#: the project setting that keeps each class's colour slot by label row id (:func:`class_slots`)
COLOR_KEY = "class_colors"


class MaskError(ValueError):
    """A mask that does not fit its photo or its project (the message says what is wrong)."""


def mask_path(store, sample) -> Path:
    """Where the mask of ``sample`` (a ``Sample``) in its project lives."""
    digest = sample.content_hash
    return store.media.root / digest[:2] / f"{digest}.p{sample.project_id}{MASK_SUFFIX}"


def encode_mask(mask: np.ndarray, names, ids, created: float) -> bytes:
    """A PNG of ``mask`` whose values index ``names`` (and their label row ``ids``)."""
    info = PngImagePlugin.PngInfo()
    info.add_text(_CHUNK, json.dumps({"names": list(names), "ids": list(ids), "created": created}))
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(mask, np.uint8), mode="L").save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def decode_mask(path) -> tuple[np.ndarray, dict]:
    """(values, what they mean: ``names``, ``ids``, ``created``) of a stored mask file."""
    with Image.open(path) as image:
        if image.mode != "L" or image.format != "PNG":
            raise MaskError(f"{path}: not a mask file (a grayscale PNG)")
        meta = loads(image.text.get(_CHUNK, "{}"))
        return np.asarray(image, np.uint8).copy(), meta if isinstance(meta, dict) else {}


@dataclass(frozen=True)
class MaskRef:
    """A sample's stored mask as the trainers get it (picklable; reading needs no store).

    ``classes`` is the project's class list; ``lut`` maps each stored value to an index into it (or
    ``VOID``); ``present`` names the classes with pixels.
    """

    path: str
    classes: tuple[str, ...]
    lut: tuple[int, ...]
    present: tuple[str, ...] = ()
    slots: tuple[int, ...] = ()  # each class's colour slot (:func:`class_slots`)

    def read(self) -> np.ndarray:
        """The (H, W) uint8 mask: indices into ``classes``, ``VOID`` where not labeled."""
        values, _ = decode_mask(self.path)
        table = np.full(256, VOID, np.uint8)
        table[: len(self.lut)] = self.lut
        return table[values]


def _lut(meta: dict, classes: list[str], label_ids: dict[str, int], merged=None) -> list[int]:
    """Stored value -> index into ``classes``: by label row id first (renames; a class merged into
    another, ``merged`` old id -> its id now, takes that class), else by name."""
    by_id = {i: name for name, i in label_ids.items()}
    by_id.update({old: by_id[new] for old, new in (merged or {}).items() if new in by_id})
    index = {name: k for k, name in enumerate(classes)}
    names, ids = list(meta.get("names") or []), list(meta.get("ids") or [])
    out = []
    for k, name in enumerate(names):
        now = by_id.get(ids[k]) if k < len(ids) else None
        out.append(index.get(now if now is not None else name, VOID))
    return out


def class_slots(store, project) -> list[int]:
    """Each class's colour slot (an index into a palette), in the order of ``store.labels``.

    A slot is kept with the class's label row (so a rename keeps its colour and a merged class shows the
    colour of the class it went into); a class without one gets the smallest free slot, remembered in
    the project's settings. Adding a class therefore never changes another class's colour."""
    ids = store.label_ids(project)
    kept = {int(k): int(v) for k, v in (store.setting(project, COLOR_KEY, {}) or {}).items()}
    kept = {k: v for k, v in kept.items() if k in ids.values()}
    slots, changed = {}, False
    for name in store.labels(project):
        label_id = ids[name]
        if label_id not in kept:
            used = set(kept.values())
            kept[label_id] = next(k for k in range(len(used) + 1) if k not in used)
            changed = True
        slots[name] = kept[label_id]
    if changed:
        store.set_setting(project, COLOR_KEY, {str(k): v for k, v in kept.items()})
    return [slots[name] for name in store.labels(project)]


def mask_ref(
    store, project, sample, *, classes=None, label_ids=None, merged=None, slots=None
) -> MaskRef | None:
    """The stored mask of ``sample`` in ``project`` as a :class:`MaskRef` (None when it has none).

    ``classes``, ``label_ids``, ``merged`` and ``slots`` (``store.labels``/``store.label_ids``/
    ``store.merged_labels``/:func:`class_slots` of the project) save queries when many are read."""
    path = mask_path(store, sample)
    if not path.is_file():
        return None
    try:
        _, meta = _read_meta(path)
    except (OSError, ValueError) as exc:
        raise MaskError(f"{path}: the mask of {sample.source} cannot be read ({exc})") from None
    if meta.get("created") != project.created:
        return None  # left by a deleted project whose id was handed out again
    classes = store.labels(project) if classes is None else list(classes)
    lut = _lut(
        meta,
        classes,
        store.label_ids(project) if label_ids is None else label_ids,
        store.merged_labels(project) if merged is None else merged,
    )
    present = tuple(sorted(set(sample.labels) & set(classes)))
    slots = class_slots(store, project) if slots is None else slots
    return MaskRef(str(path), tuple(classes), tuple(lut), present, tuple(slots))


def _read_meta(path: Path) -> tuple[tuple[int, int], dict]:
    with Image.open(path) as image:
        meta = loads(image.text.get(_CHUNK, "{}"))
        return image.size, meta if isinstance(meta, dict) else {}


def read_mask(store, sample_id: int) -> np.ndarray | None:
    """The mask of a sample as indices into its project's current class list; None when unlabeled."""
    sample = store.get_sample(int(sample_id))
    project = store.get_project(sample.project_id)
    ref = mask_ref(store, project, sample)
    return None if ref is None else ref.read()


def check_mask(mask, sample, n_classes: int) -> np.ndarray:
    """``mask`` as a uint8 (H, W) array for ``sample``; MaskError saying what does not fit."""
    array = np.asarray(mask)
    if array.ndim != 2:
        raise MaskError(f"a mask must be a 2-D array (height, width), not of shape {array.shape}")
    if not (np.issubdtype(array.dtype, np.integer) or array.dtype == bool):
        raise MaskError(f"a mask must hold class indices (integers), not {array.dtype} values")
    if sample.width is not None and array.shape != (sample.height, sample.width):
        raise MaskError(
            f"the mask is {array.shape[1]}x{array.shape[0]} pixels but the photo {sample.source} is "
            f"{sample.width}x{sample.height}"
        )
    bad = (array != VOID) & ((array < 0) | (array >= n_classes))
    if bad.any():
        value = int(array[bad].flat[0])
        raise MaskError(
            f"mask value {value} is not a class: the project has {n_classes} classes "
            f"(values 0-{n_classes - 1}, and {VOID} for not labeled)"
        )
    return array.astype(np.uint8)


def write_mask(store, sample_id: int, mask) -> list[str]:
    """Store ``mask`` (indices into the project's class list, ``VOID`` = not labeled) for a sample.

    The PNG is written atomically, then the classes it shows become the sample's tags (so it counts as
    labeled). ``None`` or a mask with no labeled pixel removes the mask. Returns the classes present.
    """
    sample = store.get_sample(int(sample_id))
    project = store.get_project(sample.project_id)
    classes = store.labels(project)
    if len(classes) >= VOID:
        raise MaskError(f"a mask can tell at most {VOID} classes apart; {project.name!r} has {len(classes)}")
    path = mask_path(store, sample)
    if mask is None:
        values = np.zeros(0, np.uint8)
    else:
        values = check_mask(mask, sample, len(classes))
    present = sorted({classes[v] for v in np.unique(values) if v != VOID})
    if present:
        ids = store.label_ids(project)
        atomic_write(path, encode_mask(values, classes, [ids[n] for n in classes], project.created))
        store.set_tags(sample.id, present)
    else:
        store.set_tags(sample.id, [])
        path.unlink(missing_ok=True)
    return present


__all__ = [
    "MASK_SUFFIX",
    "VOID",
    "MaskError",
    "MaskRef",
    "check_mask",
    "class_slots",
    "decode_mask",
    "encode_mask",
    "mask_path",
    "mask_ref",
    "read_mask",
    "write_mask",
]
