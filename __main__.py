"""The ``modeldesk`` command: the desktop window with no command, the CLI otherwise.

This launcher sits above ``app/`` because it is the only place that may reach both faces: the
command line (``modeldesk.app.cli``) and the window (``modeldesk.ui``), which imports ``app``.
"""

import sys


def open_window(workspace=None) -> int:
    from modeldesk.ui.application import run

    return run(workspace)


def main(argv=None) -> int:
    from modeldesk.app.cli import main as cli_main

    return cli_main(argv, open_window=open_window)


if __name__ == "__main__":
    sys.exit(main())
