"""Saved models: the Workspace calls that list, read, predict with, evaluate, export and tune a trained
model, import one made elsewhere, and turn its answers into labeling suggestions.

:class:`ModelCalls` is mixed into :class:`~modeldesk.app.workspace.Workspace` (uses its ``store``,
``paths``, lock and kept predictors); Qt-free and safe to call from a worker thread.
"""

from __future__ import annotations

from pathlib import Path

from modeldesk.app import pipeline
from modeldesk.app.tables import table_files


class ModelCalls:
    """Workspace calls on saved models (mixed into ``Workspace``)."""

    # -- saved models ------------------------------------------------------------------------

    def list_models(self, project) -> list[dict]:
        return self.store.list_models(self.project(project))

    def model_path(self, model) -> Path:
        """The artifact folder for a model id or an artifact path."""
        candidate = Path(str(model)).expanduser()
        if candidate.exists():
            return candidate
        try:
            record = self.store.get_model(str(model))
        except KeyError:
            raise KeyError(
                f"no model {model!r}: give a model id from `modeldesk train` or the path of an exported model"
            ) from None
        return Path(record["path"])

    def model_report(self, model_id: str) -> dict:
        """The evaluation JSON saved with the model; its mistakes carry the project's sample ids."""
        from modeldesk.deploy import load_artifact

        card = load_artifact(self.model_path(model_id)).card
        report = dict(card.get("metrics", {}))
        if card.get("colors"):  # a segmentation model's class colours, for the page's legend
            report["colors"] = card["colors"]
        report["has_html"] = (self.model_path(model_id) / "report.html").is_file()
        mistakes = report.get("mistakes") or []
        try:
            project = self.store.get_model(str(model_id))["project"]
        except KeyError:  # an exported artifact: no project to point into
            return report
        ids = self.store.ids_for_hashes(project, [m["key"] for m in mistakes])
        report["mistakes"] = [{**m, "sample_id": ids.get(m["key"])} for m in mistakes]
        return report

    def report_html(self, model_id: str) -> Path:
        path = self.model_path(model_id) / "report.html"
        if not path.exists():
            raise FileNotFoundError(f"{path}: this model has no HTML report")
        return path

    # -- predictions -------------------------------------------------------------------------

    def predict(self, model, files) -> list[dict]:
        """Predictions as the service gives them, one dict per file (``file`` added).

        For a text model each file is a UTF-8 text file read one text per non-empty line
        (``file`` is then ``name:line``, and ``text`` is added).
        """
        predictor = self._predictor(model)
        tables = table_files(predictor.input.kind, files)
        if tables:  # a table model asked about tables: one answer a row
            return [p for path in tables for p in self.predict_table(model, path)]
        if predictor.input.inline:
            return self.predict_texts(model, *pipeline.text_lines(files))
        files = [str(f) for f in files]
        results = []
        for start in range(0, len(files), 32):
            chunk = files[start : start + 32]
            results += [{"file": f, **p} for f, p in zip(chunk, predictor.predict(chunk))]
        respond = getattr(predictor.output, "respond", None)  # as the service answers: no raw arrays
        return [respond(r) for r in results] if respond is not None else results

    def predict_texts(self, model, texts, names=None) -> list[dict]:
        """Predictions for texts (a text model), one dict per text with ``text`` (and ``file`` when
        ``names`` are given) added."""
        predictor = self._predictor(model)
        texts = [str(t) for t in texts]
        names = list(names) if names is not None else [f"text {i + 1}" for i in range(len(texts))]
        results = []
        for start in range(0, len(texts), predictor.batch_size):
            chunk, chunk_names = (
                texts[start : start + predictor.batch_size],
                names[start : start + predictor.batch_size],
            )
            predictions = predictor.predict(chunk, names=chunk_names)
            results += [{"file": n, "text": t, **p} for n, t, p in zip(chunk_names, chunk, predictions)]
        return results

    def _predictor(self, model):
        """One predictor per model, kept: creating the session costs more than a prediction."""
        from modeldesk.deploy import Predictor

        path = self.serving_path(model).resolve()  # a kept compressed copy when one is in use
        graph = path / "model.onnx" if path.is_dir() else path
        key = (path, graph.stat().st_mtime_ns if graph.exists() else None)  # a re-export is new
        with self._lock:
            if key not in self._predictors:
                if len(self._predictors) >= 2:  # keep memory bounded: the last two models tried
                    self._predictors.pop(next(iter(self._predictors)))
                self._predictors[key] = Predictor(path)
            return self._predictors[key]

    # -- evaluation, export, thresholds ------------------------------------------------------

    def evaluate(self, model, path, format: str = "auto", *, progress=None) -> dict:
        """Evaluate a model on labeled data outside the project (any import format)."""
        return pipeline.evaluate_outside(self, self.model_path(model), path, format, progress=progress)

    def stored_pixel_auroc(self, model, keys=None, *, progress=None) -> dict | None:
        """An anomaly model's pixel AUROC from the defect masks stored in its project (None without
        masks); see ``app.anomaly_masks``."""
        from modeldesk.app.anomaly_masks import stored_pixel_auroc

        return stored_pixel_auroc(self, model, keys, progress=progress)

    def export_model(
        self, model, out, *, compress: bool = False, bundle: bool = False, progress=None
    ) -> dict:
        return pipeline.export(self, model, out, compress=compress, bundle=bundle, progress=progress)

    def set_score_threshold(self, model, threshold: float) -> dict:
        """Move a detector's score threshold; returns its test figures at the new threshold."""
        with self._lock:  # a kept predictor would still use the old threshold
            self._predictors.clear()
        return pipeline.move_threshold(self, model, threshold)

    # -- models made elsewhere (app/outside_models.py) ---------------------------------------

    def import_outside_model(self, onnx_path, labels_path, **options) -> dict:
        """An ONNX image classifier made elsewhere, as a model of a project (see ``app.outside_models``)."""
        from modeldesk.app.outside_models import import_outside_model

        return import_outside_model(self, onnx_path, labels_path, **options)

    def inspect_outside_model(self, onnx_path) -> dict:
        """What an outside ONNX file says about itself, or UserError with why it cannot be imported."""
        from modeldesk.app.outside_models import inspect_model

        return inspect_model(onnx_path)

    def preview_outside_model(self, onnx_path, labels_path, project, normalisation: str = "auto") -> dict:
        """An outside model's answers on three of ``project``'s photos, before importing it."""
        from modeldesk.app.outside_models import preview

        return preview(self, onnx_path, labels_path, project, normalisation)

    def can_import_outside_model(self, project) -> bool:
        """Whether ``project`` takes outside models (image classification and detection ones do)."""
        from modeldesk.app.outside_models import TASKS

        return self.project(project).task in {task for task, _ in TASKS.values()}

    # -- a model's suggestions for labeling --------------------------------------------------

    def suggestions(self, project, model_id: str) -> dict:
        """Pre-labels for the project's unlabeled samples: sample id -> (label, score)."""
        predictions = self.store.predictions(model_id)
        unlabeled = set(self.store.sample_ids(self.project(project), unlabeled=True))
        return {sid: value for sid, value in predictions.items() if sid in unlabeled}

    def box_proposals(self, project, model_id: str) -> dict:
        """A detector's proposed boxes for the project's photos without boxes: sample id -> boxes."""
        return pipeline.box_proposals(self, self.project(project), model_id)

    def suggest(self, project, model_id: str, sample_id: int) -> tuple[str, float] | None:
        """The model's guess for one sample it has not scored yet (added after it was trained), saved
        with the others; None when the model cannot read it."""
        target = self.project(project)
        sample = self.store.get_sample(int(sample_id))
        sources = pipeline.sample_sources(target, [sample])
        (prediction,) = pipeline.predict_tolerant(self._predictor(model_id), sources)
        if prediction is None or prediction.get("label") is None:
            return None
        self.store.save_predictions(model_id, [(sample.id, prediction["label"], prediction["score"])])
        return prediction["label"], float(prediction["score"])

    def uncertainty_order(self, project, model_id: str) -> list[int]:
        """Unlabeled sample ids, least confident prediction first ("label these next")."""
        suggestions = self.suggestions(project, model_id)
        return sorted(suggestions, key=lambda sid: suggestions[sid][1])
