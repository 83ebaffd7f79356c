"""The text classification trainer: TF-IDF n-grams (+ sentence embeddings) and a logistic regression.

``train`` reads each text as the deployed model will (``deploy.text_input.clean_text``), builds the
n-gram vocabulary of the training split (words + character n-grams, or character 1-3 grams for
CJK scripts), picks the regularisation (and, in the accurate template, whether sentence embeddings
help) by cross-validation on the training split within the time budget, fits on training +
validation texts, evaluates on the test split and writes one ONNX graph from strings to
probabilities, checked against the training path. How the time budget is shared among these steps,
and the ETA, is ``text_plan``'s; the search and the bounded fits are ``text_search``'s.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from modeldesk.deploy.inputs import InputError
from modeldesk.deploy.text_input import DEFAULT_MAX_CHARS, clean_text, sentence_embeddings
from modeldesk.errors import UserError
from modeldesk.scheduler import CostModel
from modeldesk.trainers.base import PARITY_TOLERANCE, Run, TaskTrainer, evaluation_split
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.features import Cancelled
from modeldesk.trainers.label_samples import check_label_samples
from modeldesk.trainers.metrics import accuracy_interval, classification_report, most_confident_mistakes
from modeldesk.trainers.templates import get_template
from modeldesk.trainers.text.features import TfidfVocabulary, choose_branches
from modeldesk.trainers.text.graph import INPUT_NAME, OUTPUT_NAME, build_text_graph, check_parity
from modeldesk.trainers.text.plan import (
    EMBED_DIM,
    EMBED_WORK,
    EVAL_WORK,
    EVALS_WORK,
    EXPORT_WORK,
    NGRAM_WORK,
    SCORE_WORK,
    USABLE,
    fit_units,
    plan_fits,
    plan_run,
    score_units,
    seconds_per,
)
from modeldesk.trainers.text.search import FitLog, final_fit, search

log = logging.getLogger(__name__)

ENCODER_KEY = ("usem3", "multilingual-v3", "text")  # feature cache namespace of sentence embeddings
MISTAKE_CHARS = 400


def check_text_samples(samples) -> tuple[list, list[str], list[str]]:
    """(labeled samples, sorted labels, warnings); see ``trainers.label_samples``."""
    return check_label_samples(samples, "text")


PROBE_TEXTS = 64  # texts the sentence encoder reads to time itself
#: read in chunks of this many, the fastest chunk timed: on a shared machine one batch of 64 took 3.5 to
#: 14 ms a text within seconds while the fastest of four chunks of 16 stayed at 2.5-4.5 ms, near the
#: 2.7 ms a text of the job's own reading (other programs' bursts only add time; the load is counted
#: apart, by ``app.calibration``)
PROBE_CHUNK = 16


def _probe_encoder(cost: CostModel, samples) -> None:
    """Time the sentence encoder on one batch of the texts when this machine has never measured it: its
    speed varies 3x with the load of the machine, and it is most of the accurate template's time."""
    texts = [clean_text(s.source) for s in samples if s.label is not None][:PROBE_TEXTS]
    if not texts or cost.items_per_s(EMBED_WORK, "cpu", 1, 1) is not None:
        return

    def probe(*_config) -> float:
        sentence_embeddings(texts[:1])  # loading (and the first call's set-up) is not reading
        fastest = float("inf")
        for start in range(0, len(texts), PROBE_CHUNK):
            chunk = texts[start : start + PROBE_CHUNK]
            started = time.perf_counter()
            sentence_embeddings(chunk)
            fastest = min(fastest, (time.perf_counter() - started) / len(chunk))
        return fastest

    try:
        cost.measure(EMBED_WORK, "cpu", 1, 1, probe)
    except InputError as exc:  # the encoder package is missing: the plan leaves the encoder out anyway
        log.info("sentence encoder not timed: %s", exc)


def _plan(samples, template, cache_dir, budget: float) -> dict:
    cache = FeatureCache(cache_dir)
    cost = CostModel(cache.root)
    if any(template.embeddings):
        _probe_encoder(cost, samples)
    return plan_run(
        samples,
        template,
        cost,
        lambda labeled: len(cache.missing(ENCODER_KEY, [s.key for s in labeled])),
        budget,
    )


