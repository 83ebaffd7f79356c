"""Small objects: a detection template's input size chosen from the boxes it is given.

A template with ``small_objects_sizes`` looks at the photo at a larger size when the boxes of some
class are small at its own size (their median side under :data:`SMALL_BOX_PX`), so a class such as
blood platelets is not left to a cell or two of the grid: the first of those sizes at which the
smallest class's median box reaches :data:`SMALL_BOX_PX`, else the largest, and never one whose
training would not fit in memory. Only the training and validation photos' boxes decide, never the
test photos'.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from modeldesk.deploy.preprocess import ImageDecodeError, image_size, letterbox_scale

#: a class whose median box side (the square root of its area) at the template's input size is below
#: this is small: 1.5 cells of the stride-16 grid. Measured (4-fold CV, mAP50): CamVid's pedestrians
#: (12 px at 320) and cars (22 px) gain from 480 px (0.075 -> 0.153) and again from 640 (0.224, the
#: pedestrians 25 px there); raccoons (186 px) do not (0.888 -> 0.872 at 480)
SMALL_BOX_PX = 24.0
#: the share of the memory available when training starts that training may take
MEMORY_SHARE = 0.8
#: a training run's peak memory as (fixed bytes, times its maps' bytes), measured (the accurate recipe
#: on 191 magnetic tiles, 3 training views, peak RSS): 1.7 / 2.5 / 3.8 GB at 320 / 480 / 640 px for 0.32 /
#: 0.73 / 1.29 GB of maps, at its peak while the head or the box refiner is fitted. It was 3.4 / 7.0 /
#: 12.5 GB while the test photos were predicted 16 at a time (``deploy.image_input.image_batch_size``),
#: then 1.9 / 4.0 / 6.6 GB while every photo's cells were kept (2.2x the maps) (2026-12-07)
TRAINING_MEMORY = (1.0e9, 2.15)


def median_box_sides(samples, size: int) -> dict[str, float]:
    """Label -> the median side (square root of the area) of its boxes, in pixels of a ``size``
    letterbox; photos that cannot be read are left out (the trainer reports them)."""
    sides: dict[str, list[float]] = {}
    for sample in samples:
        try:
            scale = letterbox_scale(*image_size(sample.path), size)
        except (ImageDecodeError, OSError):
            continue
        for box in sample.target:
            area = max(box.x1 - box.x0, 0.0) * max(box.y1 - box.y0, 0.0)
            sides.setdefault(str(box.label), []).append(scale * float(np.sqrt(area)))
    return {label: float(np.median(values)) for label, values in sorted(sides.items())}


def small_classes(samples, size: int) -> dict[str, float]:
    """The classes whose median box side at ``size`` is below :data:`SMALL_BOX_PX`, with that side."""
    return {label: side for label, side in median_box_sides(samples, size).items() if side < SMALL_BOX_PX}


def maps_bytes(template, size: int, n_photos: int) -> int:
    """Memory the backbone maps of ``n_photos`` take in training at input ``size`` (every cached
    level, every training view, float32)."""
    from modeldesk.trainers.backbones import get_backbone

    neck = template.at_size(size).neck
    per_view = sum(c * h * w for c, h, w in neck.map_shapes(get_backbone(template.backbone)).values())
    return 4 * per_view * len(template.views) * n_photos


def training_bytes(template, size: int, n_photos: int) -> float:
    """Peak memory of training ``template`` at input ``size`` on ``n_photos`` (:data:`TRAINING_MEMORY`)."""
    fixed, per_map_byte = TRAINING_MEMORY
    return fixed + per_map_byte * maps_bytes(template, size, n_photos)


def available_memory() -> int:
    """Bytes of memory available now."""
    import psutil

    return int(psutil.virtual_memory().available)


def sized_for(template, samples, *, memory: int | None = None):
    """``template`` at the size its small objects need (see the module), its time budget grown with
    the area and the small classes named in its ``small_classes`` (at its own size when no larger
    one fits in ``memory``); else ``template`` itself.

    ``memory``: bytes training may use (default: :data:`MEMORY_SHARE` of what is available now).
    """
    if not template.small_objects_sizes:
        return template
    chosen = [s for s in samples if s.split != "test"] or list(samples)
    small = small_classes(chosen, template.neck.size)
    if not small:
        return template
    smallest, base = min(small.values()), template.neck.size
    sizes = template.small_objects_sizes
    size = next((s for s in sizes if smallest * s / base >= SMALL_BOX_PX), sizes[-1])
    memory = MEMORY_SHARE * available_memory() if memory is None else memory
    fitting = [s for s in sizes if s <= size and training_bytes(template, s, len(samples)) <= memory]
    named = tuple((label, round(side, 1)) for label, side in small.items())
    if not fitting:  # the small classes named, the size kept: the trainer says why
        return replace(template, small_objects_sizes=(), small_classes=named)
    size = fitting[-1]
    return replace(
        template.at_size(size),
        # the same search on more pixels: its default budget grows with the letterbox's area
        time_budget_s=float(round(template.time_budget_s * (size / base) ** 2)),
        small_objects_sizes=(),  # sized once: at the larger size its classes may still be small
        small_classes=named,
    )


def small_objects_note(small_classes, size: int, sized: int | None) -> str:
    """What the user is told: why the model looks at ``sized`` px instead of ``size``, or (``sized``
    None) that it could not for want of memory."""
    names = [f"{label} (about {side:.0f} px)" for label, side in small_classes]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    if sized is None:
        return (
            f"Some objects are small at {size} px: {listed}. Looking at the photos more sharply would "
            "need more memory than is free: close other programs and train again to find them better."
        )
    return (
        f"Some objects are small at {size} px: {listed}. This model looks at each photo at {sized} px "
        "to see them, so it takes longer to train and to run."
    )


def for_card(template, card: dict):
    """The template as it trained the model of ``card``: at the small-objects size its card's neck
    names, where that is one of the template's."""
    for size in template.small_objects_sizes:
        if card.get("neck") == template.at_size(size).neck.name:
            return template.at_size(size)
    return template
