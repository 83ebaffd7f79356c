"""A segmentation model draws its masks in the colours its card keeps with the classes."""

import base64
import io

import numpy as np
from PIL import Image

from modeldesk.deploy.mask_output import PALETTE, MaskOutput, class_colors, overlay


def _png_palette(answer: dict) -> list:
    image = Image.open(io.BytesIO(base64.b64decode(answer["mask_png"])))
    flat = image.getpalette()
    return [tuple(flat[3 * k : 3 * k + 3]) for k in range(3)]


def test_the_mask_png_uses_the_cards_colours_and_falls_back_to_the_palette():
    mask = np.array([[0, 1], [2, 2]], np.uint8)
    card = {"labels": ["car", "road", "sky"], "colors": ["#102030", "#405060", "#708090"]}
    output = MaskOutput(card)
    (prediction,) = output.format([mask[None]])
    assert _png_palette(output.respond(prediction)) == [(16, 32, 48), (64, 80, 96), (112, 128, 144)]
    plain = MaskOutput({"labels": ["car", "road", "sky"], "colors": ["#102030"]})  # one per class or none
    assert _png_palette(plain.respond(prediction)) == list(PALETTE[:3])


def test_an_overlay_paints_each_class_in_its_colour():
    colors = class_colors(["a", "b"], ["#ff0000", "#0000ff"])
    photo = Image.new("RGB", (2, 1), (0, 0, 0))
    painted = np.asarray(overlay(photo, np.array([[0, 1]], np.uint8), alpha=255, colors=colors))
    assert painted[0, 0].tolist() == [255, 0, 0] and painted[0, 1].tolist() == [0, 0, 255]
