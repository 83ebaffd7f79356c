"""The browser console of a table model: a form of the model's columns (categories with the values seen
in training) and a CSV upload, served inside the console page, offline. The form and the CSV upload
were driven in headless Chromium by hand (see the tables-ui report); this keeps what they rely on."""

from starlette.testclient import TestClient

from modeldesk.deploy import create_app
from modeldesk.deploy.row_input import RowInput

LOCAL = "http://127.0.0.1"
CARD = {
    "preprocessing": {
        "kind": "row",
        "columns": [
            {"name": "age", "type": "number", "input": "c0"},
            {"name": "sex", "type": "category", "input": "c1", "values": ["female", "male"]},
        ],
    }
}


def test_the_console_asks_for_a_form_of_the_columns():
    console = RowInput(CARD).describe()["console"]
    assert console["widget"] == "form"
    assert console["columns"] == [
        {"name": "age", "type": "number", "values": []},
        {"name": "sex", "type": "category", "values": ["female", "male"]},
    ]


def test_the_console_page_carries_the_row_form_and_csv_upload(standin_artifact):
    with TestClient(create_app(standin_artifact), base_url=LOCAL) as client:
        text = client.get("/").text
    assert "{{" not in text
    assert "window.modeldeskRows = " in text and 'id="row-csv"' in text and 'id="row-form"' in text
    assert text.index("window.modeldeskConsole = ") < text.index("window.modeldeskRows = ")