def _embed(samples, texts, cache_dir, report) -> np.ndarray:
    """Sentence embeddings of the texts, from the feature cache or computed (and cached) in chunks."""
    cache = FeatureCache(cache_dir)
    missing = set(cache.missing(ENCODER_KEY, [s.key for s in samples]))
    todo = [(s.key, t) for s, t in zip(samples, texts) if s.key in missing]
    started = time.monotonic()
    for start in range(0, len(todo), 64):
        chunk = todo[start : start + 64]
        for (key, _), vector in zip(chunk, sentence_embeddings([t for _, t in chunk])):
            cache.put(ENCODER_KEY, key, vector)
        report(start + len(chunk), len(todo))
    if todo:
        CostModel(cache.root).record(
            EMBED_WORK, "cpu", 1, 1, n_items=len(todo), seconds=max(time.monotonic() - started, 1e-3)
        )
    return cache.get_many(ENCODER_KEY, [s.key for s in samples])


def _record_fits(cost: CostModel, fits: FitLog) -> None:
    """Fold the fits' speed (per unit x evaluation) and their evaluations per fit into the cost model."""
    if fits.unit_evals > 0 and fits.seconds > 0:
        cost.record(EVAL_WORK, "cpu", 1, 1, n_items=fits.unit_evals, seconds=fits.seconds)
    for start, (evals, n) in fits.free.items():
        if n:
            cost.record(EVALS_WORK[start], "cpu", 1, 1, n_items=n, seconds=max(evals, 1))


@dataclass
class _Texts:
    """The cleaned texts, their classes and splits, the n-gram vocabulary and matrix, the sentence
    embeddings (``None`` when the plan left them out), how much of the progress bar each stage gets,
    and the texts and scores the metrics were measured on."""

    texts: list[str]
    y: np.ndarray
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    script: str
    vocabulary: TfidfVocabulary
    X: Any
    E: np.ndarray | None
    share: dict
    done: float  # the progress bar's fraction once the features are ready
    eval_idx: np.ndarray | None = None
    eval_proba: np.ndarray | None = None

    @property
    def fit_idx(self) -> np.ndarray:
        return np.concatenate([self.train_idx, self.val_idx])


