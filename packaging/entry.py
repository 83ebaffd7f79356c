"""PyInstaller's entry script: the frozen ``modeldesk`` executable (``modeldesk.__main__.main``).

Kept outside the package and guarded by ``__name__``: multiprocessing's spawn children execute this
file again as ``__mp_main__`` and must not start the app.
"""

import sys

from modeldesk.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
