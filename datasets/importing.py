"""``import_path``: the one entry point that brings files, folders and zip archives into a project.

Readers (one module per format) turn a path into :class:`~.items.Item` objects; this module verifies
each one, stores its media once by content hash, and commits rows in batches, so memory stays flat on
10k+ files, a killed import loses at most one uncommitted batch, and a sample counts as added only
once its row is committed.
"""

from __future__ import annotations

import errno
import logging
import re
import sqlite3
import time
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from . import (
    anomaly_folders,
    archive,
    coco,
    csvpaths,
    csvtext,
    defect_masks,
    folders,
    merging,
    readers,
    seg_coco,
    seg_folders,
    seg_outlines,
    textfiles,
    voc,
    yolo,
)
from .cleanup import remove_unreferenced
from .detect import FORMATS, scan
from .items import ImportReport, Item
from .kinds import sample_kind
from .media import sha256_bytes, sha256_file
from .records import Box, Project
from .safety import (
    DiskFullError,
    WorkspaceWriteError,
    bad_coordinate,
    free_bytes,
    human_bytes,
    is_write_failure,
    space_needed,
    special_file_problem,
    write_error,
)
from .store import NewSample, Store
from .verify import MediaError, media_kind

BATCH_SIZE = 200  # rows per transaction
BATCH_SECONDS = 1.0  # ... or whatever was read in this long
_PROGRESS_SECONDS = 0.05
WORKERS = 4  # threads reading, verifying and storing media files
STREAM_ABOVE = 16 << 20  # larger files are verified, hashed and copied from disk in blocks
RESERVE_BYTES = 1 << 20  # free space media files never take: the database must still commit

_FORMAT_NAMES = {
    "folder": "folder-per-class",
    "inspection": "good/defect folders",
    "masks": "photos with masks",
    "flat": "unlabeled files",
    "voc": "Pascal VOC",
    "coco": "COCO",
    "yolo": "YOLO",
    "csv": "CSV text",
    "jsonl": "JSON Lines",
    "txt": "text",
    **readers.NAMES,
}
_TEXT_ONLY_FORMATS = {"jsonl", "txt"}
_DETECTION_FORMATS = {"voc", "coco", "yolo", *readers.BOXES_ONLY}
_SPACES = re.compile(r"\s+")

Progress = Callable[[int, int | None, str], None]
log = logging.getLogger(__name__)


