"""One suite over every registered task and template (scikit-learn's ``parametrize_with_checks`` is the
model): train on data the test makes, export, and check that the predictor, the service and the deploy
bundle give the app's answers, and that bad input gets a sentence naming it.

A new task gets these checks for free: its templates are read from the task registry. Only the data
is per (input kind, target), in ``MAKERS``; a task whose pair has no maker fails
``test_every_task_has_data_to_check_with`` until one is added. Each template is trained once per module
(``trained``) and shared by its checks, so the suite stays small enough for CI on 2 cores; the first
template of each task is also stopped once and resumed.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from modeldesk.app.sample_data import make_boxes_folder, make_shapes_folder, make_text_table
from modeldesk.app.workspace import Workspace
from modeldesk.deploy import Predictor
from modeldesk.errors import UserError
from modeldesk.trainers.tasks import list_tasks, task_templates

#: seconds each template may train for: enough for these few samples, short for CI
TIME_BUDGET = 20


def _images(folder: Path) -> tuple[Path, list[Path]]:
    make_shapes_folder(folder, per_class=8, seed=1, size=64)
    probes = make_shapes_folder(folder.parent / "probes", per_class=1, seed=7, size=64)
    return folder, sorted(probes.rglob("*.jpg"))


def _boxes(folder: Path) -> tuple[Path, list[Path]]:
    make_boxes_folder(folder, count=12, seed=1)
    probes = make_boxes_folder(folder.parent / "probes", count=2, seed=7)
    return folder, sorted(probes.glob("*.png"))


def _texts(folder: Path) -> tuple[Path, list[Path]]:
    folder.mkdir(parents=True)
    table = make_text_table(folder / "texts.csv", per_class=10, seed=1)
    probe = folder.parent / "probes.txt"
    probe.write_text("very tasty, fast delivery\n太慢了，菜都凉了\n", encoding="utf-8")
    return table, [probe]


def _write_wav(path: Path, freq: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = np.arange(int(0.6 * 16000)) / 16000
    x = 0.4 * np.sin(2 * np.pi * freq * t) + 0.02 * rng.standard_normal(t.size)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes((x * 32767).astype("<i2").tobytes())


def _clips(folder: Path) -> tuple[Path, list[Path]]:
    probes = []
    for label, freq in (("low", 300.0), ("high", 2400.0)):
        (folder / label).mkdir(parents=True)
        for i in range(8):
            _write_wav(folder / label / f"{label}{i}.wav", freq * (1 + 0.03 * i), seed=i)
        probe = folder.parent / f"probe_{label}.wav"
        _write_wav(probe, freq * 1.05, seed=99)
        probes.append(probe)
    return folder, probes


def _inspection(folder: Path) -> tuple[Path, list[Path]]:
    """Good parts and a few with a planted defect (``good/``, ``defect/<kind>/``), as inspection sets are
    laid out; the probes are one good part and one defect."""
    import importlib.util

    from PIL import Image

    spec = importlib.util.spec_from_file_location(
        "anomaly_data", Path(__file__).parent / "trainers" / "anomaly_data.py"
    )
    data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(data)
    plant_blob, texture, write_inspection_folder = data.plant_blob, data.texture, data.write_inspection_folder
    write_inspection_folder(folder, n_good=16, n_defect=4, seed=1)
    rng = np.random.default_rng(5)
    good, defect = texture(rng), plant_blob(texture(rng), rng)[0]
    probes = [folder.parent / "probe_good.png", folder.parent / "probe_defect.png"]
    for pixels, path in zip((good, defect), probes):
        Image.fromarray(pixels).save(path)
    return folder, probes


def _table(folder: Path, regression: bool) -> tuple[Path, list[Path]]:
    """A CSV of rows (a number, a category, a text and an identifier column; ``label`` to predict) and a
    JSON Lines file of rows to ask about, one with an unseen category and a missing number."""
    rng = np.random.default_rng(1)
    folder.mkdir(parents=True)
    lines = ["id,size,colour,note,label"]
    for i in range(60):
        size, colour = rng.uniform(0, 10), ["red", "green", "blue"][i % 3]
        note = ["a small round thing", "very large and heavy", "plain"][int(size) % 3]
        value = size * 3 + {"red": 0, "green": 5, "blue": 10}[colour] + rng.normal(0, 0.5)
        label = f"{value:.2f}" if regression else ("big" if size + (colour == "blue") * 3 > 6 else "small")
        lines.append(f"{1000 + i},{size:.3f},{colour},{note},{label}")
    table = folder / "rows.csv"
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    probe = folder.parent / "probes.jsonl"
    rows = [
        {"size": 9.5, "colour": "blue", "note": "very large"},
        {"size": "1.2", "colour": "red"},
        {"colour": "purple", "note": "never seen"},
    ]
    probe.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return table, [probe]


def _masks(folder: Path) -> tuple[Path, list[Path]]:
    """Scenes with a disk and a bar, ``images/`` + ``masks/`` + ``classes.txt``; two new scenes to probe."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "segmentation_data", Path(__file__).parent / "trainers" / "segmentation_data.py"
    )
    data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(data)
    data.write_mask_folder(folder, n=10, seed=1)
    data.write_mask_folder(folder.parent / "probes", n=2, seed=2)
    return folder, sorted((folder.parent / "probes" / "images").iterdir())


