"""Image tagging: two shapes that can appear together, each found where it is drawn."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from modeldesk.app.workspace import Workspace
from modeldesk.trainers.image.multilabel import best_thresholds


def _scene(rng, disc: bool, bar: bool) -> Image.Image:
    image = Image.new("RGB", (96, 96), tuple(int(v) for v in rng.integers(90, 140, 3)))
    draw = ImageDraw.Draw(image)
    if disc:
        x, y = rng.integers(4, 40, 2)
        draw.ellipse([x, y, x + 30, y + 30], fill=(220, 40, 40))
    if bar:
        x, y = rng.integers(50, 80), rng.integers(4, 50)
        draw.rectangle([x, y, x + 10, y + 40], fill=(30, 60, 220))
    return image


def _tagged_folders(root, seed, per_kind):
    """A folder per tag; an image with both shapes sits in both folders, so it imports with both tags."""
    rng = np.random.default_rng(seed)
    for tag in ("disc", "bar"):
        (root / tag).mkdir(parents=True, exist_ok=True)
    for i in range(per_kind):
        for disc, bar in ((True, False), (False, True), (True, True)):
            image = _scene(rng, disc, bar)
            for tag, present in (("disc", disc), ("bar", bar)):
                if present:
                    image.save(root / tag / f"{int(disc)}{int(bar)}-{i}.png")


def test_multilabel_model_finds_both_tags_where_both_are_drawn(tmp_path):
    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("shapes", "image-multilabel")
        _tagged_folders(tmp_path / "data", seed=0, per_kind=14)
        ws.import_data("shapes", tmp_path / "data")
        stats = ws.stats("shapes")
        assert stats["labels"] == {"bar": 28, "disc": 28}  # 14 with both shapes carry both tags

        result = ws.train("shapes", "image-multilabel/standard")
        assert result["metrics"]["map"] > 0.9

        rng = np.random.default_rng(99)
        unseen = {}
        for name, disc, bar in (("both", True, True), ("disc", True, False), ("bar", False, True)):
            for i in range(4):
                path = tmp_path / f"{name}{i}.png"
                _scene(rng, disc, bar).save(path)
                unseen[path] = {tag for tag, on in (("disc", disc), ("bar", bar)) if on}
        answers = ws.predict(result["model"], list(unseen))
        right = sum(set(a["tags"]) == unseen[path] for a, path in zip(answers, unseen))
        assert right >= 11, [(a["tags"], sorted(unseen[p])) for a, p in zip(answers, unseen)]
        both = [a for a, p in zip(answers, unseen) if len(unseen[p]) == 2]
        assert all(set(a["tags"]) == {"disc", "bar"} for a in both)
    finally:
        ws.close()


def test_thresholds_sit_between_the_classes_on_validation_scores():
    Y = np.array([[1, 0], [1, 0], [0, 1], [0, 0]])
    proba = np.array([[0.9, 0.2], [0.7, 0.1], [0.3, 0.6], [0.2, 0.3]])
    thresholds = best_thresholds(Y, proba)
    assert 0.3 < thresholds[0] <= 0.7 and 0.3 < thresholds[1] <= 0.6


def test_one_tag_on_every_image_is_refused(tmp_path):
    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("one", "image-multilabel")
        (tmp_path / "d" / "disc").mkdir(parents=True)
        rng = np.random.default_rng(1)
        for i in range(6):
            _scene(rng, True, False).save(tmp_path / "d" / "disc" / f"{i}.png")
        ws.import_data("one", tmp_path / "d")
        with pytest.raises(ValueError, match="at least 2 classes"):
            ws.submit_training("one", "image-multilabel/standard")
    finally:
        ws.close()
