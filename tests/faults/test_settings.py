"""A settings.json of the wrong shape ([] / "x" / null / a value of the wrong type) falls back to the
defaults with a warning instead of breaking every command."""

from __future__ import annotations

import json

import pytest

from modeldesk.app.settings import Settings


@pytest.mark.parametrize(
    "content", ["[]", '"x"', "null", "42", '{"service_port": "eighty", "device": 3}', "{not json"]
)
def test_bad_settings_fall_back_to_defaults_with_a_warning(content, tmp_path, cli):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "settings.json").write_text(content, encoding="utf-8")
    code, out, err = cli(ws, "project", "list", "--json")
    assert code == 0, err
    assert json.loads(out) == {"projects": []}
    assert "warning" in err and "settings.json" in err
    (ws / "settings.json").write_text(content, encoding="utf-8")  # one that cannot be parsed was set aside
    warnings: list = []
    assert Settings.load(ws, warnings) == Settings()
    assert len(warnings) >= 1 and "settings.json" in warnings[0]


def test_good_keys_are_kept_beside_a_bad_one(tmp_path):
    (tmp_path / "settings.json").write_text(
        '{"service_port": 9000, "thumbnail_size": "big"}', encoding="utf-8"
    )
    settings = Settings.load(tmp_path, [])
    assert settings.service_port == 9000 and settings.thumbnail_size == Settings().thumbnail_size
