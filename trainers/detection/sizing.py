"""Small objects: a detection template's input size chosen from the boxes it is given.

A template with ``small_objects_size`` looks at the photo at that larger size when the boxes of some
class are small at its own size (their median side under :data:`SMALL_BOX_PX`), so a class such as
blood platelets is not left to a cell or two of the grid. Only the training and validation photos'
boxes decide, never the test photos'.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from modeldesk.deploy.preprocess import ImageDecodeError, image_size, letterbox_scale

#: a class whose median box side (the square root of its area) at the template's input size is below
#: this is small: 1.5 cells of the stride-16 grid. Measured: CamVid's pedestrians (13 px at 320) and cars
#: (22 px) gain from 480 px (mAP50 0.075 -> 0.153 in CV), raccoons (186 px) do not (0.888 -> 0.872)
SMALL_BOX_PX = 24.0


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


def sized_for(template, samples):
    """``template`` at its ``small_objects_size`` when a class's boxes are small at its own size (the
    classes are named in its ``small_classes``, its time budget grown with the area), else
    ``template`` itself."""
    if not template.small_objects_size:
        return template
    chosen = [s for s in samples if s.split != "test"] or list(samples)
    small = small_classes(chosen, template.neck.size)
    if not small:
        return template
    size = template.small_objects_size
    return replace(
        template.at_size(size),
        # the same search on more pixels: its default budget grows with the letterbox's area
        time_budget_s=float(round(template.time_budget_s * (size / template.neck.size) ** 2)),
        small_objects_size=None,  # sized once: at the larger size its classes may still be small
        small_classes=tuple((label, round(side, 1)) for label, side in small.items()),
    )


def small_objects_note(small_classes, size: int, sized: int) -> str:
    """One sentence telling the user why the model looks at ``sized`` px instead of ``size``."""
    names = [f"{label} (about {side:.0f} px)" for label, side in small_classes]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return (
        f"Some objects are small at {size} px: {listed}. This model looks at each photo at {sized} px "
        "to see them, so it takes longer to train and to run."
    )


def for_card(template, card: dict):
    """The template as it trained the model of ``card``: at its small-objects size where the card's
    neck says so."""
    size = template.small_objects_size
    if size and card.get("neck") == template.at_size(size).neck.name:
        return template.at_size(size)
    return template
