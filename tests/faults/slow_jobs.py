"""A job function for the fault tests (imported by worker processes through PYTHONPATH): it runs for
``seconds``, stopping early when asked, and writes ``marker`` only when it ran to the end."""

from __future__ import annotations

import time
from pathlib import Path


def run_slow(params: dict, ctx) -> dict:
    deadline = time.monotonic() + float(params["seconds"])
    while time.monotonic() < deadline:
        if ctx.should_stop():
            return {"stopped": True}
        time.sleep(0.05)
    Path(params["marker"]).write_text("finished without anyone waiting", encoding="utf-8")
    return {"finished": True}
