"""The versions a model card records (``card["versions"]``): one place, for every task's trainer."""

from __future__ import annotations


def versions() -> dict:
    """ModelDesk's, ONNX Runtime's, ONNX's and numpy's versions, as the card records them."""
    from importlib.metadata import PackageNotFoundError, version

    import numpy as np
    import onnx
    import onnxruntime

    try:
        modeldesk_version = version("modeldesk")
    except PackageNotFoundError:
        modeldesk_version = "unknown"
    return {
        "modeldesk": modeldesk_version,
        "onnxruntime": onnxruntime.__version__,
        "onnx": onnx.__version__,
        "numpy": np.__version__,
    }
