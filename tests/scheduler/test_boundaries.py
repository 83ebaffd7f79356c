"""The scheduler knows nothing of the app, models or datasets: it imports none of them."""

import ast
from pathlib import Path

import modeldesk.scheduler

FORBIDDEN = (
    "modeldesk.trainers",
    "modeldesk.datasets",
    "modeldesk.deploy",
    "modeldesk.app",
    "modeldesk.ui",
    "PySide6",
)


def test_scheduler_imports_no_other_package_of_the_app():
    folder = Path(modeldesk.scheduler.__file__).parent
    offenders = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.startswith(FORBIDDEN)]
    assert offenders == []
    assert len(list(folder.glob("*.py"))) > 5


def test_public_names_are_re_exported():
    for name in (
        "detect_resources",
        "format_resources",
        "CostModel",
        "plan",
        "Plan",
        "run_partitioned",
        "Cancelled",
        "JobQueue",
    ):
        assert hasattr(modeldesk.scheduler, name)
