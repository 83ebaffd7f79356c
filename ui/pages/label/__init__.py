"""The Label step: :class:`LabelPage`, its views (by input kind) and annotators (by target)."""

from .annotators import ANNOTATORS, Annotator, register_annotator
from .page import LabelPage
from .views import VIEWS, SampleView, register_view

__all__ = [
    "ANNOTATORS",
    "Annotator",
    "LabelPage",
    "SampleView",
    "VIEWS",
    "register_annotator",
    "register_view",
]
