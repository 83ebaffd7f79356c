"""The launcher dispatches the frozen build's re-launches (``-m modeldesk.x``) before the CLI."""

import subprocess
import sys

import pytest

import modeldesk.__main__ as launcher


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["-m", "modeldesk.scheduler.worker", "db", "3"], ["modeldesk.scheduler.worker", "db", "3"]),
        (["-u", "-B", "-m", "modeldesk.ui.smoke", "--json"], ["modeldesk.ui.smoke", "--json"]),
        (["-sE", "-m", "modeldesk.scheduler.providers"], ["modeldesk.scheduler.providers"]),
        (["-m", "os"], None),  # only our own modules
        (["demo"], None),
        (["-m"], None),
        ([], None),
    ],
)
def test_frozen_module_argv(argv, expected):
    assert launcher.frozen_module_argv(argv) == expected


def test_not_frozen_dispatch_is_a_no_op(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["modeldesk", "-m", "modeldesk.scheduler.worker", "x", "1"])
    assert launcher.dispatch_relaunch() is None


def test_frozen_dispatch_runs_the_module_as_main(monkeypatch, capsys):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    with pytest.raises(SystemExit) as exit_info:
        launcher.dispatch_relaunch(["-m", "modeldesk.scheduler.worker"])  # usage error: no arguments
    assert exit_info.value.code == 2
    assert "usage: python -m modeldesk.scheduler.worker" in capsys.readouterr().err


def test_launcher_still_runs_the_cli():
    out = subprocess.run(
        [sys.executable, "-m", "modeldesk", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.startswith("modeldesk ")
