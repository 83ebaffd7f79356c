"""Small projects of every task, made from the shared benchmark data, for packaging/screenshots.py.

Each builder copies a few files of one data set into a folder, imports it into a new project as a
user would (the tags project gets two tags per digit photo) and, when asked, trains the task's
first recipe so that Evaluate and Deploy have something to show. Not imported at run time.
"""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

BENCHDATA = Path("/work/shared/benchdata")


def _pick(paths, n: int) -> list[Path]:
    """``n`` of ``paths``, the same ones every time (by a hash of the name, not the sort order)."""
    return sorted(paths, key=lambda p: hashlib.sha1(p.name.encode()).hexdigest())[:n]


def _per_class(src: Path, dst: Path, per_class: int, suffixes: tuple, classes: int = 10) -> Path:
    for label_dir in sorted(p for p in src.iterdir() if p.is_dir())[:classes]:
        (dst / label_dir.name).mkdir(parents=True, exist_ok=True)
        files = [p for p in label_dir.iterdir() if p.suffix.lower() in suffixes]
        for path in _pick(files, per_class):
            shutil.copy2(path, dst / label_dir.name / path.name)
    return dst


def _images(data: Path, tmp: Path) -> Path:
    return _per_class(data / "sign_digits", tmp / "digits", 6, (".jpg", ".jpeg"))


def _sounds(data: Path, tmp: Path) -> Path:
    return _per_class(data / "fsdd_audio", tmp / "sounds", 5, (".wav",))


def _texts(data: Path, tmp: Path) -> Path:
    with open(data / "sms_spam_en" / "data.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows.sort(key=lambda r: hashlib.sha1(r["text"].encode()).hexdigest())
    keep = [r for r in rows if r["label"] == "spam"][:20] + [r for r in rows if r["label"] == "ham"][:40]
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / "messages.csv"
    with open(out, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["text", "label"])
        writer.writeheader()
        writer.writerows(keep)
    return out


def _boxes(data: Path, tmp: Path) -> Path:
    dst = tmp / "raccoons"
    dst.mkdir(parents=True, exist_ok=True)
    for image in _pick(list((data / "raccoon_voc").glob("*.jpg")), 16):
        shutil.copy2(image, dst / image.name)
        shutil.copy2(image.with_suffix(".xml"), dst / image.with_suffix(".xml").name)
    return dst


def _tiles(data: Path, tmp: Path) -> Path:
    src, dst = data / "magnetic_tile", tmp / "tiles"
    (dst / "good").mkdir(parents=True, exist_ok=True)
    for path in _pick(list((src / "good").glob("*.jpg")), 24):
        shutil.copy2(path, dst / "good" / path.name)
    for kind in sorted(p for p in (src / "defect").iterdir() if p.is_dir()):
        (dst / "defect" / kind.name).mkdir(parents=True, exist_ok=True)
        for path in _pick(list(kind.glob("*.jpg")), 2):
            shutil.copy2(path, dst / "defect" / kind.name / path.name)
    return dst


def _masks(data: Path, tmp: Path) -> Path:
    """A dozen CamVid frames with their index masks, laid out as CamVid is (train/, trainannot/)."""
    src, dst = data / "camvid" / "CamVid", tmp / "camvid"
    (dst / "train").mkdir(parents=True, exist_ok=True)
    (dst / "trainannot").mkdir(exist_ok=True)
    shutil.copy2(src / "classes.txt", dst / "classes.txt")
    for frame in _pick(list((src / "train").glob("*.png")), 12):
        shutil.copy2(frame, dst / "train" / frame.name)
        shutil.copy2(src / "trainannot" / frame.name, dst / "trainannot" / frame.name)
    return dst


def _table(data: Path, tmp: Path) -> Path:
    """120 Titanic passengers, every column as the shared file has it (the project predicts Survived)."""
    with open(data / "titanic" / "data.csv", encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        columns, rows = reader.fieldnames, list(reader)
    rows.sort(key=lambda r: hashlib.sha1(r["PassengerId"].encode()).hexdigest())
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / "passengers.csv"
    with open(out, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows[:120])
    return out


def _tag(ws, name: str) -> None:
    """Two tags per digit photo: even or odd, low (0-4) or high (5-9)."""
    for sample in ws.store.samples(ws.project(name)):
        folder = Path(sample.source).parent.name
        digit = int(folder if folder.isdigit() else sample.labels[0])
        ws.store.set_tags(sample.id, ["even" if digit % 2 == 0 else "odd", "low" if digit < 5 else "high"])
    for label in [str(d) for d in range(10)]:  # the folders' names, imported as tags: none is used now
        ws.store.delete_label(ws.project(name), label)


# short name -> (project name, task, data maker, after import[, the project's options])
TASKS = {
    "image": ("Hand signs", "image-classification", _images, None),
    "tags": ("Sign tags", "image-multilabel", _images, _tag),
    "boxes": ("Raccoons", "object-detection", _boxes, None),
    "text": ("Spam or not", "text-classification", _texts, None),
    "sound": ("Spoken digits", "sound-classification", _sounds, None),
    "anomaly": ("Tile inspection", "anomaly-detection", _tiles, None),
    "masks": ("Street scenes", "segmentation", _masks, None),
    "table": ("Titanic", "tabular-classification", _table, None, {"target_column": "Survived"}),
}


def try_input(short: str, data: Path = BENCHDATA) -> Path | str | dict | None:
    """What to try the model of task ``short`` with on the Deploy page: a photo or clip it did not train
    on, a text, or a table row (a passenger not among the 120 the project has)."""
    if short == "text":
        return "WINNER!! You have been selected for a free holiday. Call now to claim your prize."
    if short == "table":
        return {"Pclass": 1, "Name": "Smith, Mrs. Ada", "Sex": "female", "Age": 34, "Fare": 80.0}
    folder, suffix = {
        "image": ("sign_digits/7", ".jpg"),
        "tags": ("sign_digits/7", ".jpg"),
        "boxes": ("raccoon_voc", ".jpg"),
        "sound": ("fsdd_audio/7", ".wav"),
        "anomaly": ("magnetic_tile/defect/break", ".jpg"),
        "masks": ("camvid/CamVid/val", ".png"),
    }.get(short, (None, None))
    if folder is None:
        return None
    found = [p for p in (data / folder).iterdir() if p.suffix.lower() == suffix]  # IMG_1179.JPG too
    picked = sorted(found, key=lambda p: hashlib.sha1(p.name.encode()).hexdigest())
    return picked[-1] if picked else None  # the end of the order make_project picks from


def make_project(ws, short: str, tmp: Path, *, train: bool, data: Path = BENCHDATA) -> str:
    """The project of task ``short`` (a key of :data:`TASKS`), made unless the workspace has it; its name."""
    name, task, make_data, after, *options = TASKS[short]
    if name in [p["name"] for p in ws.list_projects()]:
        return name
    ws.create_project(name, task, **(options[0] if options else {}))
    ws.import_data(name, make_data(data, tmp / short))
    if after is not None:
        after(ws, name)
    if train:
        ws.train(name, ws.task(task)["templates"][0])
    return name
