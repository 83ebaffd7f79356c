"""The anomaly Evaluate card adds pixel AUROC from a project's stored defect masks, and says nothing
about it for a project without masks."""

from __future__ import annotations

from modeldesk.ui.pages.anomaly_evaluation import AnomalyCard

REPORT = {
    "threshold": 5.0,
    "auroc": 0.9,
    "pixel_auroc": None,
    "images": [
        {"key": "a", "file": "a.png", "kind": "crack", "defect": True, "score": 9.0},
        {"key": "b", "file": "b.png", "kind": "good", "defect": False, "score": 1.0},
    ],
}


def _card(qtbot):
    words = []
    card = AnomalyCard(lambda files, done: done([(f, None) for f in files]), lambda *w: words.append(w))
    qtbot.addWidget(card.frame)
    card.set_report(dict(REPORT))
    return card, words


def test_pixel_auroc_from_stored_masks_joins_the_words(qtbot):
    card, words = _card(qtbot)
    assert "pixel" not in words[-1][1]
    card.set_pixel_auroc({"pixel_auroc": 0.934, "masks": 3, "photos": 2})
    assert "pixel AUROC 0.934 on 3 photos with a defect mask (where it points" in words[-1][1]
    card.slider.setValue(0)  # moving the threshold keeps it
    assert "pixel AUROC 0.934" in words[-1][1]


def test_a_project_without_masks_says_nothing_about_pixels(qtbot):
    card, words = _card(qtbot)
    card.set_pixel_auroc(None)
    card.slider.setValue(card.slider.maximum())
    assert all("pixel" not in detail for _, detail in words)
