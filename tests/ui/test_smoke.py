"""The first-run self-check that the installer's smoke test and benchmark run inside the frozen
build (``modeldesk -m modeldesk.ui.smoke``), kept working against the live UI here."""

from modeldesk.ui import smoke


def test_smoke_opens_the_first_run_window(tmp_path):
    shot = tmp_path / "first.png"
    result = smoke.run(tmp_path / "ws", screenshot=shot, window_only=True)
    assert result["first_window_s"] > 0
    assert shot.stat().st_size > 1000
    assert (tmp_path / "ws" / "workspace.db").exists()


def test_fast_template_is_the_quick_one(ws):
    assert smoke.fast_template(ws) == "image-classification/fast"