class TextClassificationTrainer(TaskTrainer):
    """The text classification task's trainer (see ``trainers.tasks.Trainer`` and ``TaskTrainer.train``)."""

    # Its estimate and progress ETAs already include the job's scoring of every text (plan "seconds"
    # "scoring"): the app's run bar (app/run_time.py) then does not add its own.
    counts_scoring = True

    def check(self, samples) -> None:
        check_text_samples(samples)

    def estimate(self, samples, template, cache_dir, *, device: str = "auto", time_budget=None) -> dict:
        template = get_template(template)
        plan = _plan(samples, template, cache_dir, float(time_budget or template.time_budget_s))
        return {"eta_s": plan["eta_s"], "plan": plan}

    def prepare(self, run: Run, samples) -> tuple[list, list[str]]:
        labeled, labels, warnings = check_text_samples(samples)
        run.warnings += warnings
        return labeled, labels

    def features(self, run: Run) -> _Texts:
        """Each text as the deployed model reads it, its n-grams and (when planned) its sentence embedding."""
        template, labeled, plan = run.template, run.labeled, run.estimate["plan"]
        cost = CostModel(FeatureCache(run.cache_dir).root)
        run.report("Reading texts", 0.0)
        texts = [clean_text(s.source) for s in labeled]
        index = {label: i for i, label in enumerate(run.labels)}
        split = np.array([s.split for s in labeled])
        train_idx, val_idx, test_idx = (np.flatnonzero(split == name) for name in ("train", "val", "test"))
        eta = max(plan["eta_s"], 1e-3)
        share = {k: v / eta for k, v in plan["seconds"].items()}

        ngram_started = time.monotonic()
        script, branches = choose_branches([texts[i] for i in train_idx])
        vocabulary = TfidfVocabulary(
            branches, template.max_features, min_df=2 if len(train_idx) >= 200 else 1
        )
        try:
            vocabulary.fit([texts[i] for i in train_idx], run.should_stop)
        except InterruptedError:
            raise Cancelled("training was stopped") from None
        X = vocabulary.transform(texts)
        cost.record(
            NGRAM_WORK, "cpu", 1, 1, n_items=len(texts), seconds=max(time.monotonic() - ngram_started, 1e-3)
        )
        if not vocabulary.n_features:
            raise UserError("the texts have no words or characters in common to learn from: add more texts")
        done = share["ngrams"]

        E = None
        if plan["embeddings"]:
            E = _embed(
                labeled,
                texts,
                run.cache_dir,
                lambda d, n: run.report(
                    "Reading meaning (sentence encoder)", done + share["embeddings"] * d / max(n, 1)
                ),
            )
            done += share["embeddings"]
        elif "usem3" in template.embeddings:
            run.warnings.append(
                "the sentence encoder was left out: it would not fit in the time budget "
                f"({plan['texts']} texts)"
            )
        return _Texts(
            texts=texts,
            y=np.array([index[s.label] for s in labeled]),
            train_idx=train_idx,
            val_idx=val_idx,
            test_idx=test_idx,
            script=script,
            vocabulary=vocabulary,
            X=X,
            E=E,
            share=share,
            done=done,
        )

    def fit(self, run: Run) -> tuple:
        """(the head, the chosen setting, the fits' log): the search on the training texts and the final
        fit on training + validation texts, planned again with the real n-gram counts and the time left."""
        template, plan, d = run.template, run.estimate["plan"], run.data
        cost = CostModel(FeatureCache(run.cache_dir).root)
        warnings, report, n_classes = run.warnings, run.report, len(run.labels)
        X, E, y, train_idx, fit_idx = d.X, d.E, d.y, d.train_idx, d.fit_idx
        deadline = run.deadline(USABLE)
        X_fit = X.take(fit_idx)
        export_s = seconds_per(cost, EXPORT_WORK, d.vocabulary.n_features)
        per_row = X_fit.nnz / max(len(fit_idx), 1)

        def units(rows, embedding) -> float:
            return fit_units(per_row * rows, int(rows), n_classes, EMBED_DIM if embedding else 0)

        candidates = [
            c for c in template.candidates() if c["embedding"] is None or c["embedding"] in plan["embeddings"]
        ]
        fits = plan_fits(
            cost,
            candidates,
            nnz_fit=X_fit.nnz,
            n_fit=len(fit_idx),
            n_train=len(train_idx),
            n_classes=n_classes,
            folds=template.cv_folds,
            available_s=max(deadline - time.monotonic() - export_s, 1.0),
        )
        if fits.dropped:
            warnings.append(f"the time budget left out {' and '.join(fits.dropped)} ({len(d.texts)} texts)")
        search_share = d.share["search"] + d.share["final_fit"]

        def on_trial(i, trial):
            report(
                "Tuning",
                d.done + search_share * 0.8 * (i + 1) / len(fits.candidates),
                {"cv_accuracy": trial["cv_accuracy"]},
            )

        should = run.should_stop or (lambda: False)
        # the search may use what the final fit does not need: its share is a bound only when the plan is cut
        search_s = (
            fits.search_s if fits.cut else max(deadline - time.monotonic() - export_s - fits.final_s, 1.0)
        )
        try:
            best, start, fit_log = search(
                X.take(train_idx),
                None if E is None else E[train_idx],
                y[train_idx],
                n_classes,
                fits.candidates,
                folds=fits.folds,
                seconds=search_s,
                units=units,
                should_stop=should,
                on_trial=on_trial,
            )
            if fit_log.trials and len(fit_log.trials) < len(fits.candidates):
                warnings.append(
                    f"the time budget allowed {len(fit_log.trials)} of {len(fits.candidates)} settings"
                )
            report("Training", d.done + search_share * 0.8)
            final_seconds = max(deadline - time.monotonic() - export_s, fits.final_s * 0.5)
            head = final_fit(
                X_fit,
                None if E is None else E[fit_idx],
                y[fit_idx],
                n_classes,
                best,
                start,
                seconds=final_seconds,
                units=units(len(fit_idx), best["embedding"]),
                log=fit_log,
                should_stop=should,
            )
        except InterruptedError:
            raise Cancelled("training was stopped") from None
        _record_fits(cost, fit_log)
        if fit_log.timed_out:
            warnings.append(
                f"{fit_log.timed_out} of {fit_log.fits} fits stopped at their share of the time budget "
                "before converging; a larger budget may do slightly better"
            )
        return head, best, fit_log

    def _embeddings(self, run: Run) -> np.ndarray | None:
        """The sentence embeddings the chosen setting uses (``None``: n-grams only)."""
        return run.data.E if run.fitted[1]["embedding"] else None

    def measure(self, run: Run) -> dict:
        d, (head, best, fit_log), labels = run.data, run.fitted, run.labels
        E_best = self._embeddings(run)
        eval_idx, where = evaluation_split(
            d.test_idx,
            d.val_idx,
            d.fit_idx,
            run.warnings,
            "no test texts: the metrics are measured on the training texts",
        )
        proba = head.predict_proba(d.X.take(eval_idx), None if E_best is None else E_best[eval_idx])
        d.eval_idx, d.eval_proba = eval_idx, proba
        metrics = classification_report(d.y[eval_idx], proba, labels)
        metrics["split"] = where
        metrics["interval"] = accuracy_interval(int(round(metrics["accuracy"] * metrics["n"])), metrics["n"])
        if metrics["interval"]["too_wide"] and where != "train":
            run.warnings.append(
                f"only {metrics['n']} texts were tested: the accuracy is somewhere between "
                f"{metrics['interval']['text']}, too wide to tell apart two models a few points apart; "
                "label more texts or move more of them to the test split"
            )
        mistakes = most_confident_mistakes(
            d.y[eval_idx], proba, [run.labeled[i].key for i in eval_idx], labels
        )
        by_key = {run.labeled[i].key: (d.texts[i], proba[j]) for j, i in enumerate(eval_idx)}
        for mistake in mistakes:
            text, row = by_key[mistake["key"]]
            mistake["text"] = text[:MISTAKE_CHARS]
            mistake["scores"] = {label: float(p) for label, p in zip(labels, row)}
        metrics["mistakes"] = mistakes
        if fit_log.trials:
            metrics["search"] = {"trials": fit_log.trials, "best": best}
        return metrics

    def build_graph(self, run: Run):
        E_best = self._embeddings(run)
        return build_text_graph(
            run.data.vocabulary, run.fitted[0], embedding_dim=0 if E_best is None else E_best.shape[1]
        )

    def check_export(self, run: Run, model) -> None:
        d, E_best = run.data, self._embeddings(run)
        cost = CostModel(FeatureCache(run.cache_dir).root)
        probe = d.eval_idx[:64]
        timing: list = []
        parity = check_parity(
            model,
            [d.texts[i] for i in probe],
            d.eval_proba[: len(probe)],
            None if E_best is None else E_best[probe],
            timing=timing,
        )
        if timing and E_best is None:  # the job then scores every text with the graph: its speed, for the ETA
            cost.record(
                SCORE_WORK,
                "cpu",
                1,
                1,
                n_items=score_units(len(probe), d.vocabulary.n_features, len(run.labels)),
                seconds=max(timing[0], 1e-4),
            )
        run.metrics["export_max_abs_diff"] = parity
        if parity > PARITY_TOLERANCE:
            raise RuntimeError(f"exported text graph disagrees with the training path by {parity:.2e}")
        cost.record(EXPORT_WORK, "cpu", 1, 1, n_items=d.vocabulary.n_features, seconds=run.since("Exporting"))

    def card_fields(self, run: Run) -> dict:
        d, best = run.data, run.fitted[1]
        return {
            "preprocessing": {
                "kind": "text",
                "max_chars": DEFAULT_MAX_CHARS,
                "script": d.script,
                "embedding": best["embedding"],
                **d.vocabulary.to_dict(),
            },
            "head": {"kind": "logistic", "params": dict(best)},
            "input_name": INPUT_NAME,
            "output_name": OUTPUT_NAME,
        }

    def result_plan(self, run: Run) -> dict:
        fit_log = run.fitted[2]
        return {
            **run.estimate["plan"],
            "fits": {
                "timed_out": fit_log.timed_out,
                "fits": fit_log.fits,
                "seconds": round(fit_log.seconds, 1),
            },
            "stages_began_s": run.marks,
        }
