"""The Open Inference Protocol v2 answers what /v1 answers, in JSON and in binary tensors."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from modeldesk.deploy.edge.oip import decode_bytes_elements, encode_bytes_elements


def binary_infer(
    client, name: str, input_name: str, items: list[bytes], outputs=("label", "score", "scores")
):
    """A request as tritonclient sends it: inputs and outputs in binary (the extension)."""
    blob = encode_bytes_elements(items)
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": input_name,
                    "shape": [len(items)],
                    "datatype": "BYTES",
                    "parameters": {"binary_data_size": len(blob)},
                }
            ],
            "outputs": [{"name": o, "parameters": {"binary_data": True}} for o in outputs],
        }
    ).encode()
    response = client.post(
        f"/v2/models/{name}/infer",
        content=header + blob,
        headers={
            "Inference-Header-Content-Length": str(len(header)),
            "Content-Type": "application/octet-stream",
        },
    )
    assert response.status_code == 200, response.text
    cut = int(response.headers["inference-header-content-length"])
    head, offset, tensors = json.loads(response.content[:cut]), cut, {}
    for output in head["outputs"]:
        size = output["parameters"]["binary_data_size"]
        raw = response.content[offset : offset + size]
        offset += size
        if output["datatype"] == "BYTES":
            tensors[output["name"]] = [v.decode() for v in decode_bytes_elements(raw, "answer")]
        else:
            count = len(raw) // 4
            tensors[output["name"]] = list(struct.unpack(f"<{count}f", raw))
    assert offset == len(response.content)
    return tensors


@pytest.fixture
def loaded(edge_factory, standin_artifact, sound_artifact, text_artifact):
    server, client = edge_factory()
    for name, source in (("colors", standin_artifact), ("sound", sound_artifact), ("reviews", text_artifact)):
        assert client.post("/v1/edge/models", json={"source": str(source), "name": name}).status_code == 200
    return client


def test_v2_answers_equal_v1_answers_for_an_image_a_text_and_a_sound_model(
    loaded, deploy_helpers, edge_helpers
):
    cases = [
        (
            "colors",
            "image",
            [deploy_helpers.color_image_bytes(c, i) for i, c in enumerate(["red", "blue", "green"])],
        ),
        ("reviews", "text", [b"cold and late, refund", b"lovely and fresh"]),
        ("sound", "audio", [edge_helpers.tone_wav(0.9), edge_helpers.tone_wav(0.01)]),
    ]
    for name, input_name, items in cases:
        field = {"image": "images", "text": "texts", "audio": "audios"}[input_name]
        values = [v.decode() if input_name == "text" else base64.b64encode(v).decode() for v in items]
        v1 = loaded.post(f"/v1/models/{name}/predict", json={field: values})
        assert v1.status_code == 200, v1.text
        expected = v1.json()["predictions"]
        labels = loaded.get(f"/v2/models/{name}").json()["parameters"]["labels"]

        binary = binary_infer(loaded, name, input_name, items)
        as_json = loaded.post(
            f"/v2/models/{name}/infer",
            json={
                "id": "r1",
                "inputs": [{"name": input_name, "shape": [len(items)], "datatype": "BYTES", "data": values}],
            },
        )
        assert as_json.status_code == 200, as_json.text
        body = as_json.json()
        assert body["id"] == "r1" and body["model_name"] == name and body["model_version"] == "1"
        outputs = {o["name"]: o for o in body["outputs"]}
        assert outputs["scores"]["shape"] == [len(items), len(labels)]
        for answer in (binary, {k: v["data"] for k, v in outputs.items()}):
            assert answer["label"] == [p["label"] for p in expected]
            assert answer["score"] == pytest.approx([p["score"] for p in expected], abs=1e-6)
            flat = [p["scores"][label] for p in expected for label in labels]
            assert answer["scores"] == pytest.approx(flat, abs=1e-6)
    # the models really tell their inputs apart (the comparison above is not between constant answers)
    assert binary_infer(loaded, "sound", "audio", [edge_helpers.tone_wav(0.9)])["label"] == ["loud"]
    assert binary_infer(loaded, "sound", "audio", [edge_helpers.tone_wav(0.01)])["label"] == ["quiet"]


def test_v2_health_metadata_and_refusals(loaded):
    assert loaded.get("/v2/health/live").json() == {"live": True}
    assert loaded.get("/v2/health/ready").status_code == 200
    assert "binary_tensor_data" in loaded.get("/v2").json()["extensions"]
    meta = loaded.get("/v2/models/colors/versions/1").json()
    assert meta["inputs"] == [{"name": "image", "datatype": "BYTES", "shape": [-1]}]
    assert loaded.get("/v2/models/colors/ready").json()["ready"] is True
    assert loaded.get("/v2/models/nothing/ready").status_code == 404
    assert loaded.get("/v2/models/colors/versions/7").status_code == 404
    bad = [
        {"inputs": [{"name": "image", "shape": [1], "datatype": "FP32", "data": [1.0]}]},
        {"inputs": [{"name": "image", "shape": [2], "datatype": "BYTES", "data": ["aGVsbG8="]}]},
        {"inputs": []},
    ]
    for body in bad:
        response = loaded.post("/v2/models/colors/infer", json=body)
        assert response.status_code == 422 and response.json()["error"]
    short = loaded.post(
        "/v2/models/colors/infer",
        content=b'{"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": 99}}]}',
        headers={"Inference-Header-Content-Length": "97"},
    )
    assert short.status_code == 400
