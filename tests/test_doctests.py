"""Every example written as a doctest (``>>>``) in the package runs and gives what it shows; examples
that only illustrate a call are written as plain code instead, so none can rot unseen."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_FOLDERS = {"tests", "bench", "packaging", "build", "dist", ".git"}


def _modules_with_doctests() -> list[str]:
    names = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if SKIPPED_FOLDERS & set(relative.parts) or "bundle_template" in relative.parts:
            continue
        if ">>> " in path.read_text(encoding="utf-8"):
            parts = relative.with_suffix("").parts
            names.append(".".join(("modeldesk", *(parts[:-1] if parts[-1] == "__init__" else parts))))
    return names


MODULES = _modules_with_doctests()


def test_some_doctests_are_found():
    assert len(MODULES) >= 5, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
    assert result.attempted and not result.failed, (
        f"{name}: {result.failed} of {result.attempted} examples failed"
    )
