"""Projects, classes and samples: the Workspace calls that read and change a project's data.

:class:`ProjectCalls` is mixed into :class:`~modeldesk.app.workspace.Workspace` (with the training
and serving calls of ``app/training.py`` and ``app/serving.py``), so ``ui/`` reaches all of it through
the one facade and never the store or the job queue directly. Everything here is Qt-free and safe to
call from a worker thread (the UI never calls it on its own thread).
"""

from __future__ import annotations

import logging
from pathlib import Path

from modeldesk.app.tables import remember_target
from modeldesk.datasets import export_project, import_path

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


class ProjectCalls:
    """Workspace calls on projects, classes and samples (mixed into ``Workspace``; uses its ``store``)."""

    # -- tasks and projects ---------------------------------------------------------------------

    def project_info(self, project) -> dict:
        """The project as a dict with its task's facts: ``name``, ``task``, ``input_kind``, ``target``,
        ``samples``, and from the task registry ``title``, ``min_classes``, ``few_examples`` and
        ``annotation`` (what the Label page edits, when more than the target)."""
        info = dict(self._project_dict(self.project(project)))
        task = self.task(info["task"])
        for key in ("title", "min_classes", "few_examples", "trainable", "missing", "annotation"):
            info.setdefault(key, task.get(key))
        return info

    def rename_project(self, old: str, new: str) -> dict:
        """Rename a project (its samples, labels and models stay)."""
        project = self.store.rename_project(old, new)
        log.info("renamed project %r to %r", old, project.name)
        self._rename_in_settings(old, project.name)
        return self._project_dict(project)

    def _rename_in_settings(self, old: str, new: str | None) -> None:
        """Carry the project's workspace settings (its "Improve as I label" switch, kept by name) over
        to its new name, or drop them when ``new`` is None (deleted: a later project of that name
        starts with the switch off)."""
        keep_up = self.settings.keep_up_projects
        if old not in keep_up:
            return
        self.settings.keep_up_projects = sorted({p for p in keep_up if p != old} | ({new} if new else set()))
        self.settings.save(self.paths.root)

    def delete_project(self, name: str) -> None:
        """Delete a project with its samples, labels and models (media other projects use stays)."""
        self.store.delete_project(name)
        log.info("deleted project %r", name)
        self._rename_in_settings(name, None)

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
        """Write a sample's annotation: ``label`` (a name or None), ``tags`` (names), ``boxes``, ``mask``
        (an (H, W) uint8 array, see :meth:`set_sample_mask`) or ``defect`` (an anomaly photo's
        ``(label, where the defect is)``, see :meth:`set_defect_mask`)."""
        if target == "label":
            self.store.set_label(int(sample_id), value)
        elif target == "tags":
            self.store.set_tags(int(sample_id), list(value or ()))
        elif target == "boxes":
            self.store.set_boxes(int(sample_id), _box_records(value or ()))
        elif target == "mask":
            self.set_sample_mask(int(sample_id), value)
        elif target == "defect":
            label, defect = value if value is not None else (None, None)
            self.store.set_label(int(sample_id), label)
            self.set_defect_mask(int(sample_id), defect)
        else:
            raise ValueError(f"unknown annotation target {target!r}; use label, tags, boxes, mask or defect")

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

    # -- tasks -------------------------------------------------------------------------------

    def tasks(self) -> list[dict]:
        """Every task the app knows: ``name``, ``title``, ``description``, ``input_kind``, ``target``,
        ``trainable``, ``missing`` (why it cannot train yet), ``min_classes`` and ``templates``."""
        from modeldesk.trainers.tasks import list_tasks

        return [self._task_dict(task) for task in list_tasks()]

    def task(self, name: str) -> dict:
        """One task (see :meth:`tasks`); UserError naming the choices for an unknown one."""
        from modeldesk.trainers.tasks import get_task

        return self._task_dict(get_task(name))

    @staticmethod
    def _task_dict(task) -> dict:
        from modeldesk.trainers.templates import list_templates

        templates = [t.name for t in list_templates(task.name)] if task.trainable else []
        return {**task.to_dict(), "templates": templates}

    # -- projects and data -------------------------------------------------------------------

    def create_project(self, name: str, task: str, *, target_column: str | None = None) -> dict:
        """Create a project for one of the registered tasks (see :meth:`tasks`); ``target_column``: the
        column a table project predicts (its cells become labels when rows are imported)."""
        from modeldesk.trainers.tasks import get_task

        spec = get_task(task)
        project = self.store.create_project(name, spec.name, kind=spec.input_kind, target=spec.target)
        for label in spec.classes:  # their keys are on the Label page from the start
            self.store.add_label(project, label)
        if target_column:
            remember_target(self.store, project, target_column)
        log.info("created project %r (%s)", project.name, project.task)
        return self._project_dict(project)

    def list_projects(self) -> list[dict]:
        return [self._project_dict(p) for p in self.store.list_projects()]

    def _project_dict(self, project) -> dict:
        return {
            "name": project.name,
            "task": project.task,
            "input_kind": project.kind,
            "target": project.target,
            "created": project.created,
            "samples": self.store.stats(project)["samples"],
        }

    def project(self, name):
        """The project called ``name`` (KeyError with a readable message if there is none)."""
        return self.store.get_project(name)

    def import_data(
        self,
        project,
        path,
        format: str = "auto",
        *,
        progress=None,
        should_stop=None,
        text_column=None,
        label_column=None,
    ) -> dict:
        """Import files, a folder or a zip archive; returns the import report as a dict."""
        record = self.project(project)
        report = import_path(
            self.store,
            record,
            path,
            format=format,
            text_column=text_column,
            label_column=remember_target(self.store, record, label_column, path),
            progress=progress,
            should_stop=should_stop,
        )
        for failure in report.failed:
            log.warning("import refused %s: %s", failure["file"], failure["reason"])
        log.info(
            "imported %s into %r: %s added, %s duplicates, %s failed",
            path,
            project,
            report.added,
            report.duplicates,
            report.failed_total,
        )
        return report.to_dict()

    def stats(self, project) -> dict:
        return self.store.stats(self.project(project))

    def export_data(self, project, out, format: str) -> dict:
        return export_project(self.store, self.project(project), out, format)
