"""DESIGN.md's import directions, checked on the source: only ui/ imports Qt, and the core packages
import only what they are allowed to."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

ALLOWED = {
    "app": {"app", "trainers", "deploy", "scheduler", "datasets"},
    "trainers": {"trainers", "deploy", "scheduler", "datasets"},
    "datasets": {"datasets"},
    "scheduler": {"scheduler"},
    "deploy": {"deploy"},
    "ui": {"ui", "app", "datasets", "scheduler", "trainers", "deploy"},
}
QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "shiboken6")


def imported_modules(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: stays inside its own package
                continue
            yield node.module or ""


def package_files(package: str):
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_follow_design(package):
    files = package_files(package)
    assert files, f"no python files under {package}/"
    problems = []
    for path in files:
        for module in imported_modules(path):
            parts = module.split(".")
            if parts[0] in QT_MODULES and package != "ui":
                problems.append(f"{path.relative_to(ROOT)} imports {module}")
            if parts[0] == "modeldesk" and len(parts) > 1 and parts[1] in ALLOWED:
                if parts[1] not in ALLOWED[package]:
                    problems.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not problems, "imports against DESIGN.md:\n" + "\n".join(problems)


def test_no_bare_subpackage_imports():
    """Code imports modeldesk.datasets, never a bare `datasets` (it would shadow Hugging Face's)."""
    bare = {"app", "ui", "datasets", "trainers", "scheduler", "deploy"}
    problems = [
        f"{path.relative_to(ROOT)} imports {module}"
        for package in ALLOWED
        for path in package_files(package)
        for module in imported_modules(path)
        if module.split(".")[0] in bare
    ]
    assert not problems, "\n".join(problems)
