"""pyproject.toml lists packages explicitly (the repo root is the package root), so a new
subpackage that is not listed would silently be missing from a non-editable install."""

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("app", "ui", "datasets", "trainers", "scheduler", "deploy")


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"modeldesk"} | {
        "modeldesk." + ".".join(init.parent.relative_to(ROOT).parts)
        for top in SHIPPED
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found - listed == set(), f"add to pyproject.toml packages: {sorted(found - listed)}"


def test_console_script_points_at_the_launcher():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"modeldesk": "modeldesk.__main__:main"}
