"""Texts on the Label page: one text at a time, large and readable (CJK fonts first where installed)."""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QTextBrowser

from .views import SampleView

FONT_FAMILIES = ["Noto Sans CJK SC", "Noto Sans", "Microsoft YaHei", "PingFang SC", "sans-serif"]
MAX_SHOWN = 20_000  # characters on screen: the rest of a huge text is noted, not drawn
#: (point size, padding in px): large while the text has room, smaller in a narrow window, where
#: 18 pt in a 200 px column showed three words a line
ROOMY, COMPACT = (18, 28), (13, 10)
COMPACT_BELOW = 420  # px of the text's own width


class ReadableText(QTextBrowser):
    """A text browser whose font and margins follow its width."""

    def __init__(self):
        super().__init__()
        self.setObjectName("LabelText")
        self.setOpenLinks(False)
        self.compact: bool | None = None
        self._fit(roomy=True)

    def _fit(self, roomy: bool) -> None:
        if self.compact is (not roomy):
            return
        self.compact = not roomy
        size, padding = ROOMY if roomy else COMPACT
        font = QFont()
        font.setFamilies(FONT_FAMILIES)
        font.setPointSize(size)
        self.setFont(font)
        self.setStyleSheet(f"QTextBrowser#LabelText {{ padding: {padding}px; }}")

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit(roomy=event.size().width() >= COMPACT_BELOW)


class TextView(SampleView):
    """A read-only, word-wrapped text in a large font (smaller in a narrow window); labeling keys work
    as for images."""

    def __init__(self):
        super().__init__()
        self.browser = ReadableText()
        self.widget = self.browser

    @staticmethod
    def load(sample):
        text = sample.text or ""
        if len(text) > MAX_SHOWN:
            return text[:MAX_SHOWN] + f"\n\n… ({len(text) - MAX_SHOWN:,} more characters not shown)"
        return text

    def show(self, sample, payload) -> None:
        self.browser.setPlainText(payload)

    def clear(self) -> None:
        self.browser.clear()
