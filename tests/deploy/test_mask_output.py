"""The segmentation output: areas per class, the mask as a PNG, and edge rules on a class's area."""

import base64
import io

import numpy as np
import pytest
from PIL import Image

from modeldesk.datasets.seg_coco import polygon_mask
from modeldesk.deploy.edge.rules import RuleError, check_rule, condition
from modeldesk.deploy.inputs import output_for
from modeldesk.deploy.mask_output import overlay


def _answer():
    card = {"target": "mask", "labels": ["road", "sky", "car"]}
    output = output_for(card)
    mask = np.zeros((1, 4, 10), np.uint8)
    mask[0, :, :6] = 1  # sky: 24 of 40 pixels
    mask[0, 3, 8:] = 2  # car: 2 pixels
    scores = np.full((1, 3, 2, 2), 1 / 3, np.float32)
    return output, output.format([mask, scores])[0]


def test_areas_and_the_largest_class():
    _output, answer = _answer()
    assert answer["areas"] == pytest.approx({"road": 14 / 40, "sky": 24 / 40, "car": 2 / 40})
    assert answer["pixels"] == {"road": 14, "sky": 24, "car": 2}
    assert answer["label"] == "sky" and answer["score"] == pytest.approx(0.6)
    assert answer["size"] == [10, 4] and answer["classes"] == ["road", "sky", "car"]
    assert answer["confidence"] == pytest.approx(1 / 3)


def test_the_service_sends_the_mask_as_a_png_of_class_indices():
    output, answer = _answer()
    sent = output.respond(answer, {})
    assert "mask" not in sent and "class_scores" not in sent and "score_pngs" not in sent
    png = Image.open(io.BytesIO(base64.b64decode(sent["mask_png"])))
    assert png.mode == "P" and png.size == (10, 4)
    np.testing.assert_array_equal(np.asarray(png), answer["mask"])
    assert "mask_png" not in output.respond(answer, {"mask": "0"})
    maps = output.respond(answer, {"scores": "1"})["score_pngs"]
    assert set(maps) == {"road", "sky", "car"}
    assert Image.open(io.BytesIO(base64.b64decode(maps["car"]))).size == (10, 4)


def test_an_overlay_has_the_photos_size():
    _output, answer = _answer()
    drawn = overlay(Image.new("RGB", (10, 4), (0, 0, 0)), answer["mask"])
    assert drawn.size == (10, 4) and drawn.getpixel((0, 0)) != (0, 0, 0)


def test_an_edge_rule_can_watch_the_area_of_a_class():
    _output, answer = _answer()
    rule = check_rule({"when": {"kind": "area", "label": "sky", "score": 0.5}}, ["road", "sky", "car"])
    assert condition(rule["when"], answer)[0]
    rule = check_rule({"when": {"kind": "area", "label": "car", "score": 0.1}}, ["road", "sky", "car"])
    holds, label, area = condition(rule["when"], answer)
    assert not holds and label == "car" and area == pytest.approx(0.05)
    with pytest.raises(RuleError, match="label"):
        check_rule({"when": {"kind": "area", "score": 0.1}})


def test_the_command_line_says_which_classes_cover_the_photo():
    from modeldesk.app.formatting import predictions_text

    _output, answer = _answer()
    text = predictions_text([{**answer, "file": "street.png"}])
    assert text == "street.png: sky 60%, road 35%, car 5% of the photo"


def test_polygons_per_class_on_request_redraw_the_mask_in_the_photos_pixels():
    output, answer = _answer()
    assert "polygons" not in output.respond(answer, {})
    polygons = output.respond(answer, {"polygons": "1"})["polygons"]
    assert set(polygons) == {"road", "sky", "car"}
    assert polygons["sky"] == [[[0, 0], [6, 0], [6, 4], [0, 4]]]  # columns 0-5 of 4 rows: pixel corners
    assert polygons["car"] == [[[8, 3], [10, 3], [10, 4], [8, 4]]]
    shapes = [(k, p) for k, label in enumerate(answer["classes"]) for p in polygons[label]]
    shapes.sort(key=lambda shape: -polygon_mask([[v for xy in shape[1] for v in xy]], 4, 10).sum())
    redrawn = np.full((4, 10), 255, np.uint8)
    for value, points in shapes:
        redrawn[polygon_mask([[v for xy in points for v in xy]], 4, 10)] = value
    np.testing.assert_array_equal(redrawn, answer["mask"])
