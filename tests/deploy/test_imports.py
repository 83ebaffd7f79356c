"""deploy/ must run without the app: no imports of other ModelDesk packages, no Qt."""

import ast
from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
FORBIDDEN = {"PySide6", "PyQt5", "PyQt6", "shiboken6"}
OTHERS = {"app", "ui", "trainers", "scheduler", "datasets"}


@pytest.mark.parametrize("path", sorted(DEPLOY.rglob("*.py")), ids=lambda p: p.name)
def test_deploy_modules_import_no_other_package_and_no_qt(path):
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module]
        elif isinstance(node, ast.ImportFrom):  # relative: resolved from the module's own package
            package = ["modeldesk", "deploy", *path.relative_to(DEPLOY).parts[:-1]]
            if node.level > len(package):
                raise AssertionError(f"{path.name} reaches out of modeldesk with a relative import")
            base = package[: len(package) - (node.level - 1)]
            names = [".".join(base + ([node.module] if node.module else []))]
        for name in names:
            parts = name.split(".")
            assert parts[0] not in FORBIDDEN, f"{path.name} imports {name}"
            assert not (parts[0] == "modeldesk" and len(parts) > 1 and parts[1] in OTHERS), (
                f"{path.name} imports {name}"
            )


def test_public_names_resolve():
    import modeldesk.deploy as deploy

    for name in (
        "load_artifact",
        "save_artifact",
        "Predictor",
        "compress_artifact",
        "export_artifact",
        "create_app",
        "serve",
        "build_bundle",
        "create_session",
        "ImageSpec",
        "preprocess_image",
    ):
        assert name in deploy.__all__ and callable(getattr(deploy, name))
    with pytest.raises(AttributeError):
        _ = deploy.no_such_name