def normalise_text(text: str) -> str:
    """The form two texts are compared in: NFC, runs of whitespace as one space, trimmed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()


def _check_task(project: Project, fmt: str, media: str | None, path: Path) -> None:
    kind = project.kind
    inline = sample_kind(kind).inline
    what = _FORMAT_NAMES.get(fmt, fmt)
    outlines = fmt in ("coco", "yolo") and project.target == "mask"  # polygons drawn as masks
    if fmt in _DETECTION_FORMATS and project.target != "boxes" and not outlines:
        raise ValueError(
            f"{path} holds {what} data with boxes, but project {project.name!r} is "
            f"{project.task}: import it into a project that finds objects with boxes"
        )
    if fmt == "masks" and project.target != "mask":
        raise ValueError(
            f"{path} holds photos with masks (a class per pixel), but project {project.name!r} is "
            f"{project.task}: import it into a segmentation project"
        )
    if fmt == "csv":
        if media is None and not inline:
            columns = csvtext.table_columns(path)
            if columns is not None and csvtext.find_column(columns, None, csvtext.TEXT_COLUMNS) is None:
                shown = ", ".join(columns[:6]) + (", ..." if len(columns) > 6 else "")
                raise ValueError(
                    f"{path} is a table of values ({shown}), not {kind} files or texts: ModelDesk "
                    f"learns from images, texts and sound clips. To import {kind} files, give a "
                    "CSV with a column of file paths (path, file, ...) and a label column"
                )
            raise ValueError(
                f"{path} is a CSV table of texts, but project {project.name!r} is {project.task}, "
                f"which holds {kind} files: import a CSV of file paths, or make a text project"
            )
        if media is None or kind == media:
            return
    if fmt in _TEXT_ONLY_FORMATS or (media is not None and sample_kind(media).inline):
        if inline:
            return
        raise ValueError(
            f"{path} holds texts ({what}), but project {project.name!r} is {project.task}, "
            f"which holds {kind} files: import {kind} files, or make a text project"
        )
    if inline:
        raise ValueError(
            f"{path} holds {media or 'media'} files ({what}), but project {project.name!r} "
            "holds texts: import CSV, JSON Lines or .txt files of texts"
        )
    if media != kind:
        raise ValueError(
            f"{path} holds {media or 'no'} files, but project {project.name!r} "
            f"({project.task}) needs {kind} files"
        )
    if fmt in ("folder", "inspection") and project.target == "boxes":
        raise ValueError(
            f"{path} is a folder per class, which has no boxes; project {project.name!r} "
            "finds objects with boxes: import VOC, COCO or YOLO data, or a flat folder to label"
        )


def import_path(
    store: Store,
    project,
    path,
    *,
    format: str = "auto",
    text_column: str | None = None,
    label_column: str | None = None,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_commit: Callable[[ImportReport], None] | None = None,
) -> ImportReport:
    """Import a file, a folder or a zip archive into ``project``.

    Parameters
    ----------
    format : {"auto", "folder", "flat", "voc", "coco", "yolo", "csv", "zip"}
    text_column, label_column : str, optional
        CSV column names (default: ``text``/``label`` and common synonyms).
    progress : callable(done, total, current_file), optional
        Called every ~50 ms and at the end; ``total`` is None when unknown (CSV).
    should_stop : callable() -> bool, optional
        Polled between files; when true the import commits what it has and stops.
    on_commit : callable(report), optional
        Called after each committed batch with the running report.

    Returns
    -------
    ImportReport
        Per-file problems are reported in ``failed``/``warnings``; problems with the whole input (a
        task mismatch, no supported files, a CSV without the needed columns) raise ValueError.
    """
    project = store.get_project(project)
    path = Path(path)
    if format != "auto" and format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; use auto or one of: {', '.join(FORMATS)}")
    found = scan(path)
    if found.format == "zip":  # the format, if given, is that of the archive's content
        return _import_zip(
            store,
            project,
            path,
            format="auto" if format == "zip" else format,
            text_column=text_column,
            label_column=label_column,
            progress=progress,
            should_stop=should_stop,
            on_commit=on_commit,
        )
    if format == "zip":
        raise ValueError(f"{path} is not a zip archive")
    fmt = found.format if format == "auto" else format
    if format == "auto" and project.target == "mask" and seg_folders.is_mask_folder(path):
        fmt = "masks"  # a VOC folder holds boxes too: a segmentation project takes its masks
    media = found.media if fmt != "masks" else "image"
    if fmt in _DETECTION_FORMATS:
        media = "image"
    elif fmt in ("folder", "flat", "inspection", "masks") and media is None:
        raise ValueError(f"no supported files found in {path}")
    nested = format == "auto" and fmt == "folder" and project.target == "boxes"
    if nested:  # sub-folders of photos to label with boxes: their names are not classes
        fmt = "flat"
    _check_task(project, fmt, media, path)
    readers.check_target(fmt, project.target, path, project.name)
    report = ImportReport(format=fmt)
    if nested:
        report.warn(
            f"{path}: sub-folder names are not used as labels in a project that finds objects; "
            "the images import without boxes"
        )
    total, items = _read(path, fmt, report, project, text_column, label_column)
    if total == 0:
        raise ValueError(f"no supported files found in {path}")
    _ingest(store, project, items, total, report, progress, should_stop, on_commit)
    if fmt == "masks":
        seg_folders.attach_masks(store, project, path, report)
    if fmt == "inspection":  # masks/<stem>.png: where the defect is on each photo
        defect_masks.attach_defect_masks(store, project, path, report, should_stop=should_stop)
    if fmt == "coco" and project.target == "mask":  # polygons and RLE become the photos' masks
        seg_coco.attach_coco_masks(store, project, path, report)
    if fmt == "labelme" and project.target == "mask":  # outlines become the photos' masks
        seg_outlines.attach_labelme_masks(store, project, path, report)
    if fmt == "yolo" and project.target == "mask":  # YOLO-seg polygons become the photos' masks
        seg_outlines.attach_yolo_masks(store, project, path, report)
    store.assign_splits(project)
    return report


def _single_table(path: Path) -> Path:
    if path.is_file():
        return path
    tables = [
        p for p in sorted(path.iterdir()) if p.suffix.lower() in (".csv", ".tsv") and csvpaths.table_media(p)
    ]
    if not tables:
        raise ValueError(f"no CSV table listing media files found in {path}")
    return tables[0]


def _read(path: Path, fmt: str, report: ImportReport, project: Project, text_column, label_column):
    kind, multi = project.kind, project.target == "tags"
    if fmt in readers.READERS:
        return readers.read(fmt, path, report, project.target)
    kind_readers = sample_kind(kind)
    if fmt in ("folder", "flat") and kind_readers.read_folders is not None:
        return kind_readers.read_folders(path, report)
    if fmt == "folder":
        return folders.read_class_folders(path, report, kind)
    if fmt == "inspection":
        return anomaly_folders.read_inspection_folder(path, report, kind)
    if fmt == "masks":
        return seg_folders.read_mask_folders(path, report, kind)
    if fmt == "flat":
        return folders.read_flat(path, report, kind)
    if fmt == "jsonl":
        return textfiles.each_file(
            path,
            textfiles.JSONL_EXTS,
            lambda f: textfiles.read_jsonl(f, report, text_column=text_column, label_column=label_column),
        )
    if fmt == "txt":
        return textfiles.each_file(path, textfiles.TEXT_FILE_EXTS, lambda f: textfiles.read_txt(f, report))
    if fmt == "voc":
        return voc.read_voc(path, report)
    if fmt in ("coco", "yolo") and project.target == "mask":  # the photos now, their masks once stored
        total, items = (coco.read_coco if fmt == "coco" else yolo.read_yolo)(path, report)
        return total, (replace(item, boxes=None, labels=[], normalised=False) for item in items)
    if fmt == "coco":
        return coco.read_coco(path, report)
    if fmt == "yolo":
        return yolo.read_yolo(path, report)
    if fmt == "csv" and kind_readers.read_table is not None:
        return kind_readers.read_table(path, report, text_column, label_column, multi)
    if fmt == "csv":
        return csvpaths.read_path_table(_single_table(path), report, label_column=label_column, multi=multi)
    raise ValueError(f"unknown format {fmt!r}")


def _import_zip(store, project, path: Path, **options) -> ImportReport:
    unsafe: list[dict] = []
    with archive.extracted(path, store.tmp_dir, unsafe) as folder:
        inner = import_path(store, project, folder, **options) if _has_files(folder) else None
    if inner is None:
        if unsafe:
            raise ValueError(
                f"nothing could be imported from {path}: every member was refused ({unsafe[0]['reason']})"
            )
        raise ValueError(f"no supported files found in {path}")
    inner.format = f"zip/{inner.format}"
    inner.name_failures(f"{path.name}/")
    inner.fail_first([{"file": f"{path.name}/{e['file']}", "reason": e["reason"]} for e in unsafe])
    return inner


def _has_files(folder: Path) -> bool:
    return any(p.is_file() for p in folder.rglob("*"))


def _store_media(store: Store, kind: str, item: Item) -> tuple:
    """Read, verify and store one media file: (hash, ext, width, height, duration, created).

    ``created`` is True when this call wrote the file (it was not in the media folder yet).
    Thread-safe (it touches no report). Raises MediaError when the file cannot be imported, and
    WorkspaceWriteError (DiskFullError for a full disk) when the workspace cannot be written.
    """
    if item.error:
        raise MediaError(item.error)
    assert item.path is not None  # an importer gives every media item without an error its file
    problem = special_file_problem(item.path)  # a FIFO named pipe.png would block the read for good
    if problem:
        raise MediaError(problem)
    ext = item.path.suffix.lower()
    if media_kind(ext) != kind:
        raise MediaError(f"not {sample_kind(kind).article} file ({ext or 'no extension'})")
    try:  # a large file is read from disk as it goes, never whole into memory
        source = item.path.read_bytes() if item.path.stat().st_size <= STREAM_ABOVE else item.path
        verify = sample_kind(kind).verify
        assert verify is not None  # media kinds verify their files; inline kinds never come here
        ext, width, height, duration = verify(source, ext)
        content_hash = sha256_bytes(source) if isinstance(source, bytes) else sha256_file(source)
    except OSError as exc:
        raise MediaError(f"cannot read the file ({exc.strerror or exc})") from None
    target = store.media.path(content_hash, ext)
    created = not target.exists()
    try:
        if created:
            _check_room(store, len(source) if isinstance(source, bytes) else item.path.stat().st_size)
        if isinstance(source, bytes):
            store.media.put(source, ext, content_hash)
        else:
            store.media.put_file(source, ext, content_hash)
    except OSError as exc:
        raise write_error(exc, store.root, doing="store media files") from exc
    return content_hash, ext, width, height, duration, created


def _check_room(store: Store, size: int) -> None:
    """ENOSPC before a media file would leave less than :data:`RESERVE_BYTES` free: the database still
    needs room to commit the rows of the files already stored."""
    free = free_bytes(store.media.root)
    if free is not None and free - size < RESERVE_BYTES:
        raise OSError(errno.ENOSPC, "No space left on device (keeping room for the database)")


def _to_sample(kind: str, item: Item, stored, report: ImportReport) -> NewSample:
    """The row for one item (text is normalised here; media was stored by :func:`_store_media`)."""
    if sample_kind(kind).inline:
        if item.error:
            raise MediaError(item.error)
        text = normalise_text(item.text or "")
        if not text:
            raise MediaError("empty text")
        return NewSample(
            kind=kind,
            content_hash=sha256_bytes((text + item.identity).encode("utf-8")),
            source=item.source,
            text=text,
            labels=list(item.labels),
            split=item.split,
        )
    content_hash, ext, width, height, duration, _created = stored
    boxes = _clip_boxes(item, width, height, report) if item.boxes else []
    return NewSample(
        kind=kind,
        content_hash=content_hash,
        source=item.source,
        ext=ext,
        width=width,
        height=height,
        duration=duration,
        labels=list(item.labels),
        boxes=boxes,
        split=item.split,
    )


def _stored(
    store: Store, kind: str, items: Iterator[Item], should_stop, stopped: list, unfinished: list
) -> Iterator[tuple[Item, object]]:
    """(item, stored media or the exception) in input order.

    Media files are read, verified and written by a few threads (file I/O, hashing and Pillow decoding
    release the GIL), with a bounded look-ahead so memory stays flat. ``should_stop`` is polled before
    each item is started; items already started are finished. A stop is noted in ``stopped``. When the
    caller stops early, items started but not handed out go to ``unfinished`` as (item, result or None).
    """

    def poll():
        if should_stop is not None and should_stop():
            stopped.append(True)
            return True
        return False

    if sample_kind(kind).inline:  # nothing to read or verify: handed out as they come
        for item in items:
            if poll():
                return
            yield item, None
        return
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="import") as pool:
        try:
            stopping = False
            while True:
                while not stopping and len(pending) < 4 * WORKERS:
                    upcoming = next(items, None)
                    if upcoming is None or poll():
                        stopping = True
                        break
                    pending.append((upcoming, pool.submit(_store_media, store, kind, upcoming)))
                if not pending:
                    return
                item, future = pending[0]
                try:
                    result = future.result()
                except (MediaError, OSError) as exc:
                    result = exc
                pending.popleft()
                yield item, result
        finally:  # the caller stopped early (a full disk): say what was started and not used
            for item, future in pending:
                future.cancel()
                try:
                    unfinished.append((item, None if future.cancelled() else future.result()))
                except Exception:  # noqa: BLE001 - it failed anyway; nothing of it to keep
                    unfinished.append((item, None))


def _clip_boxes(item: Item, width: int, height: int, report: ImportReport) -> list[Box]:
    kept, clipped, dropped = [], 0, 0
    boxes = item.boxes
    assert boxes is not None  # called only for items with boxes
    if item.normalised:
        boxes = [Box(b.label, b.x0 * width, b.y0 * height, b.x1 * width, b.y1 * height) for b in boxes]
    problem = bad_coordinate(boxes)
    if problem:
        raise MediaError(problem)
    for box in boxes:
        x0, x1 = sorted((box.x0, box.x1))
        y0, y1 = sorted((box.y0, box.y1))
        cx0, cy0 = min(max(x0, 0.0), width), min(max(y0, 0.0), height)
        cx1, cy1 = min(max(x1, 0.0), width), min(max(y1, 0.0), height)
        if cx1 - cx0 < 1e-6 or cy1 - cy0 < 1e-6:
            dropped += 1
            continue
        if max(abs(cx0 - box.x0), abs(cy0 - box.y0), abs(cx1 - box.x1), abs(cy1 - box.y1)) > 0.01:
            clipped += 1
        kept.append(Box(box.label, cx0, cy0, cx1, cy1))
    if clipped:
        report.boxes_clipped += clipped
        report.warn(
            f"{item.source}: {clipped} box(es) reached outside the {width}x{height} image and were clipped"
        )
    if dropped:
        report.boxes_dropped += dropped
        report.warn(f"{item.source}: {dropped} box(es) with no area inside the image were dropped")
    return kept


def _ingest(
    store: Store,
    project: Project,
    items: Iterable[Item],
    total: int | None,
    report: ImportReport,
    progress: Progress | None,
    should_stop,
    on_commit,
) -> None:
    kind = project.kind
    merge = project.target == "tags"
    batch: list[NewSample] = []
    batch_items: list[Item] = []  # the items behind ``batch``
    first_labels: dict[str, tuple] = {}
    conflicts = 0
    last_commit = last_progress = time.monotonic()
    done = 0
    created: dict[str, str] = {}  # media files this import wrote: hash -> ext
    committed: set[str] = set()  # hashes whose rows are committed

    def flush():
        if not batch:
            return
        for new, sid, is_new in _commit(store, project, batch, merge, report):
            if not is_new and new.boxes:
                merging.merge_duplicate(store, sid, new.boxes, new.content_hash not in committed, report)
            committed.add(new.content_hash)
            if is_new:
                report.splits_kept += new.split is not None
                report.added += 1
                report.boxes += len(new.boxes)
                report.count_labels([b.label for b in new.boxes] if new.boxes else new.labels)
            else:
                report.duplicates += 1
        batch.clear()
        batch_items.clear()
        if on_commit:
            on_commit(report)

    stopped: list = []
    unfinished: list = []
    items = iter(items)
    item = None
    try:
        for item, stored in _stored(store, kind, items, should_stop, stopped, unfinished):
            done += 1
            if isinstance(stored, tuple) and stored[-1]:
                created[stored[0]] = stored[1]
            try:
                if isinstance(stored, BaseException):
                    raise stored
                new = _to_sample(kind, item, stored, report)
            except MediaError as exc:
                report.fail(item.source, str(exc))
            else:
                labels = tuple(sorted(new.labels))
                seen = first_labels.setdefault(new.content_hash, labels)
                if seen != labels and not merge:
                    conflicts += 1
                elif merge and not set(labels) <= set(seen):  # the same photo with other tags
                    report.merged += 1
                    first_labels[new.content_hash] = tuple(sorted(set(seen) | set(labels)))
                batch.append(new)
                batch_items.append(item)
            now = time.monotonic()
            if len(batch) >= BATCH_SIZE or (batch and now - last_commit >= BATCH_SECONDS):
                flush()
                last_commit = now
            if progress is not None and now - last_progress >= _PROGRESS_SECONDS:
                progress(done, total, item.source)
                last_progress = now
        item = None
        if stopped:
            report.stopped = True
            report.warn(
                f"import stopped on request after {done} of {total if total is not None else '?'} items"
            )
        flush()
    except WorkspaceWriteError as exc:
        _stop_on_write_failure(exc, store, report, flush, batch_items, item, unfinished, items, total, done)
    finally:
        for _item, stored in unfinished:
            if isinstance(stored, tuple) and stored[-1]:
                created[stored[0]] = stored[1]
        # media whose row never made it (a refused box, a failed commit, a stop): not left behind
        remove_unreferenced(store, {h: e for h, e in created.items() if h not in committed})
    if progress is not None:
        progress(done, total if total is not None else done, "")
    merging.summary(report)
    if conflicts:
        report.warn(
            f"{conflicts} duplicate item(s) carried a different label than their first copy; "
            "the first copy's label was kept"
        )


def _commit(store: Store, project: Project, batch: list[NewSample], merge: bool, report: ImportReport):
    """Commit ``batch``; yield (sample, is_new) for each row committed.

    A row the database refuses (a constraint) fails alone: the batch is retried one row at a time. A
    write failure (disk full, read-only) raises WorkspaceWriteError and commits nothing of the batch.
    """
    try:
        try:
            results = store.add_samples(project, batch, merge_labels=merge)
        except sqlite3.IntegrityError:
            results = None
        if results is not None:
            yield from ((new, sid, is_new) for new, (sid, is_new) in zip(batch, results))
            return
        for new in batch:
            try:
                ((sid, is_new),) = store.add_samples(project, [new], merge_labels=merge)
            except sqlite3.IntegrityError as exc:
                log.error("could not store %s: %s", new.source, exc)
                report.fail(new.source, f"could not be stored ({exc})")
                continue
            yield new, sid, is_new
    except (sqlite3.Error, OSError) as exc:
        if is_write_failure(exc):
            raise write_error(exc, store.root, doing="save the import") from exc
        raise


def _stop_on_write_failure(
    exc: WorkspaceWriteError,
    store: Store,
    report: ImportReport,
    flush,
    batch_items: list,
    item,
    unfinished: list,
    rest: Iterator[Item],
    total: int | None,
    done: int,
) -> None:
    """End an import the workspace can no longer take: commit what is ready, then raise one error that
    says how many files were added and (for a full disk) how much more space the rest needs."""
    try:
        flush()
        left = []
    except WorkspaceWriteError:  # the ready rows could not be committed either (the caller removes
        left = list(batch_items)  # their media)
    left += [item] if item is not None else []
    left += [entry for entry, _ in unfinished] + list(rest)
    report.stopped = True
    counted = f"{report.added:,} of {total:,}" if total is not None else f"{report.added:,}"
    if isinstance(exc, DiskFullError):
        need = space_needed(left)
        message = (
            f"no space left on the disk of {store.root} ({human_bytes(free_bytes(store.root))} free); "
            f"{counted} files were added before it filled, and the {len(left):,} not imported need "
            f"about {human_bytes(need)} more: free that much and import again (added files are "
            "skipped as duplicates)"
        )
        error: WorkspaceWriteError = DiskFullError(message, report.to_dict())
    else:
        error = WorkspaceWriteError(f"{exc}; {counted} files were added before it stopped", report.to_dict())
    log.error("import stopped after %d of %s items: %s", done, total, error)
    raise error from exc
