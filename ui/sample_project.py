"""The first-run sample project: ~60 small images of three shapes, made on the spot and imported.

Qt-free on purpose: it runs in a worker thread and composes Workspace calls only.
"""

from __future__ import annotations

import random
import shutil
import uuid

from modeldesk.app.sample_data import make_shapes_folder

SAMPLE_NAME = "Shapes (sample)"


def unique_name(taken, base: str = SAMPLE_NAME) -> str:
    """``base``, or ``base 2``, ``base 3``... whichever is free in ``taken``."""
    taken = {t.casefold() for t in taken}
    name, n = base, 2
    while name.casefold() in taken:
        name, n = f"{base} {n}", n + 1
    return name


def make_sample_project(
    ws,
    *,
    per_class: int = 20,
    unlabeled_per_class: int = 4,
    image_size: int = 160,
    progress=None,
    should_stop=None,
) -> dict:
    """Create a sample image-classification project and import generated shape images into it.

    Parameters
    ----------
    ws : Workspace
    per_class : int
        Images per class (three classes: circle, square, triangle).
    unlabeled_per_class : int
        How many of each class come in without their label, to be labeled by hand.
    progress, should_stop : callable, optional
        Passed to ``ws.import_data``.

    Returns
    -------
    dict
        ``{"project": name, "report": <import report>}``.
    """
    name = unique_name(p["name"] for p in ws.list_projects())
    folder = ws.paths.tmp / f"sample-{uuid.uuid4().hex[:8]}"
    try:
        make_shapes_folder(folder, per_class=per_class, size=image_size)
        loose = []
        for class_folder in sorted(p for p in folder.iterdir() if p.is_dir()):
            # a few loose files at the top level come in unlabeled: something to try the Label step on
            for image in sorted(class_folder.iterdir())[-unlabeled_per_class:] if unlabeled_per_class else []:
                loose.append(image)
        random.Random(0).shuffle(loose)  # mixed classes, the same order every time
        for number, image in enumerate(loose):
            image.rename(folder / f"photo_{number + 1:02d}{image.suffix}")  # the name must not tell the class
        ws.create_project(name, "image-classification")
        report = ws.import_data(name, folder, format="folder", progress=progress, should_stop=should_stop)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"project": name, "report": report}
