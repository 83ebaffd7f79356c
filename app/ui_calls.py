"""The Workspace calls the desktop app needs beyond the command line's: samples, labels, runs.

:class:`UiCalls` is mixed into :class:`~modeldesk.app.workspace.Workspace`, so ``ui/`` reaches all of
it through the one facade and never the store or the job queue directly. Everything here is Qt-free
and safe to call from a worker thread (the UI never calls it on its own thread).
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


def _box_records(boxes):
    """Boxes from the UI (objects with label/x0/y0/x1/y1, or 5-tuples) as the store's records."""
    from modeldesk.datasets import Box

    out = []
    for box in boxes:
        if isinstance(box, (tuple, list)):
            out.append(Box(str(box[0]), *map(float, box[1:5])))
        else:
            out.append(Box(str(box.label), float(box.x0), float(box.y0), float(box.x1), float(box.y1)))
    return out


class UiCalls:
    """Workspace calls for the desktop app (mixed into ``Workspace``; uses its ``store`` and ``jobs``)."""

    # -- tasks and projects ---------------------------------------------------------------------

    def project_info(self, project) -> dict:
        """The project as a dict with its task's facts: ``name``, ``task``, ``input_kind``, ``target``,
        ``samples``, and from the task registry ``title``, ``min_classes`` and ``few_examples``."""
        info = dict(self._project_dict(self.project(project)))
        task = self.task(info["task"])
        for key in ("title", "min_classes", "few_examples", "trainable", "missing"):
            info.setdefault(key, task.get(key))
        return info

    def check_training(self, project, template: str) -> None:
        """Raise UserError with one sentence when ``project`` cannot train with ``template`` yet."""
        from modeldesk.app import pipeline

        pipeline.check_trainable(self, self.project(project), template)

    def training_readiness(self, project) -> str:
        """Why ``project`` cannot train yet, as one sentence ("" when it can).

        The rules (how many classes, what the task's trainer needs) live with training; the UI only
        shows the sentence.
        """
        from modeldesk.app import pipeline
        from modeldesk.errors import describe

        record = self.project(project)
        task = self.task(record.task)
        if not task["trainable"] or not task["templates"]:
            return task.get("missing") or "This kind of project cannot be trained yet."
        try:
            pipeline.check_trainable(self, record, task["templates"][0])
        except ValueError as exc:
            return describe(exc)
        return ""

    def rename_project(self, old: str, new: str) -> dict:
        """Rename a project (its samples, labels and models stay)."""
        project = self.store.rename_project(old, new)
        log.info("renamed project %r to %r", old, project.name)
        return self._project_dict(project)

    def delete_project(self, name: str) -> None:
        """Delete a project with its samples, labels and models (media other projects use stays)."""
        self.store.delete_project(name)
        log.info("deleted project %r", name)

    def delete_samples(self, project, sample_ids) -> int:
        """Remove samples from the project; returns how many went."""
        removed = self.store.delete_samples(self.project(project), list(sample_ids))
        log.info("removed %d samples from %r", removed, project)
        return removed

    def remove_samples(self, project, sample_ids) -> dict:
        """Remove samples so that it can be undone: ``removed`` and the ``undo`` token."""
        from modeldesk.app.removal import remove_samples

        return remove_samples(self, project, sample_ids)

    def restore_samples(self, token: str) -> int:
        """Undo the last removal (see :meth:`remove_samples`); how many samples came back."""
        from modeldesk.app.removal import restore_samples

        return restore_samples(self, token)

    # -- classes ----------------------------------------------------------------------------------

    def labels(self, project) -> list[str]:
        """The project's class names, sorted (classes with no example yet included)."""
        return self.store.labels(self.project(project))

    def add_class(self, project, name: str) -> None:
        """Add a class to the project (kept even before anything is labeled with it)."""
        self.store.add_label(self.project(project), name)

    def rename_class(self, project, old: str, new: str) -> None:
        """Rename a class everywhere; renaming onto an existing class merges the two."""
        self.store.rename_label(self.project(project), old, new)

    def delete_class(self, project, name: str) -> None:
        """Delete a class and its labels (the samples stay, maybe unlabeled)."""
        self.store.delete_label(self.project(project), name)

    # -- samples -------------------------------------------------------------------------------------

    def sample_ids(self, project, *, split=None, label=None, unlabeled=None) -> list[int]:
        """Ids of the project's matching samples, in the order they were added."""
        return self.store.sample_ids(self.project(project), split=split, label=label, unlabeled=unlabeled)

    def sample(self, sample_id: int):
        """One sample: ``id``, ``source``, ``path``, ``text``, ``labels``, ``boxes``, ``width``..."""
        return self.store.get_sample(int(sample_id))

    def annotate(self, sample_id: int, target: str, value) -> None:
        """Write a sample's annotation: ``label`` (a name or None), ``tags`` (names) or ``boxes``."""
        if target == "label":
            self.store.set_label(int(sample_id), value)
        elif target == "tags":
            self.store.set_tags(int(sample_id), list(value or ()))
        elif target == "boxes":
            self.store.set_boxes(int(sample_id), _box_records(value or ()))
        else:
            raise ValueError(f"unknown annotation target {target!r}; use label, tags or boxes")

    def add_text(self, project, text: str, label: str = "") -> dict:
        """Add one typed or pasted text (with its class, or unlabeled) to a text project; the import
        report. ValueError with the reason when the text cannot be added (empty)."""
        import csv
        import shutil
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="text-", dir=self.paths.tmp))
        try:
            with (folder / "typed.csv").open("w", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(["text", "label"])
                writer.writerow([text, str(label or "").strip()])
            report = self.import_data(project, folder / "typed.csv", format="csv")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if report["failed"]:
            raise ValueError(f"the text was not added: {report['failed'][0]['reason']}")
        if report["duplicates"]:
            raise ValueError("this text is already in the project (it was not added twice)")
        if not report["added"]:
            raise ValueError("the text is empty: type or paste some words first")
        return report

    def add_recording(self, project, label: str, wav: bytes, name: str = "recording") -> dict:
        """Add one recorded clip (WAV bytes) to ``project`` labeled ``label``; the import report."""
        import shutil
        import tempfile
        import time

        label = str(label).strip()
        if not label or "/" in label or "\\" in label or label in (".", ".."):
            raise ValueError(f"{label!r} cannot be a class name for a recording: pick or type another")
        folder = Path(tempfile.mkdtemp(prefix="recording-", dir=self.paths.tmp))
        try:
            (folder / label).mkdir()
            stamp = time.strftime("%Y%m%d-%H%M%S")
            (folder / label / f"{name}-{stamp}-{time.monotonic_ns() % 10**6:06d}.wav").write_bytes(wav)
            return self.import_data(project, folder, format="folder")
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def add_photos(self, project, label: str, photos: list[bytes], name: str = "camera") -> dict:
        """Add photos (JPEG bytes, e.g. a camera burst) to ``project`` labeled ``label``; the import
        report. They go through the importer: the same checks, duplicates merged."""
        import shutil
        import tempfile
        import time

        label = str(label).strip()
        if not label or "/" in label or "\\" in label or label in (".", ".."):
            raise ValueError(f"{label!r} cannot be a class name for photos: pick or type another")
        folder = Path(tempfile.mkdtemp(prefix="camera-", dir=self.paths.tmp))
        try:
            (folder / label).mkdir()
            stamp = time.strftime("%Y%m%d-%H%M%S")
            for index, data in enumerate(photos):
                (folder / label / f"{name}-{stamp}-{index:03d}.jpg").write_bytes(data)
            return self.import_data(project, folder, format="folder")
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def thumbnail(self, sample_id: int, size: int = 160) -> Path:
        """A cached JPEG thumbnail of an image sample."""
        return self.store.thumbnail(int(sample_id), int(size))

    def sample_ids_for_keys(self, project, keys) -> dict:
        """Media hash (a report's ``key``) -> sample id, for the keys found in the project."""
        return self.store.ids_for_hashes(self.project(project), list(keys))

    def labeling_order(self, project, mode: str, model_id: str | None = None) -> list[int]:
        """Sample ids in the order to label them: ``order`` (as added), ``unlabeled`` first, or
        ``uncertain`` (the model's least sure first, then the other unlabeled, then the labeled)."""
        if mode == "order":
            return self.sample_ids(project)
        unlabeled = self.sample_ids(project, unlabeled=True)
        labeled = self.sample_ids(project, unlabeled=False)
        if mode == "uncertain" and model_id:
            first = self.uncertainty_order(project, model_id)
            seen = set(first)
            unlabeled = first + [s for s in unlabeled if s not in seen]
        return unlabeled + labeled

    def gallery_rows(
        self, project, *, label=None, unlabeled=False, split=None, wrong_only=False, model_id=None
    ) -> dict:
        """What the Data page's gallery shows: ``ids`` in order, a ``captions`` dict and the ids the
        model got ``wrong`` (a set): the mistakes of its evaluation that the Evaluate page lists (made
        before its final fit on every labeled example), and where its saved guess differs from the label."""
        samples = self.store.samples(
            self.project(project), split=split, label=label, unlabeled=True if unlabeled else None
        )
        predictions = self.store.predictions(model_id) if model_id else {}
        evaluated = self._evaluation_mistakes(model_id) if model_id else {}
        rows = {"ids": [], "captions": {}, "wrong": set()}
        for sample in samples:
            if sample.boxes:
                n = len(sample.boxes)
                caption = f"{n} box{'es' if n > 1 else ''}"
            else:
                caption = ", ".join(sample.labels) if sample.labels else "unlabeled"
            predicted = predictions.get(sample.id)
            said = evaluated.get(sample.id) or (predicted[0] if predicted else None)
            wrong = sample.id in evaluated or bool(
                predicted and sample.labels and predicted[0] not in sample.labels
            )
            if wrong:
                rows["wrong"].add(sample.id)
                caption = f"{caption} ≠ {said}" if said else caption
            if wrong_only and not wrong:
                continue
            rows["ids"].append(sample.id)
            rows["captions"][sample.id] = caption
        return rows

    def _evaluation_mistakes(self, model_id: str) -> dict[int, str | None]:
        """Sample id -> what the model said, for each mistake its evaluation lists."""
        try:
            mistakes = self.model_report(model_id).get("mistakes") or []
        except (OSError, ValueError) as exc:  # a model whose artifact is gone or unreadable
            log.warning("could not read the evaluation of %s: %s", model_id, exc)
            return {}
        return {m["sample_id"]: m.get("predicted") for m in mistakes if m.get("sample_id") is not None}

    # -- which copy of a model is used (the original, or its smaller and faster copy) ----------------

    def serving_path(self, model) -> Path:
        """The artifact tried, served and bundled for ``model``: its compressed copy when one was kept
        and is in use (:meth:`use_compressed`), else the model itself."""
        in_use = self.compressed_in_use(model)
        return Path(in_use) if in_use else self.model_path(model)

    def compression_refusal(self, model) -> str:
        """Why the app does not offer to make ``model`` smaller ("" when it does)."""
        from modeldesk.app.pipeline import compression_refusal
        from modeldesk.deploy import load_artifact

        return compression_refusal(load_artifact(self.model_path(model)))

    def compressed_in_use(self, model) -> str | None:
        """The path of ``model``'s compressed copy in use, or None (the original is used)."""
        import json

        try:
            path = json.loads((self.paths.root / "models_in_use.json").read_text(encoding="utf-8")).get(
                str(model)
            )
        except (OSError, ValueError, AttributeError):
            return None
        return path if path and Path(path).exists() else None

    def use_compressed(self, model_id: str, path=None) -> None:
        """Use the compressed copy at ``path`` for ``model_id`` when it is tried, served and bundled;
        ``None`` goes back to the original."""
        import json

        from modeldesk.fileio import atomic_write

        file = self.paths.root / "models_in_use.json"
        try:
            choices = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            choices = {}
        if path is None:
            choices.pop(str(model_id), None)
        else:
            choices[str(model_id)] = str(Path(path).resolve())
        atomic_write(file, json.dumps(choices, indent=1).encode("utf-8"))
        log.info("model %s now uses %s", model_id, path or "its original")

    # -- the local service ------------------------------------------------------------------------

    def serve_model(self, model_id: str, host: str = "127.0.0.1", token=None, port: int | None = None):
        """Start the service for ``model_id`` on ``port``, else the port it had last time (the
        workspace's default port the first time); the handle's ``note`` says when that port was taken."""
        from modeldesk.app import service_ports

        port, note = service_ports.choose_port(
            self.paths.root, model_id, host, self.settings.service_port, wanted=port
        )
        handle = self.start_service(model_id, host=host, port=port, token=token)
        service_ports.remember(self.paths.root, model_id, port)
        handle.note = note
        return handle

    def service_port(self, model_id: str) -> int:
        """The port ``model_id`` will be served on (the one it had last time, else the default)."""
        from modeldesk.app import service_ports

        return service_ports.port_for(self.paths.root, model_id, self.settings.service_port)

    # -- training runs -----------------------------------------------------------------------------

    def training_runs(self, project) -> list[dict]:
        """The project's training jobs, newest first."""
        name = self.project(project).name
        rows = [
            job
            for job in self.jobs.jobs(kind="train", limit=200)
            if (job.get("params") or {}).get("project") == name
        ]
        return sorted(rows, key=lambda j: j.get("id", 0), reverse=True)

    def job(self, job_id: int) -> dict:
        """One job as a dict (``state``, ``result``, ``error``, ``log_path``...)."""
        return self.jobs.get(int(job_id))

    def job_events(self, job_id: int, after_seq: int = 0) -> list[dict]:
        """A job's events after ``after_seq`` (progress, stages, metrics), oldest first."""
        return self.jobs.events(int(job_id), int(after_seq))

    def cancel_job(self, job_id: int) -> bool:
        """Ask a job to stop (it keeps its finished work, so it can be resumed)."""
        return self.jobs.cancel(int(job_id))

    def resume_job(self, job_id: int) -> int:
        """Queue a cancelled or failed job again; returns the seq of its last event so far."""
        events = self.jobs.events(int(job_id), 0)
        self.jobs.resume(int(job_id))
        return events[-1]["seq"] if events else 0

    def predict_payloads(self, model, payloads, names=None) -> list[dict]:
        """Predictions for in-memory files (a photo's JPEG bytes, a clip's WAV bytes), as the service
        gives them: the live preview's call (``app.live``)."""
        payloads = [bytes(p) for p in payloads]
        names = list(names) if names is not None else [f"frame {i + 1}" for i in range(len(payloads))]
        return self._predictor(model).predict(payloads, names=names)
