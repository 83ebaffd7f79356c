"""DESIGN.md's import directions, enforced by the import-linter contracts in pyproject.toml.

The linter sees every import (relative ones and those inside functions too). It runs on a copy of
the package so that the test can also show a contract breaking on a file that violates it.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "ui", "datasets", "trainers", "scheduler", "deploy")
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint(tmp_path: Path, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the contracts on a copy of the package (plus ``extra`` files: relative path -> source)."""
    copy = tmp_path / "src" / "modeldesk"
    copy.mkdir(parents=True)
    # Only the package's Python sources: a checkout may also hold builds, venvs and caches (and links
    # into them) that the linter does not need and that once filled the disk when copied each time.
    for path in [ROOT / "pyproject.toml", *ROOT.glob("*.py")]:
        shutil.copy2(path, copy / path.name)
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package,
            copy / package,
            symlinks=True,
            ignore=shutil.ignore_patterns(
                "__pycache__", "*.pyc", "static", "resources", "bundle_template", "*.onnx"
            ),
        )
    for relative, source in (extra or {}).items():
        (copy / relative).write_text(source, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(copy.parent), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", str(copy / "pyproject.toml")],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_import_contracts_hold(tmp_path):
    result = lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


VIOLATIONS = {
    "ui reaches the core only through app": (
        "ui/violation.py",
        "def f():\n    from ..datasets import Store\n    return Store\n",
    ),
    "only ui imports Qt": ("deploy/violation.py", "def f():\n    import PySide6.QtCore\n"),
    "the three below import none of the others": (
        "datasets/violation.py",
        "from modeldesk.scheduler import planner\n",
    ),
    "never a bare datasets": ("trainers/violation.py", "import datasets\n"),
}


@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_a_violating_file_breaks_its_contract(tmp_path, contract):
    path, source = VIOLATIONS[contract]
    result = lint(tmp_path, {path: source})
    assert result.returncode != 0, result.stdout
    text = " ".join(result.stdout.split())
    assert re.search(re.escape(contract) + r"[^\n]* BROKEN", result.stdout), result.stdout
    assert "kept, 1 broken" in text, result.stdout  # only the one this file violates
    assert "modeldesk." + path[:-3].replace("/", ".") in text, result.stdout


def _attribute_chains(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("store", "jobs"):
            yield node.lineno, node.attr


def test_ui_reaches_neither_the_store_nor_the_job_queue():
    """The UI calls Workspace methods; it never reaches ``ws.store`` or ``ws.jobs`` through it."""
    problems = [
        f"{path.relative_to(ROOT)}:{line} uses .{attr}"
        for path in sorted((ROOT / "ui").rglob("*.py"))
        for line, attr in _attribute_chains(path)
    ]
    assert not problems, "\n".join(problems)


def test_no_ui_module_is_too_long():
    """Small modules with one purpose: no module over about 450 lines in ui/ (it was 400 before ruff
    format wrote long calls one argument a line, which made ui/ 10% longer)."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "ui").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 480
    }
    assert not long, long


def test_pages_never_test_a_task_name():
    """Pages dispatch on the task's target and input kind (annotators, views), never on its name."""
    names = (
        "image-classification",
        "image-multilabel",
        "object-detection",
        "text-classification",
        "sound-classification",
    )
    files = sorted((ROOT / "ui" / "pages").rglob("*.py")) + [
        ROOT / "ui" / "status.py",
        ROOT / "ui" / "main_window.py",
    ]
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in files
        for name in names
        if f'"{name}"' in path.read_text(encoding="utf-8")
    ]
    assert not found, "\n".join(found)


#: the files that belong to one input kind (or are a layer's registry of kinds): only they may name one
KIND_FILES = (
    "datasets/kinds/*.py",
    "deploy/inputs.py",
    "deploy/*_input.py",
    "ui/kinds.py",
    "ui/pages/label/*_view.py",
)
KIND_TEST = r"""kind\b["')\]]*\s*(?:===?|!==?)\s*["']({names})["']|["']({names})["']\s*(?:===?|!==?)\s*[\w.]*kind\b|kind\b["')\]]*\s+(?:not\s+)?in\s*[(\[{{]\s*["']({names})["']"""


def kind_tests(text: str, names) -> list[str]:
    """The places in ``text`` that test an input kind's name (``kind == "audio"``, ``kind in ("text", ...)``)."""
    pattern = re.compile(KIND_TEST.format(names="|".join(map(re.escape, names))), re.IGNORECASE)
    return [match.group(0) for match in pattern.finditer(text)]


def test_the_kind_pattern_catches_each_form():
    names = ("image", "audio", "text")
    caught = [
        'if project.kind == "text":',
        "if kind != 'audio':",
        'x = info.get("input_kind") == "audio"',
        'if artifact.input_kind not in ("image", "audio"):',
        'var audio = inputKind === "audio";',
        'if "text" == sample.kind:',
    ]
    assert [bool(kind_tests(line, names)) for line in caught] == [True] * len(caught)
    assert not kind_tests('kind = card.get("kind", "image")', names)
    assert not kind_tests('if task == "text-classification":', names)


def test_no_module_outside_a_kind_tests_its_name():
    """Input kinds are registries (datasets/kinds/, deploy/inputs.py, ui/kinds.py): the rest asks them."""
    from modeldesk.datasets.kinds import SAMPLE_KINDS

    owned = {path for pattern in KIND_FILES for path in ROOT.glob(pattern)}
    # the database's own CHECK on the kind column: a new kind is a schema migration there
    owned.add(ROOT / "datasets" / "schema.py")
    files = [
        path
        for package in PACKAGES
        for suffix in ("*.py", "*.js")
        for path in sorted((ROOT / package).rglob(suffix))
        if path not in owned and "bundle_template" not in path.parts
    ]
    found = [
        f"{path.relative_to(ROOT)}: {test}"
        for path in files
        for test in kind_tests(path.read_text(encoding="utf-8"), SAMPLE_KINDS)
    ]
    assert not found, "\n".join(found)
