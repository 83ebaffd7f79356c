"""The Label step: :class:`LabelPage`, its views (by input kind) and annotators (by target)."""

from .annotators import ANNOTATORS, Annotator, register_annotator
from .mask_annotator import MaskAnnotator
from .page import LabelPage
from .views import VIEWS, SampleView, register_view

register_annotator("mask", MaskAnnotator)  # segmentation: a class per pixel

__all__ = [
    "ANNOTATORS",
    "Annotator",
    "LabelPage",
    "SampleView",
    "VIEWS",
    "register_annotator",
    "register_view",
]
