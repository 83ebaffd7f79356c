"""Sound samples on the Label page: the clip's waveform and a play button (Space plays it again)."""

from __future__ import annotations

from ...widgets.clip_player import ClipPlayer, load_peaks
from .views import SampleView


class AudioView(SampleView):
    """A sound clip: waveform, play button, duration. Labeling keys work as for images."""

    def __init__(self):
        super().__init__()
        self.player = ClipPlayer()
        self.widget = self.player

    @staticmethod
    def load(sample):
        return load_peaks(sample.path)

    def show(self, sample, payload) -> None:
        peaks, duration = payload
        self.player.set_clip(sample.path, peaks, duration, f"{duration:.2f} s")
        self.player.play()

    def clear(self) -> None:
        self.player.clear()
