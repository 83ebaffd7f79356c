"""What the frozen build must collect, derived from the package itself (never a hand-kept list).

PyInstaller follows ``import`` statements. ModelDesk also loads code and files by name, which that
analysis cannot see: pages (``ui/main_window.PAGES``), job targets (``"modeldesk.app.jobs:run_training"``),
the task registry's lazy ``"module:attr"`` entries, the deploy modules the bundle copies as source,
``importlib.metadata`` look-ups (bundle pins, the About dialog), and the weight packages' files. So
the build collects *every* module of every package listed in ``pyproject.toml``, every package-data
file, the bundle's source files, the metadata of every run-time dependency and the data files of
every dependency that no PyInstaller hook covers. ``tests/test_packaging_collect.py`` checks these
lists against the source tree, so a new module, page, task or weight package cannot be forgotten.

This module imports neither PyInstaller nor Qt: the spec file and the tests both use it.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
TOP = "modeldesk"

#: Import names whose files PyInstaller hooks (its own or pyinstaller-hooks-contrib) already collect.
HOOKED = frozenset(
    {
        "PySide6",
        "shiboken6",
        "onnxruntime",
        "onnx",
        "numpy",
        "PIL",
        "psutil",
        "uvicorn",
        "starlette",
        "platformdirs",
        "pynvml",
        "multipart",
        "python_multipart",
        "google",
        # the table and mask-assist dependencies: pyinstaller-hooks-contrib collects their compiled
        # parts and data (scikit-learn's, scikit-image's and LightGBM's hooks); the rest is plain code
        "sklearn",
        "scipy",
        "skimage",
        "lightgbm",
        "openpyxl",
        "onnxmltools",
        "networkx",
        "joblib",
    }
)
#: Third-party imports that are optional at run time (guarded, not bundled).
OPTIONAL_IMPORTS = frozenset({"distributed", "dask", "torch", "pytest", "PyQt5", "PyQt6", "pyarrow"})
#: Modules the app never uses; excluding them keeps them out even if a dependency mentions them.
EXCLUDED_MODULES = (
    "tkinter",
    "_tkinter",
    "pytest",
    "IPython",
    "matplotlib",
    "pandas",
    # Parquet is optional (the import says to install pyarrow); bundled it would add 156 MB
    "pyarrow",
    "torch",
    "tensorflow",
    "distributed",
    "dask",
    "PyQt5",
    "PyQt6",
    # Pulled in through optional imports of our dependencies (onnxruntime's symbolic shape inference,
    # which quantization skips; uvicorn's YAML config and reloader; pytest's terminal colouring).
    "sympy",
    "mpmath",
    "pygments",
    "setuptools",
    "pkg_resources",
    "distutils",
    "_pytest",
    "trio",
    "jinja2",
    "yaml",
    "cffi",
    "charset_normalizer",
    "attr",
    "attrs",
    "hypothesis",
    "numpy.f2py",
    "onnxruntime.transformers.models",
    "onnxruntime.tools.mobile_helpers",
    "pydoc_data",
    "lib2to3",
    "PySide6.QtWebEngineCore",
    "PySide6.QtWebEngineWidgets",
    "PySide6.QtWebEngineQuick",
    "PySide6.QtWebChannel",
    "PySide6.QtWebSockets",
    "PySide6.QtWebView",
    "PySide6.QtQuick",
    "PySide6.QtQuickWidgets",
    "PySide6.QtQuickControls2",
    "PySide6.QtQuick3D",
    "PySide6.QtQml",
    "PySide6.Qt3DCore",
    "PySide6.Qt3DRender",
    "PySide6.Qt3DInput",
    "PySide6.Qt3DLogic",
    "PySide6.Qt3DAnimation",
    "PySide6.Qt3DExtras",
    "PySide6.QtCharts",
    "PySide6.QtDataVisualization",
    "PySide6.QtGraphs",
    "PySide6.QtDesigner",
    "PySide6.QtPdf",
    "PySide6.QtPdfWidgets",
    "PySide6.QtBluetooth",
    "PySide6.QtNfc",
    "PySide6.QtPositioning",
    "PySide6.QtLocation",
    "PySide6.QtSensors",
    "PySide6.QtSerialPort",
    "PySide6.QtSql",
    "PySide6.QtTextToSpeech",
    "PySide6.QtScxml",
    "PySide6.QtRemoteObjects",
    "PySide6.QtHelp",
    "PySide6.QtUiTools",
)
#: Path fragments (``/``-separated, matched anywhere in the destination) dropped after analysis.
#: The ffmpeg multimedia plugin (the camera on the Deploy page) links QtQuick and QtQml, so their
#: core libraries stay; the QML modules, Quick controls, 3D, WebEngine and friends go.
PRUNED = (
    "*/tests/*",
    "*/testing/_private/*",
    "*/include/*",
    "*.h",
    "*.hpp",
    "*.pyi",
    "*.a",
    "*.cmake",
    "*/Qt/qml/*",
    "*/Qt/translations/*",
    "*/Qt/resources/qtwebengine*",
    "*/Qt/libexec/*",
    "*libQt6WebEngine*",
    "*libQt6Quick3D*",
    "*libQt6QuickControls2*",
    "*libQt6QuickDialogs2*",
    "*libQt6QuickTemplates2*",
    "*libQt6QuickLayouts*",
    "*libQt6QuickEffects*",
    "*libQt6QuickShapes*",
    "*libQt6QuickParticles*",
    "*libQt6QuickTimeline*",
    "*libQt6QuickVectorImage*",
    "*libQt63D*",
    "*libQt6Pdf*",
    "*libQt6Designer*",
    "*libQt6ShaderTools*",
    "*libQt6Graphs*",
    "*libQt6Charts*",
    "*libQt6DataVisualization*",
    "*libQt6Location*",
    "*libQt6Positioning*",
    "*libQt6Sensors*",
    "*libQt6Bluetooth*",
    "*libQt6Nfc*",
    "*libQt6TextToSpeech*",
    "*libQt6Scxml*",
    "*libQt6WebView*",
    "*libQt6WebChannel*",
    "*libQt6WebSockets*",
    "*libQt6Sql*",
    "*libQt6Help*",
    "*libQt6RemoteObjects*",
    "*/plugins/sqldrivers/*",
    "*/plugins/qmltooling/*",
    "*/plugins/sceneparsers/*",
    "*/plugins/assetimporters/*",
    "*/plugins/renderers/*",
    "*/plugins/renderplugins/*",
    "*/plugins/geometryloaders/*",
    "*/plugins/geoservices/*",
    "*/plugins/position/*",
    "*/plugins/sensors/*",
    "*/plugins/texttospeech/*",
    "*/plugins/webview/*",
    "*/plugins/designer/*",
    "*/plugins/canbus/*",
    "*/plugins/scxmldatamodel/*",
    "*/plugins/qmllint/*",
    # Desktop platforms only: X11 (xcb), Wayland, and offscreen for headless runs.
    "*/plugins/platforms/libqeglfs*",
    "*/plugins/platforms/libqlinuxfb*",
    "*/plugins/platforms/libqvnc*",
    "*/plugins/platforms/libqvkkhrdisplay*",
    "*/plugins/platforms/libqminimalegl*",
    "*/plugins/egldeviceintegrations/*",
    "*libQt6EglFS*",
    "*libQt6EglFs*",
    # The GTK theme plugin would load the system's GTK against bundled copies of its libraries; the
    # XDG desktop portal theme gives native file dialogs without that risk.
    "*/plugins/platformthemes/libqgtk3*",
    "*/plugins/platforminputcontexts/libqtvirtualkeyboard*",
    "*libQt6VirtualKeyboard*",
    "*/plugins/imageformats/libqpdf*",
    "*/plugins/networkinformation/*",
    "*/plugins/tls/*",
)
#: Packages that put their own folder on ``sys.path`` and import siblings as top-level modules
#: (``onnxruntime.transformers``, reached by quantization: ``from fusion_utils import ...``);
#: their folders go on the analysis path so those modules are found and bundled.
SELF_PATHED_PACKAGES = ("onnxruntime.transformers",)
#: onnxruntime provider libraries the CPU build does not use (a GPU build keeps them: see
#: ``pruned_providers``).
ACCELERATOR_PROVIDER_LIBS = (
    "*onnxruntime_providers_cuda*",
    "*onnxruntime_providers_tensorrt*",
    "*onnxruntime_providers_rocm*",
    "*onnxruntime_providers_migraphx*",
    "*onnxruntime_providers_openvino*",
)


def pyproject(root: Path = ROOT) -> dict:
    """The parsed ``pyproject.toml``."""
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))


def version(root: Path = ROOT) -> str:
    """``modeldesk.__version__``, read from the source without importing it."""
    match = re.search(
        r'^__version__\s*=\s*"([^"]+)"', (root / "__init__.py").read_text(encoding="utf-8"), re.M
    )
    return match.group(1)


def package_dir(package: str, root: Path = ROOT) -> Path:
    """Source folder of ``modeldesk.x.y`` (the repository root is the ``modeldesk`` package)."""
    parts = package.split(".")
    assert parts[0] == TOP, package
    return root.joinpath(*parts[1:])


def shipped_packages(root: Path = ROOT) -> list[str]:
    """The packages a regular install contains (``[tool.setuptools] packages``)."""
    return list(pyproject(root)["tool"]["setuptools"]["packages"])


def source_modules(root: Path = ROOT) -> list[str]:
    """Every module of every shipped package: the build's hidden imports."""
    modules = []
    for package in shipped_packages(root):
        modules.append(package)
        for path in sorted(package_dir(package, root).glob("*.py")):
            if path.stem != "__init__":
                modules.append(f"{package}.{path.stem}")
    return sorted(set(modules))


