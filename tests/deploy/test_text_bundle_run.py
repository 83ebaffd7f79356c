"""A text model's deploy bundle runs where ModelDesk cannot be imported and answers as the app and a bare
ONNX Runtime session do (English and Chinese texts).

No network: instead of a fresh venv (tests/deploy/test_bundle.py does that for an image model), the
bundle's server runs with ``python -S`` and only the interpreter's site-packages on its path (the
``served_bundle`` fixture of tests/conftest.py), which checks that ``import modeldesk`` fails there.
"""

from __future__ import annotations

import hashlib
import json
import urllib.request

import numpy as np
import onnxruntime as ort
import pytest

from modeldesk.deploy import Predictor, build_bundle, load_artifact
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.tasks import get_trainer

DATA = {
    "praise": [
        "味道很好，送餐很快",
        "非常好吃，下次还点",
        "great food, fast delivery",
        "lovely and fresh",
        "分量足，味道棒",
        "friendly driver, hot food",
        "包装精美，味道不错",
        "will order again",
    ],
    "complaint": [
        "太慢了，等了两个小时",
        "菜都凉了，很难吃",
        "cold and late",
        "terrible, refund please",
        "送错了，态度很差",
        "wrong order again",
        "难吃，退款",
        "the soup was spilled",
    ],
}
ASK = ["味道很好", "cold and late again", "送餐太慢了", "great, thanks!", "Ünïcode naïve text 😀"]


@pytest.mark.slow
def test_text_bundle_answers_without_modeldesk_as_the_app_and_bare_onnxruntime(served_bundle, tmp_path):
    samples = [
        LabeledSample(hashlib.sha256(t.encode()).hexdigest(), t, label, "test" if i % 4 == 3 else "train")
        for label, texts in DATA.items()
        for i, t in enumerate(texts)
    ]
    result = get_trainer("text-classification").train(
        samples, "text-classification/fast", tmp_path / "m", tmp_path / "c"
    )
    artifact = load_artifact(result.artifact_dir)
    server = served_bundle(build_bundle(artifact, tmp_path / "bundle"))
    request = urllib.request.Request(
        server.url + "/v1/predict",
        data=json.dumps({"texts": ASK}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        served = json.loads(response.read())["predictions"]
    # the bundle's own client sends a text file as text (it sent the file's base64 as the text)
    review = tmp_path / "review.txt"
    review.write_text(ASK[0], encoding="utf-8")
    client = server.client(review)
    assert client.returncode == 0, client.stderr
    by_client = json.loads(client.stdout)["predictions"][0]
    app = Predictor(artifact, device="cpu").predict(ASK)
    bare = ort.InferenceSession(str(artifact.model_path), providers=["CPUExecutionProvider"])
    raw = bare.run(None, {"text": np.array(ASK, dtype=object)})[0]
    assert (
        [p["label"] for p in served]
        == [p["label"] for p in app]
        == [artifact.labels[i] for i in raw.argmax(1)]
    )
    assert by_client["scores"] == pytest.approx(app[0]["scores"], abs=1e-6)
    for got, want, row in zip(served, app, raw):
        assert got["scores"] == pytest.approx(want["scores"], abs=1e-6)
        assert [got["scores"][label] for label in artifact.labels] == pytest.approx(row, abs=1e-6)
