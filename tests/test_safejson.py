"""The limits of modeldesk.safejson: deep nesting, long numbers and malformed JSON get a message."""

import pytest

from modeldesk import safejson


def test_plain_documents_parse_as_json_does():
    assert safejson.loads('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


@pytest.mark.parametrize("depth", [65, 1_000, 100_000])
def test_deep_nesting_is_refused_with_a_message(depth):
    with pytest.raises(safejson.JSONLimitError, match="nested too deep"):
        safejson.loads("[" * depth + "]" * depth)


def test_nesting_at_the_limit_parses():
    assert safejson.loads("[" * 64 + "]" * 64) is not None


@pytest.mark.parametrize("number", ["9" * 5_000, "1." + "5" * 5_000])
def test_long_numbers_are_refused_with_a_message(number):
    with pytest.raises(safejson.JSONLimitError, match="number of"):
        safejson.loads('{"id": ' + number + "}")


@pytest.mark.parametrize("text", ["{", "NaN", b"\xff\xfe{}"])
def test_malformed_json_is_a_limit_error(text):
    with pytest.raises(safejson.JSONLimitError):
        safejson.loads(text)


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "instances.json"
    path.write_text("[" * 200 + "]" * 200)
    with pytest.raises(safejson.JSONLimitError, match="instances.json: it is nested too deep"):
        safejson.load_file(path)