def package_data(root: Path = ROOT) -> list[tuple[str, str]]:
    """``(source file, destination folder)`` for every package-data file of ``pyproject.toml``."""
    found = []
    for package, patterns in pyproject(root)["tool"]["setuptools"].get("package-data", {}).items():
        base = package_dir(package, root)
        for pattern in patterns:
            for path in sorted(base.glob(pattern)):
                if path.is_file() and "__pycache__" not in path.parts:
                    dest = Path(TOP, *package.split(".")[1:], path.relative_to(base).parent)
                    found.append((str(path), dest.as_posix()))
    return found


#: the root modules a bundle copies beside the deploy modules (``deploy/bundle.py``, ``deploy/edge/bundle.py``)
BUNDLED_ROOT_MODULES = ("devices.py", "safejson.py", "errors.py", "fileio.py", "outlines.py")


def bundle_sources(root: Path = ROOT) -> list[tuple[str, str]]:
    """The source files the deploy and edge bundles copy verbatim (read as files, not imported): every
    module of ``deploy/`` (the bundle takes the registered input and output modules too) and of
    ``deploy/edge/``, and the root modules they import."""
    found = [(str(path), f"{TOP}/deploy") for path in sorted((root / "deploy").glob("*.py"))]
    found += [(str(path), f"{TOP}/deploy/edge") for path in sorted((root / "deploy" / "edge").glob("*.py"))]
    return found + [(str(root / name), TOP) for name in BUNDLED_ROOT_MODULES]


