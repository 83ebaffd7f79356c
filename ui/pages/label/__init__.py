"""The Label step: :class:`LabelPage`, its views (by input kind) and annotators (by target)."""

from .annotators import ANNOTATORS, Annotator, register_annotator
from .defect_annotator import DefectAnnotator
from .mask_annotator import MaskAnnotator
from .page import LabelPage
from .views import VIEWS, SampleView, register_view

register_annotator("mask", MaskAnnotator)  # segmentation: a class per pixel
register_annotator("defect", DefectAnnotator)  # anomaly photos: good or a kind, and where the defect is

__all__ = [
    "ANNOTATORS",
    "Annotator",
    "LabelPage",
    "SampleView",
    "VIEWS",
    "register_annotator",
    "register_view",
]
