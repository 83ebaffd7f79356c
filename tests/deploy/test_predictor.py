from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from modeldesk.deploy import ImageDecodeError, Predictor, preprocess_image
from modeldesk.deploy.image_input import image_batch_size, looks
from modeldesk.deploy.inputs import input_for


def test_predicts_the_synthetic_classes(standin_artifact, color_data):
    predictor = Predictor(standin_artifact, device="cpu", threads=1)
    paths, labels = zip(*color_data["val"])
    results = predictor.predict(list(paths))
    assert [r["label"] for r in results] == list(labels)
    for r in results:
        assert set(r["scores"]) == {"red", "green", "blue"}
        assert r["score"] == max(r["scores"].values())
        assert abs(sum(r["scores"].values()) - 1) < 1e-5


def test_batching_and_bytes_give_the_same_answer(standin_artifact, color_data):
    paths = [p for p, _ in color_data["val"]]
    small = Predictor(standin_artifact, device="cpu", batch_size=3).predict(paths)
    big = Predictor(standin_artifact, device="cpu", batch_size=64).predict(paths)
    raw = Predictor(standin_artifact, device="cpu").predict([open(p, "rb").read() for p in paths])
    for a, b, c in zip(small, big, raw):
        assert a["label"] == b["label"] == c["label"]
        assert a["score"] == pytest.approx(b["score"], abs=1e-6) == pytest.approx(c["score"], abs=1e-6)


def test_predict_tensors_uses_the_shared_preprocessing(standin_artifact, color_data):
    predictor = Predictor(standin_artifact, device="cpu")
    path = color_data["val"][0][0]
    probabilities = predictor.predict_tensors(preprocess_image(path, predictor.spec)[None])
    assert probabilities.shape == (1, 3)
    assert probabilities[0].max() == pytest.approx(predictor.predict([path])[0]["score"], abs=1e-6)
    with pytest.raises(ValueError, match="shape"):
        predictor.predict_tensors(np.zeros((1, 3, 100, 100), np.float32))


def test_bad_images_raise_a_decode_error_naming_the_file(standin_artifact, tmp_path):
    bad = tmp_path / "notes.jpg"
    bad.write_text("not an image")
    with pytest.raises(ImageDecodeError, match="notes.jpg"):
        Predictor(standin_artifact, device="cpu").predict([bad])


def test_concurrent_calls_get_their_own_answers(standin_artifact, color_data):
    predictor = Predictor(standin_artifact, device="cpu", threads=1)
    items = color_data["val"] * 2
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda item: predictor.predict([item[0]])[0]["label"], items))
    assert results == [label for _, label in items]


def test_larger_photos_and_more_looks_run_fewer_photos_at_a_time(standin_artifact):
    assert image_batch_size(224) == 16  # a classifier at 224 px keeps its batch of 16
    assert image_batch_size(224, looks=2) == 8
    assert image_batch_size(320, looks=3) == 2
    assert image_batch_size(640, looks=3) == image_batch_size(4096) == 1
    assert image_batch_size(64) == 16  # never above 16
    assert looks({"test_views": ["identity", "hflip", "shrink"]}) == 3
    assert looks({"views": ["identity", "hflip"]}) == 2
    assert looks({}) == 1

    predictor = Predictor(standin_artifact, device="cpu")
    card = predictor.input.card
    assert predictor.batch_size == image_batch_size(card["preprocessing"]["size"])
    detector = {
        **card,
        "preprocessing": {**card["preprocessing"], "size": 640},
        "test_views": ["a", "b", "c"],
    }
    assert input_for(detector).batch_size == 1
