"""The Train step: recipe cards, the run being followed, the runs table."""

from .page import TrainPage

__all__ = ["TrainPage"]
