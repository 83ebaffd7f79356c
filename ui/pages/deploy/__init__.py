"""The Deploy step: try it, the local service, export (each a small card of its own)."""

from .page import DeployPage

__all__ = ["DeployPage"]
