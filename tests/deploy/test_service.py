import base64
import json
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from modeldesk.deploy import Predictor, create_app
from modeldesk.deploy.server import check_bind

LOCAL = "http://127.0.0.1:8000"  # the service answers only requests addressed to this machine


@pytest.fixture(scope="module")
def client(standin_artifact):
    with TestClient(
        create_app(standin_artifact, max_request_bytes=300_000, threads=1),
        raise_server_exceptions=False,
        base_url=LOCAL,
    ) as c:
        yield c


@pytest.fixture(scope="module")
def locked(standin_artifact):
    with TestClient(
        create_app(standin_artifact, token="s3cret"), raise_server_exceptions=False, base_url=LOCAL
    ) as c:
        yield c


def png_header_bomb(width=50_000, height=50_000) -> bytes:
    """A tiny PNG whose header claims width x height pixels."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 16))
        + chunk(b"IEND", b"")
    )


def test_multipart_json_and_raw_bodies_agree_with_in_app_prediction(client, standin_artifact, deploy_helpers):
    image = deploy_helpers.color_image_bytes("blue", 7)
    expected = Predictor(standin_artifact, device="cpu").predict([image])[0]
    answers = [
        client.post("/v1/predict", files={"file": ("a.png", image, "image/png")}),
        client.post("/v1/predict", json={"image": base64.b64encode(image).decode()}),
        client.post(
            "/v1/predict", json={"images": ["data:image/png;base64," + base64.b64encode(image).decode()]}
        ),
        client.post("/v1/predict", content=image, headers={"content-type": "image/png"}),
    ]
    for response in answers:
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["latency_ms"] >= 0
        (prediction,) = body["predictions"]
        assert prediction["label"] == expected["label"] == "blue"
        assert prediction["scores"] == pytest.approx(expected["scores"], abs=1e-6)


def test_several_files_come_back_in_order(client, deploy_helpers):
    labels = ["red", "green", "blue", "green"]
    files = [
        ("file", (f"{i}.png", deploy_helpers.color_image_bytes(label, i), "image/png"))
        for i, label in enumerate(labels)
    ]
    response = client.post("/v1/predict", files=files)
    assert [p["label"] for p in response.json()["predictions"]] == labels


def test_model_health_readiness_and_docs(client, standin_artifact):
    card = client.get("/v1/model").json()
    assert card["labels"] == ["red", "green", "blue"] and card["task"] == "image-classification"
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["providers"][-1] == "CPUExecutionProvider"
    document = client.get("/openapi.json").json()
    assert document["openapi"].startswith("3.") and "/v1/predict" in document["paths"]
    docs = client.get("/docs")
    assert docs.status_code == 200 and "/v1/predict" in docs.text and "<script src" not in docs.text


def test_console_is_offline_html(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    text = page.text
    assert "{{" not in text and "v1/predict" in text and "drop" in text
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    assert "--brand:" in text and ".topbar" in text  # base.css's palette, then console.css, inlined


def test_readyz_is_503_before_startup(standin_artifact):
    client = TestClient(create_app(standin_artifact), base_url=LOCAL)  # not entered: no lifespan yet
    assert client.get("/readyz").status_code == 503
    assert client.post("/v1/predict", content=b"x", headers={"content-type": "image/png"}).status_code == 503


HOSTILE = {
    "not an image": dict(files={"file": ("a.png", b"hello, not an image", "image/png")}),
    "truncated": "truncated",
    "decompression bomb": "bomb",
    "over the pixel limit": "large",
    "wrong content type": dict(content=b"hello", headers={"content-type": "text/plain"}),
    "no content type": dict(content=b"hello"),
    "malformed json": dict(content=b'{"image": ', headers={"content-type": "application/json"}),
    "json not an object": dict(json=[1, 2]),
    "json wrong key": dict(json={"picture": "abc"}),
    "json both keys": dict(json={"image": "a", "images": []}),
    "bad base64": dict(json={"image": "***"}),
    "base64 not a string": dict(json={"image": 12}),
    "images not a list": dict(json={"images": "abc"}),
    "empty images": dict(json={"images": []}),
    "empty file": dict(files={"file": ("a.png", b"", "image/png")}),
    "multipart text field": dict(data={"image": "abc"}, files={"other": ("a.txt", b"", "text/plain")}),
    "malformed multipart": dict(
        content=b"--xx\r\nbroken", headers={"content-type": "multipart/form-data; boundary=xx"}
    ),
    "oversized body": dict(content=b"\0" * 400_000, headers={"content-type": "image/png"}),
    "oversized chunked body": dict(
        content=iter([b"\0" * 100_000] * 4), headers={"content-type": "image/png"}
    ),
    "too many images": dict(json={"images": ["aGk="] * 40}),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_requests_get_a_4xx_with_a_message(client, deploy_helpers, name):
    request = HOSTILE[name]
    if request == "truncated":
        image = deploy_helpers.color_image_bytes("red", 1)
        request = dict(files={"file": ("t.png", image[: len(image) // 2], "image/png")})
    elif request == "bomb":
        request = dict(files={"file": ("bomb.png", png_header_bomb(), "image/png")})
    elif request == "large":
        request = dict(files={"file": ("big.png", png_header_bomb(10_000, 10_000), "image/png")})
    response = client.post("/v1/predict", **request)
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert isinstance(response.json()["error"], str) and response.json()["error"]
    if name == "decompression bomb":
        assert response.status_code == 422 and "too large" in response.json()["error"]
    if name in ("not an image", "truncated", "decompression bomb"):
        assert response.json()["error"].startswith(request["files"]["file"][0] + ":")
    if name == "over the pixel limit":
        assert response.status_code == 422 and "10000x10000" in response.json()["error"]
    if name.startswith("oversized"):
        assert response.status_code == 413


def test_unknown_routes_and_methods_are_json_4xx(client):
    assert client.get("/nope").json() == {"error": "Not Found"}
    response = client.get("/v1/predict")
    assert response.status_code == 405 and response.json()["error"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.sampled_from(["image", "images", "x"]) | st.text(max_size=5), children, max_size=3
            )
        ),
        max_leaves=10,
    )
)
def test_fuzzed_json_bodies_never_cause_a_5xx(client, body):
    response = client.post(
        "/v1/predict", content=json.dumps(body), headers={"content-type": "application/json"}
    )
    assert response.status_code < 500, response.text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.binary(max_size=200),
    st.sampled_from(["application/json", "multipart/form-data; boundary=b", "image/png"]),
)
def test_fuzzed_raw_bodies_never_cause_a_5xx(client, body, content_type):
    response = client.post("/v1/predict", content=body, headers={"content-type": content_type})
    assert 400 <= response.status_code < 500, response.text


def test_unexpected_errors_are_a_generic_500(standin_artifact, deploy_helpers, caplog):
    app = create_app(standin_artifact)
    with TestClient(app, raise_server_exceptions=False, base_url=LOCAL) as client:

        def boom(items):
            raise RuntimeError("secret internal detail")

        app.state.batcher.run_items = boom
        response = client.post(
            "/v1/predict", files={"file": ("a.png", deploy_helpers.color_image_bytes("red", 1), "image/png")}
        )
    assert response.status_code == 500
    assert response.json() == {"error": "internal server error"}
    assert "secret internal detail" in caplog.text


def test_token_is_required_for_everything_but_health_and_pages_without_model_data(locked, deploy_helpers):
    image = deploy_helpers.color_image_bytes("green", 2)
    for path in ("/healthz", "/", "/docs", "/openapi.json"):
        assert locked.get(path).status_code == 200
    assert "green" not in locked.get("/openapi.json").text  # the labels are model data
    for path in ("/v1/model", "/readyz"):
        assert locked.get(path).status_code == 401
        assert locked.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert locked.get(path, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    response = locked.post("/v1/predict", files={"file": ("a.png", image, "image/png")})
    assert response.status_code == 401 and "token" in response.json()["error"]
    response = locked.post(
        "/v1/predict",
        files={"file": ("a.png", image, "image/png")},
        headers={"Authorization": "Bearer s3cret"},
    )
    assert response.json()["predictions"][0]["label"] == "green"
    in_url = locked.get("/v1/model?token=s3cret")  # a token in a URL ends up in logs: refused
    assert in_url.status_code == 401


def test_binding_beyond_localhost_needs_a_long_token():
    for host in ("127.0.0.1", "localhost", "::1"):
        check_bind(host, 8000, None)
    check_bind("0.0.0.0", 8000, "a-token-of-sixteen+")
    with pytest.raises(ValueError, match="token"):
        check_bind("0.0.0.0", 8000, None)
    with pytest.raises(ValueError, match="token"):
        check_bind("192.168.1.20", 8000, "")
    with pytest.raises(ValueError, match="at least 16 characters"):
        check_bind("0.0.0.0", 8000, "t")


def test_eight_concurrent_clients_get_the_right_answers(client, standin_artifact, deploy_helpers):
    labels = ["red", "green", "blue"]
    jobs = [(labels[i % 3], deploy_helpers.color_image_bytes(labels[i % 3], 50 + i)) for i in range(24)]
    expected = Predictor(standin_artifact, device="cpu").predict([image for _, image in jobs])

    def call(job):
        _, image = job
        return client.post("/v1/predict", files={"file": ("x.png", image, "image/png")}).json()[
            "predictions"
        ][0]

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(call, jobs))
    for (label, _), answer, want in zip(jobs, answers, expected):
        assert answer["label"] == label == want["label"]
        assert answer["scores"] == pytest.approx(want["scores"], abs=1e-6)


def test_concurrent_requests_are_batched_and_each_gets_its_own_answers(standin_artifact, deploy_helpers):
    """32 clients at once: fewer session runs than requests, and every answer is the right one."""
    labels = ["red", "green", "blue"]
    jobs = [(labels[i % 3], deploy_helpers.color_image_bytes(labels[i % 3], 80 + i)) for i in range(64)]
    app = create_app(standin_artifact, threads=1)
    with TestClient(app, base_url=LOCAL) as client:

        def call(job):
            return client.post("/v1/predict", files={"file": ("x.png", job[1], "image/png")}).json()[
                "predictions"
            ][0]

        with ThreadPoolExecutor(32) as pool:
            answers = list(pool.map(call, jobs))
        batcher = app.state.batcher
        assert [a["label"] for a in answers] == [label for label, _ in jobs]
        assert batcher.items == 64 and batcher.batches < 64
