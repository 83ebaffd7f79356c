"""``python -m modeldesk`` is the ``modeldesk`` command."""

import sys

from modeldesk.app.cli import main

sys.exit(main())
