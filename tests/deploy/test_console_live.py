"""The browser console's Live mode (static/live.js) is served inside the console page, offline."""

from starlette.testclient import TestClient

from modeldesk.deploy import create_app

LOCAL = "http://127.0.0.1"


def test_the_console_page_carries_the_live_mode(standin_artifact):
    with TestClient(create_app(standin_artifact), base_url=LOCAL) as client:
        text = client.get("/").text
    assert "{{" not in text
    assert "window.modeldeskLive" in text and "getUserMedia" in text
    assert "window.modeldeskConsole" in text, "the console hands live.js its calls"
    assert text.index("window.modeldeskConsole = ") < text.index("window.modeldeskLive = ")
    assert "https://" not in text
