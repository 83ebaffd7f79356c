"""The ``modeldesk`` command: the desktop window with no command, the CLI otherwise.

This launcher sits above ``app/`` because it is the only place that may reach both faces: the
command line (``modeldesk.app.cli``) and the window (``modeldesk.ui``), which imports ``app``.

It is also the frozen build's entry point (``packaging/entry.py``). A frozen executable is started
again by its own child processes with Python's arguments instead of ours: multiprocessing's spawn
children (the training worker when frozen, see ``scheduler/jobs.py``) and its resource tracker, and
``sys.executable -m modeldesk.<module>`` launches. :func:`main` dispatches those before the CLI
parses anything.
"""

import re
import sys

#: Interpreter switches that may precede ``-m`` in a re-launch (``-u``, ``-B``, ``-sE``, ...).
_INTERPRETER_FLAGS = re.compile(r"-[BEIOqsSuv]+")


def open_window(workspace=None) -> int:
    from modeldesk.ui.application import run

    return run(workspace)


def frozen_module_argv(argv: list[str]) -> list[str] | None:
    """``["modeldesk.x.y", ARGS...]`` when ``argv`` asks to run a ``modeldesk`` module as
    ``[FLAGS...] -m modeldesk.x.y ARGS...``; None otherwise (then it is a normal command line)."""
    index = 0
    while index < len(argv) and _INTERPRETER_FLAGS.fullmatch(argv[index]):
        index += 1
    if index + 1 < len(argv) and argv[index] == "-m" and argv[index + 1].startswith("modeldesk."):
        return argv[index + 1 :]
    return None


def dispatch_relaunch(argv: list[str] | None = None) -> None:
    """Run a child process's real job and exit, when this process is one; otherwise return.

    ``multiprocessing.freeze_support()`` handles spawn children and the resource tracker (PyInstaller
    makes it work on every platform); a frozen ``-m modeldesk.x.y`` runs that module as ``__main__``.
    Outside a frozen build this only calls ``freeze_support()``, which is then a no-op.
    """
    import multiprocessing

    multiprocessing.freeze_support()  # exits when this process is a multiprocessing child or helper
    if not getattr(sys, "frozen", False):
        return
    module_argv = frozen_module_argv(sys.argv[1:] if argv is None else list(argv))
    if module_argv is None:
        return
    import runpy

    sys.argv = list(module_argv)
    runpy.run_module(module_argv[0], run_name="__main__", alter_sys=True)
    sys.exit(0)


def main(argv=None) -> int:
    if argv is None:
        dispatch_relaunch()
    from modeldesk.app.cli import main as cli_main

    return cli_main(argv, open_window=open_window)


if __name__ == "__main__":
    sys.exit(main())