#: task -> maker, for a task whose data is not what its (input kind, target) pair usually means
TASK_MAKERS = {"anomaly-detection": _inspection, "tabular-regression": lambda f: _table(f, True)}
#: (input kind, target) -> folder -> (what to import, files to ask the model about)
MAKERS = {
    ("image", "label"): _images,
    ("image", "tags"): _images,
    ("image", "boxes"): _boxes,
    ("text", "label"): _texts,
    ("audio", "label"): _clips,
    ("row", "label"): lambda f: _table(f, False),
    ("image", "mask"): _masks,
}

TASKS = [task for task in list_tasks() if task.trainable]
TEMPLATES = [(task, template.name) for task in TASKS for template in task_templates(task.name)]
IDS = [name for _task, name in TEMPLATES]


def test_every_task_has_data_to_check_with():
    missing = [t.name for t in TASKS if (t.input_kind, t.target) not in MAKERS and t.name not in TASK_MAKERS]
    assert not missing, f"add a data maker to MAKERS for {missing}"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("conformance") / "ws")
    yield ws
    ws.close()


@pytest.fixture(scope="module")
def trained(workspace, tmp_path_factory):
    """template name -> (model id, exported artifact path, probe files); trained once per module."""
    done: dict = {}

    def train(task, template: str):
        if template not in done:
            folder = tmp_path_factory.mktemp(template.replace("/", "-"))
            maker = TASK_MAKERS.get(task.name) or MAKERS[task.input_kind, task.target]
            source, probes = maker(folder / "data")
            project = template.replace("/", "-")
            workspace.create_project(project, task.name)
            workspace.import_data(project, source)
            result = workspace.train(project, template, time_budget=TIME_BUDGET)
            exported = workspace.export_model(result["model"], folder / "export")
            done[template] = (result["model"], Path(exported["path"]), probes, folder)
        return done[template]

    return train