def bundle_requirements(root: Path = ROOT) -> list[str]:
    """Distributions whose versions the bundle pins through ``importlib.metadata``."""
    return list(_bundle_constant("REQUIREMENTS", root))


def _bundle_constant(name: str, root: Path) -> tuple:
    tree = ast.parse((root / "deploy" / "bundle.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def runtime_distributions(root: Path = ROOT) -> list[str]:
    """Names of the run-time dependencies in ``pyproject.toml`` (markers ignored), plus our own."""
    names = [
        re.match(r"[A-Za-z0-9_.\-]+", dep).group(0) for dep in pyproject(root)["project"]["dependencies"]
    ]
    names.append(pyproject(root)["project"]["name"])
    return sorted(set(names), key=str.lower)


def import_names(distribution: str) -> list[str]:
    """Top-level import names an installed distribution provides ([] when it is not installed)."""
    wanted = _norm(distribution)
    return sorted(
        name
        for name, dists in _packages_distributions().items()
        if any(_norm(d) == wanted for d in dists) and not name.startswith("_") and name.isidentifier()
    )


def installed_closure(root: Path = ROOT) -> list[str]:
    """The run-time distributions with everything they require (extras left out), as installed."""
    import importlib.metadata as md

    seen, queue = {}, list(runtime_distributions(root))
    while queue:
        name = queue.pop()
        if _norm(name) in seen:
            continue
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        seen[_norm(name)] = name
        queue += [re.match(r"[A-Za-z0-9_.\-]+", r).group(0) for r in requires if "extra ==" not in r]
    return sorted(seen.values(), key=str.lower)


def data_packages(root: Path = ROOT) -> list[str]:
    """Import names of run-time dependencies whose data files no hook collects (the weight packages)."""
    import importlib.util

    ours = _norm(pyproject(root)["project"]["name"])
    names = set()
    for dist in runtime_distributions(root):
        if _norm(dist) == ours:
            continue
        for name in import_names(dist):
            spec = None if name in HOOKED else importlib.util.find_spec(name)
            if spec is not None and spec.submodule_search_locations:  # a package folder, not a stray module
                names.add(name)
    return sorted(names)


def is_pruned(dest: str, *, keep_accelerators: bool = False) -> bool:
    """Whether a collected file (its destination path) is cut from the build."""
    dest = "/" + dest.replace("\\", "/")
    patterns = PRUNED if keep_accelerators else PRUNED + ACCELERATOR_PROVIDER_LIBS
    return any(fnmatch.fnmatch(dest, pattern) for pattern in patterns)


def prune_unreferenced(binaries: list, get_imports, system_prefixes=("/usr/", "/lib")) -> tuple[list, list]:
    """Drop system libraries that no remaining binary links against, directly or through others.

    PyInstaller collects the dependencies of every binary before the cuts above, so the libraries
    only a cut plugin needed (the GTK stack of the GTK theme, say) would stay. Only libraries copied
    from the system (``src`` under ``system_prefixes``) are candidates; ours are never dropped.

    Parameters
    ----------
    binaries : list of ``(dest, src, typecode)``
    get_imports : callable
        ``src -> iterable of (name, resolved path or None)``, PyInstaller's ``bindepend.get_imports``.

    Returns
    -------
    kept, dropped : lists of entries.
    """

    def is_system(entry):
        return str(entry[1]).startswith(tuple(system_prefixes)) and "/" not in entry[0].replace("\\", "/")

    by_name = {Path(entry[0]).name: entry for entry in binaries if is_system(entry)}
    needed, queue = set(), [entry for entry in binaries if not is_system(entry)]
    while queue:
        entry = queue.pop()
        for name, _path in get_imports(entry[1]) or ():
            base = Path(name).name
            if base in by_name and base not in needed:
                needed.add(base)
                queue.append(by_name[base])
    kept = [e for e in binaries if not is_system(e) or Path(e[0]).name in needed]
    dropped = [e for e in binaries if is_system(e) and Path(e[0]).name not in needed]
    return kept, dropped


def python_runtime_binaries(binaries: list, base_prefix: str) -> list:
    """Entries that are the interpreter's own libraries (``libpython``, ``lib-dynload``), built
    with symbols by pyenv and similar: the only ones safe to strip. Wheels' libraries stay as
    they are: stripping a library that auditwheel patched (numpy's OpenBLAS) breaks loading."""
    prefix = str(Path(base_prefix).resolve())
    return [
        e
        for e in binaries
        if str(Path(e[1]).resolve()).startswith(prefix) and "site-packages" not in str(e[1])
    ]


def named_references(root: Path = ROOT) -> dict[str, str]:
    """String literals in the shipped source that name a ``modeldesk`` module (``"pkg.mod"`` or
    ``"pkg.mod:attr"``): module name -> the file that names it."""
    pattern = re.compile(rf"^{TOP}(\.[A-Za-z_]\w*)+(:[A-Za-z_][\w.]*)?$")
    firsts = {m.split(".")[1] for m in source_modules(root) if "." in m}
    refs = {}
    for package in shipped_packages(root):
        for path in sorted(package_dir(package, root).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and pattern.match(node.value)
                    and node.value.split(".")[1].split(":")[0] in firsts
                ):
                    refs.setdefault(node.value.split(":")[0], str(path.relative_to(root)))
    return refs


def third_party_imports(root: Path = ROOT) -> dict[str, str]:
    """Top-level non-stdlib, non-``modeldesk`` imports of the shipped source -> a file importing it."""
    import sys

    found = {}
    for package in shipped_packages(root):
        for path in sorted(package_dir(package, root).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                for name in names:
                    top = name.split(".")[0]
                    if top != TOP and top not in sys.stdlib_module_names and top != "__future__":
                        found.setdefault(top, str(path.relative_to(root)))
    return found


@functools.lru_cache(maxsize=1)
def _packages_distributions() -> dict:
    import importlib.metadata as md

    return md.packages_distributions()


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
