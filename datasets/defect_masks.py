"""Defect masks of an anomaly project's photos: where on a photo the defect is.

They live in the segmentation mask storage (:mod:`.masks`: one atomically written PNG per project and
photo beside its media) with a vocabulary of their own, :data:`DEFECT_CLASSES`: value 0 is a good
pixel, 1 a defect pixel. An anomaly project's classes are defect kinds (``crack``, ``hole``), not pixel
classes, so writing a defect mask leaves the photo's label alone (unlike ``write_mask``, which makes a
segmentation photo's classes its tags). A good photo without a stored mask is implicitly all good.

The inspection folder layout keeps them as ``masks/<photo stem>.png``, white = defect:
:func:`attach_defect_masks` imports them and :func:`write_inspection` exports them back.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from modeldesk.fileio import atomic_write

from .anomaly_folders import DEFECT_LABEL, GOOD_LABEL, mask_files
from .masks import MaskError, decode_mask, encode_mask, mask_path

#: what a stored defect mask's values mean (0 good, 1 defect)
DEFECT_CLASSES = (GOOD_LABEL, DEFECT_LABEL)
_DEFECT = DEFECT_CLASSES.index(DEFECT_LABEL)
#: a mask file's gray level above this is defect (white), at or below it good (black)
WHITE_ABOVE = 127


def is_good_label(label) -> bool:
    """Whether a photo's label means a good part (the spellings the inspection layout accepts)."""
    return str(label or "").strip().lower() in ("good", "ok", "normal", "pass")


def write_defect_mask(store, sample_id: int, defect) -> bool:
    """Store where the defect is on a photo: ``defect`` is an (H, W) array at the photo's size, true
    (non-zero) where the defect is. None or an array with no defect pixel removes the stored mask.

    The PNG is written atomically; the photo's label is not changed. Returns whether a mask is stored.
    MaskError (a ValueError) when the shape does not fit the photo.
    """
    sample = store.get_sample(int(sample_id))
    path = mask_path(store, sample)
    if defect is None or not np.asarray(defect).any():
        path.unlink(missing_ok=True)
        return False
    array = np.asarray(defect)
    if array.ndim != 2:
        raise MaskError(f"a defect mask must be a 2-D array (height, width), not of shape {array.shape}")
    if sample.width is not None and array.shape != (sample.height, sample.width):
        raise MaskError(
            f"the mask is {array.shape[1]}x{array.shape[0]} pixels but the photo {sample.source} is "
            f"{sample.width}x{sample.height}"
        )
    project = store.get_project(sample.project_id)
    values = np.where(array != 0, _DEFECT, 1 - _DEFECT).astype(np.uint8)
    atomic_write(path, encode_mask(values, DEFECT_CLASSES, [], project.created))
    return True


def read_defect_mask(store, sample) -> np.ndarray | None:
    """The photo's stored defect mask, (H, W) bool (True = defect); None when it has none (a good
    photo's is then all False). ``sample`` is a ``Sample`` or its id."""
    if not hasattr(sample, "content_hash"):
        sample = store.get_sample(int(sample))
    path = mask_path(store, sample)
    if not path.is_file():
        return None
    try:
        values, meta = decode_mask(path)
    except (OSError, ValueError) as exc:
        raise MaskError(f"{path}: the defect mask of {sample.source} cannot be read ({exc})") from None
    if meta.get("created") != store.get_project(sample.project_id).created:
        return None  # left by a deleted project whose id was handed out again
    names = list(meta.get("names") or [])
    defect_values = [k for k, name in enumerate(names) if not is_good_label(name)]
    return np.isin(values, defect_values)


def has_defect_masks(store, project) -> bool:
    """Whether any photo of the project has a stored defect mask."""
    project = store.get_project(project)
    return any(
        mask_path(store, s).is_file() and read_defect_mask(store, s) is not None  # a stat before a decode
        for s in store.samples(project)
        if s.path is not None
    )


def load_defect_file(path, size: tuple[int, int] | None) -> np.ndarray:
    """A defect mask file (white = defect) as an (H, W) bool array; MaskError naming the file when its
    size (width, height) differs from ``size``. The size is checked before the pixels are decoded."""
    with Image.open(path) as image:
        if size is not None and image.size != tuple(size):
            raise MaskError(
                f"the mask {Path(path).name} is {image.size[0]}x{image.size[1]} pixels but its photo is "
                f"{size[0]}x{size[1]}"
            )
        return np.asarray(image.convert("L")) > WHITE_ABOVE


def attach_defect_masks(store, project, root: Path, report, *, should_stop=None) -> int:
    """Store ``root/masks/<stem>.png`` (white = defect) for every photo imported from ``root`` that has
    one; returns how many. A mask whose size differs from its photo's, or that cannot be read, is
    listed in ``report.failed`` by its file; the photo stays imported (without the mask)."""
    samples = {s.source: s for s in store.samples(project) if s.path is not None}
    found = mask_files(root, list(samples))
    done = 0
    for source, file in sorted(found.items()):
        if should_stop is not None and should_stop():
            break
        sample = samples[source]
        size = (sample.width, sample.height) if sample.width else None
        try:
            defect = load_defect_file(file, size)
            if not defect.any() and not is_good_label(sample.labels[0] if sample.labels else ""):
                report.warn(f"{file}: the mask of the defect photo {source} marks no defect (no white)")
            write_defect_mask(store, sample.id, defect)
            done += 1
        except MaskError as exc:
            report.fail(str(file), f"{exc} ({source})")
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            report.fail(str(file), f"cannot read the mask: {exc}")
    return done


def _unique_stem(used: set[str], sample) -> str:
    stem = Path(sample.source.replace("\\", "/")).stem or "photo"
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)
    if stem.lower() in used:
        stem = f"{stem}_{sample.content_hash[:10]}"
    used.add(stem.lower())
    return stem


def write_inspection(store, project, out: Path, samples) -> tuple[int, int]:
    """Export an anomaly project in the inspection layout: ``good/``, ``defect/<kind>/`` (``defect/``
    for photos labeled plain ``defect``), ``masks/<stem>.png`` (white = defect) for every photo with a
    stored mask. Unlabeled photos are left out. Photo stems are unique, so every mask finds its photo
    again on import. Returns (photos, files) written."""
    from .exporting import _copy

    used: set[str] = set()
    count = files = 0
    for sample in samples:
        if not sample.labels:
            continue
        label = sample.labels[0]
        if is_good_label(label):
            folder = out / GOOD_LABEL
        elif label == DEFECT_LABEL:
            folder = out / DEFECT_LABEL
        else:
            folder = out / DEFECT_LABEL / label
        stem = _unique_stem(used, sample)
        _copy(sample, folder / f"{stem}{sample.path.suffix}")
        count += 1
        files += 1
        defect = read_defect_mask(store, sample)
        if defect is None:
            continue
        buffer = io.BytesIO()
        Image.fromarray(np.where(defect, 255, 0).astype(np.uint8), mode="L").save(buffer, format="PNG")
        atomic_write(out / "masks" / f"{stem}.png", buffer.getvalue())
        files += 1
    return count, files


__all__ = [
    "DEFECT_CLASSES",
    "attach_defect_masks",
    "has_defect_masks",
    "is_good_label",
    "load_defect_file",
    "read_defect_mask",
    "write_defect_mask",
    "write_inspection",
]