def _same(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if "boxes" in b:
            assert [x["label"] for x in a["boxes"]] == [x["label"] for x in b["boxes"]]
            for x, y in zip(a["boxes"], b["boxes"]):
                assert x["box"] == pytest.approx(y["box"], abs=0.5)
                assert x["score"] == pytest.approx(y["score"], abs=1e-4)
        else:
            assert a.get("label") == b.get("label") and a.get("tags") == b.get("tags")
            assert a["scores"] == pytest.approx(b["scores"], abs=1e-4)
            assert a.get("value") == pytest.approx(b.get("value"), rel=1e-5)


def _content_type(path: Path) -> str:
    return {".wav": "audio/wav", ".png": "image/png", ".jpg": "image/jpeg"}[path.suffix.lower()]


def _predictor_answers(path: Path, probes: list[Path]) -> list[dict]:
    predictor = Predictor(path, device="cpu")
    if predictor.input.inline:  # one text a line, as the app reads a text file
        texts = [line for p in probes for line in p.read_text(encoding="utf-8").splitlines() if line]
        return predictor.predict(texts)
    return predictor.predict([str(p) for p in probes])


def _strip(answers: list[dict]) -> list[dict]:
    return [{k: v for k, v in a.items() if k not in ("file", "text")} for a in answers]


@pytest.mark.parametrize("task, template", TEMPLATES, ids=IDS)
def test_the_exported_predictor_answers_as_the_app(trained, workspace, task, template):
    model, path, probes, _ = trained(task, template)
    app = workspace.predict(model, probes)
    assert app and all("score" in a or "boxes" in a for a in app)
    _same(_strip(app), _predictor_answers(path, probes))


@pytest.mark.parametrize("task, template", TEMPLATES, ids=IDS)
def test_the_service_answers_as_the_app(trained, task, template):
    from starlette.testclient import TestClient

    from modeldesk.deploy.service import create_app

    _model, path, probes, _ = trained(task, template)
    want = _predictor_answers(path, probes)
    with TestClient(create_app(path, threads=1), base_url="http://127.0.0.1:8000") as client:
        described = client.get("/v1/model").json()["input"]
        if described["console"]["widget"] in ("text", "form"):  # typed in: posted as JSON
            texts = [line for p in probes for line in p.read_text(encoding="utf-8").splitlines() if line]
            response = client.post("/v1/predict", json={described["json_fields"][1]: texts})
        else:
            files = [("file", (p.name, p.read_bytes(), _content_type(p))) for p in probes]
            response = client.post("/v1/predict", files=files)
    assert response.status_code == 200, response.text
    _same(response.json()["predictions"], want)


@pytest.mark.parametrize("task, template", TEMPLATES, ids=IDS)
def test_the_bundle_answers_without_modeldesk(trained, workspace, task, template):
    model, path, probes, folder = trained(task, template)
    bundle = Path(workspace.export_model(model, folder / "bundle", bundle=True)["path"])
    script = (
        "import json, sys; from modeldesk_server.predictor import Predictor; "
        "p = Predictor(sys.argv[1], device='cpu'); "
        "items = [l for f in sys.argv[2:] for l in open(f, encoding='utf-8').read().splitlines() if l] "
        "if p.input.inline else sys.argv[2:]; "
        "out = p.predict(items); shape = getattr(p.output, 'respond', None); "  # as the service answers
        "print(json.dumps([shape(x) for x in out] if shape else out))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(bundle), *site.getsitepackages()])
    run = subprocess.run(
        [sys.executable, "-S", "-c", script, str(bundle / "model"), *map(str, probes)],
        capture_output=True,
        text=True,
        env=env,
        cwd=bundle,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    _same(json.loads(run.stdout), _predictor_answers(path, probes))


@pytest.mark.parametrize("task, template", TEMPLATES, ids=IDS)
def test_bad_input_gets_a_sentence_naming_it(trained, workspace, task, template):
    model, _path, _probes, folder = trained(task, template)
    if Predictor(_path).input.inline:
        bad = folder / "bad.txt"
        bad.write_bytes(b"\xff\xfe\x00 not utf-8 \xc3\x28")
    else:
        bad = folder / "bad.bin"
        bad.write_bytes(b"this is not a media file at all")
    with pytest.raises((UserError, ValueError)) as caught:
        workspace.predict(model, [bad])
    message = str(caught.value)
    assert bad.name in message and len(message.splitlines()) == 1, message


FIRST = [(task, task_templates(task.name)[0].name) for task in TASKS]


@pytest.mark.parametrize("task, template", FIRST, ids=[name for _task, name in FIRST])
def test_a_stopped_run_resumes_and_finishes(trained, workspace, task, template):
    """Stopped once it has started (or, on a fast machine, before), the run is resumed and gives a model."""
    _model, _path, probes, _ = trained(task, template)  # the project, its data and the feature cache
    job_id = workspace.submit_training(template.replace("/", "-"), template, time_budget=TIME_BUDGET)
    deadline = time.monotonic() + 120
    while not workspace.job_events(job_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    workspace.cancel_job(job_id)
    stopped = workspace.jobs.wait(job_id, timeout=300)
    assert stopped["state"] in ("cancelled", "done"), stopped
    if stopped["state"] == "cancelled":
        workspace.resume_job(job_id)
    result = workspace.wait_job(job_id)
    answers = workspace.predict(result["model"], probes)
    assert answers and all("label" in a or "boxes" in a for a in answers)
