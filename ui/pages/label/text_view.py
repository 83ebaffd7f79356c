"""Texts on the Label page: one text at a time, large and readable (CJK fonts first where installed)."""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QTextBrowser

from .views import SampleView

FONT_FAMILIES = ["Noto Sans CJK SC", "Noto Sans", "Microsoft YaHei", "PingFang SC", "sans-serif"]
MAX_SHOWN = 20_000  # characters on screen: the rest of a huge text is noted, not drawn


class TextView(SampleView):
    """A read-only, word-wrapped text in a large font; labeling keys work as for images."""

    def __init__(self):
        super().__init__()
        self.browser = QTextBrowser()
        self.browser.setObjectName("LabelText")
        self.browser.setOpenLinks(False)
        font = QFont()
        font.setFamilies(FONT_FAMILIES)
        font.setPointSize(18)
        self.browser.setFont(font)
        self.browser.setStyleSheet("QTextBrowser#LabelText { padding: 28px; }")
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
