"""A one-line terminal progress bar with an ETA, written to stderr."""

from __future__ import annotations

import sys
import time


def format_seconds(seconds) -> str:
    """``75`` -> ``1m 15s``; None -> ``?``."""
    if seconds is None:
        return "?"
    seconds = max(0, int(round(seconds)))
    minutes, secs = divmod(seconds, 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


class TerminalProgress:
    """Redraws one line at most ten times a second; silent when stderr is not a terminal."""

    def __init__(self, what: str, stream=None, width: int = 28):
        self.what = what
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.monotonic()
        self._last_draw = 0.0
        self._drawn = False
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()

    def update_counts(self, done: int, total, current=None) -> None:
        fraction = done / total if total else None
        detail = f"{done}/{total}" if total else f"{done}"
        self._draw(fraction, detail, None)

    def update_fraction(self, fraction: float, stage=None, eta_s=None) -> None:
        self._draw(fraction, stage or "", eta_s)

    def _draw(self, fraction, detail: str, eta_s) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self._last_draw < 0.1 and (fraction or 0) < 1):
            return
        self._last_draw = now
        if fraction is not None:
            fraction = min(max(fraction, 0.0), 1.0)
            if eta_s is None and fraction > 0.02:
                eta_s = (now - self.started) * (1 - fraction) / fraction
            filled = int(self.width * fraction)
            bar = "#" * filled + "-" * (self.width - filled)
            line = f"{self.what} [{bar}] {fraction:4.0%} {detail} ETA {format_seconds(eta_s)}"
        else:
            line = f"{self.what} {detail}"
        self.stream.write("\r" + line[:110].ljust(110))
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r" + " " * 110 + "\r")
            self.stream.flush()
