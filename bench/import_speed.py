"""Import speed against a plain file copy, measured in the same run.

For each data set: the time ``import_path`` takes (verify, hash, store media, commit rows) next to the
time to ``shutil.copy`` the same files one by one into an empty folder, files per second for both, and
the import's peak memory (resident set size sampled every 10 ms, above what the process held before).
The sets: sign_digits and raccoon_voc from benchdata, a folder per class of generated JPEGs, and a COCO
file in the official layout (``annotations/instances_val2017.json`` + ``val2017/``) over generated
JPEGs with 1-3 boxes each.

Run: ``python bench/import_speed.py [--generated 10000] [--coco 10000] [--benchdata /work/shared/benchdata]``
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psutil
from PIL import Image, ImageDraw

from modeldesk.datasets import Store, import_path
from modeldesk.datasets.detect import iter_files


def _jpeg(k: int, size: int) -> bytes:
    image = Image.new("RGB", (size, size), (k * 37 % 256, k * 11 % 256, 120))
    draw = ImageDraw.Draw(image)
    cell = size // 4
    for bit in range(16):  # the index in binary as black/white cells: every file differs
        fill = (255, 255, 255) if k >> bit & 1 else (0, 0, 0)
        x, y = bit % 4 * cell, bit // 4 * cell
        draw.rectangle([x, y, x + cell - 1, y + cell - 1], fill=fill)
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def generate_coco(folder: Path, count: int, size: int = 64, classes: int = 5) -> None:
    """The official COCO layout: ``count`` distinct JPEGs in ``val2017/`` and their 1-3 boxes each in
    ``annotations/instances_val2017.json``."""
    (folder / "val2017").mkdir(parents=True)
    images, annotations = [], []
    for k in range(count):
        name = f"{k:012d}.jpg"
        (folder / "val2017" / name).write_bytes(_jpeg(k + 1_000_000, size))
        images.append({"id": k, "file_name": name, "width": size, "height": size})
        for j in range(1 + k % 3):
            box = [4.0 + 8 * j, 4.0 + 5 * j, 20.0, 16.0]
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": k,
                    "category_id": 1 + (k + j) % classes,
                    "bbox": box,
                    "area": box[2] * box[3],
                    "iscrowd": 0,
                }
            )
    categories = [{"id": c + 1, "name": f"thing{c}", "supercategory": ""} for c in range(classes)]
    (folder / "annotations").mkdir()
    (folder / "annotations" / "instances_val2017.json").write_text(
        json.dumps({"images": images, "annotations": annotations, "categories": categories})
    )


class PeakRSS:
    """The largest resident set size seen while the block runs, above the size at its start."""

    def __init__(self, every_s: float = 0.01):
        self.every_s, self.peak, self._stop = every_s, 0, threading.Event()

    def __enter__(self) -> PeakRSS:  # noqa: PYI034 - typing.Self needs Python 3.11
        self._process = psutil.Process()
        self.base = self._process.memory_info().rss
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(self.every_s):
            self.peak = max(self.peak, self._process.memory_info().rss - self.base)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss - self.base)


def generate_images(folder: Path, count: int, size: int = 64, classes: int = 10) -> None:
    """``count`` distinct small JPEGs in ``classes`` class folders."""
    for k in range(count):
        target = folder / f"class{k % classes}" / f"img{k:05d}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_jpeg(k, size))


def time_copy(src: Path, dest: Path) -> tuple[int, float]:
    """Copy every file under ``src`` into ``dest`` with shutil.copy; return (files, seconds)."""
    dest.mkdir(parents=True)
    start = time.perf_counter()
    count = 0
    for count, path in enumerate(iter_files(src), 1):
        shutil.copy(path, dest / f"{count}_{path.name}")
    return count, time.perf_counter() - start


def time_import(src: Path, workspace: Path, task: str) -> tuple[int, float, dict]:
    """Import ``src`` into a fresh workspace; return (files seen, seconds, report)."""
    from modeldesk.trainers.tasks import get_task

    spec = get_task(task)
    with Store(workspace) as store:
        project = store.create_project("bench", task, kind=spec.input_kind, target=spec.target)
        with PeakRSS() as memory:
            start = time.perf_counter()
            report = import_path(store, project, src)
            seconds = time.perf_counter() - start
    files = report.added + report.duplicates + len(report.failed)
    return files, seconds, {**report.to_dict(), "peak_mb": memory.peak / 2**20}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchdata", type=Path, default=Path("/work/shared/benchdata"))
    parser.add_argument("--generated", type=int, default=10_000, help="how many small images to generate")
    parser.add_argument("--coco", type=int, default=10_000, help="how many images the generated COCO set has")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="md-bench-") as tmp:
        tmp = Path(tmp)
        sets = [
            (args.benchdata / "sign_digits", "image-classification", "sign_digits"),
            (args.benchdata / "raccoon_voc", "object-detection", "raccoon_voc"),
        ]
        sets = [s for s in sets if s[0].is_dir()]
        if args.generated:
            start = time.perf_counter()
            generate_images(tmp / "generated", args.generated)
            print(f"generated {args.generated} images of 64x64 in {time.perf_counter() - start:.1f} s")
            sets.append((tmp / "generated", "image-classification", f"generated {args.generated}"))
        if args.coco:
            start = time.perf_counter()
            generate_coco(tmp / "coco", args.coco)
            print(f"generated a COCO set of {args.coco} images in {time.perf_counter() - start:.1f} s")
            sets.append((tmp / "coco", "object-detection", f"COCO {args.coco}"))
        rows = []
        for index, (src, task, name) in enumerate(sets):
            for path in iter_files(src):  # warm the page cache, so neither timing pays for the first read
                path.read_bytes()
            copied, copy_s = time_copy(src, tmp / f"copy{index}")
            files, import_s, report = time_import(src, tmp / f"ws{index}", task)
            rows.append(
                (
                    name,
                    files,
                    report["added"],
                    import_s,
                    files / import_s,
                    copied,
                    copy_s,
                    copied / copy_s,
                    import_s / copy_s,
                    report["peak_mb"],
                    report["boxes"],
                )
            )
            shutil.rmtree(tmp / f"copy{index}")
        header = (
            "data set",
            "items",
            "added",
            "import s",
            "items/s",
            "files copied",
            "copy s",
            "files/s",
            "import/copy",
            "peak MB",
            "boxes",
        )
        print(
            f"{header[0]:<18}{header[1]:>7}{header[2]:>7}{header[3]:>10}{header[4]:>9}"
            f"{header[5]:>14}{header[6]:>8}{header[7]:>9}{header[8]:>13}{header[9]:>9}{header[10]:>8}"
        )
        for name, files, added, import_s, ips, copied, copy_s, cps, ratio, peak, boxes in rows:
            print(
                f"{name:<18}{files:>7}{added:>7}{import_s:>10.2f}{ips:>9.0f}{copied:>14}{copy_s:>8.2f}"
                f"{cps:>9.0f}{ratio:>12.1f}x{peak:>9.0f}{boxes:>8}"
            )
        print(
            f"({os.cpu_count()} logical CPUs, files in the page cache; copy = shutil.copy of each file "
            "of the set, annotations included; import = verify + hash + store + commit; peak MB = resident "
            "memory above the start of the import)"
        )


if __name__ == "__main__":
    main()
