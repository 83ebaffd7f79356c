"""Text classification benchmark: each template on English SMS spam and Chinese waimai reviews, next
to a plain TF-IDF + logistic regression (scikit-learn) reference trained on the same split in the same run.

Held-out part: a fixed 25% test / 10% val / 65% train split by a hash of the text (as the image and
sound benchmarks split by file name). Reported: test accuracy with its 95% Wilson interval and macro F1,
training time next to the ETA given before training, the
exported model's latency per text (one text per ``session.run`` through the Predictor, median), and
for ``--scale`` a 60,000-text import + training run with its ETA.

    python bench/train_text.py [--templates fast accurate] [--cache DIR] [--scale]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

DATASETS = ("sms_spam_en", "waimai10k_zh")


def load_text_samples(path: Path):
    """data.csv (text,label) as LabeledSample rows with the fixed hash split; duplicates dropped."""
    from modeldesk.deploy.text_input import clean_text
    from modeldesk.trainers.data import LabeledSample

    samples, seen = [], set()
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            text = clean_text(row["text"])
            key = hashlib.sha256(text.encode("utf-8")).hexdigest()
            if not text or key in seen:
                continue
            seen.add(key)
            bucket = int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16) % 20
            split = "test" if bucket < 5 else "val" if bucket < 7 else "train"
            samples.append(LabeledSample(key, text, row["label"], split))
    return samples


def reference(samples) -> dict:
    """TF-IDF (scikit-learn defaults + sublinear tf; char 1-3 grams for CJK) + LogisticRegression(C=10)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score

    from modeldesk.trainers.text.features import choose_branches

    fit = [s for s in samples if s.split != "test"]
    test = [s for s in samples if s.split == "test"]
    started = time.monotonic()
    script, _ = choose_branches([s.source for s in fit])
    vectorizer = (
        TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True, min_df=2)
        if script == "cjk"
        else TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    )
    model = LogisticRegression(C=10.0, max_iter=2000).fit(
        vectorizer.fit_transform([s.source for s in fit]), [s.label for s in fit]
    )
    seconds = time.monotonic() - started
    predicted = model.predict(vectorizer.transform([s.source for s in test]))
    truth = [s.label for s in test]
    return {
        "accuracy": accuracy_score(truth, predicted),
        "macro_f1": f1_score(truth, predicted, average="macro"),
        "seconds": seconds,
        "n": len(test),
    }


def interval(accuracy: float, n: int) -> str:
    """The 95% Wilson interval of an accuracy measured on ``n`` texts, as "[low, high]"."""
    from modeldesk.trainers.metrics import accuracy_interval

    r = accuracy_interval(int(round(accuracy * n)), n, level=0.95)
    return f"[{r['low']:.3f}, {r['high']:.3f}]"


def latency_ms(artifact_dir, texts, n: int = 200) -> float:
    from modeldesk.deploy import Predictor

    predictor = Predictor(artifact_dir, device="cpu", threads=1)
    times = []
    for text in texts[:n]:
        start = time.perf_counter()
        predictor.predict([text])
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run_template(samples, template: str, cache: Path, out: Path) -> dict:
    from modeldesk.trainers.tasks import get_trainer

    trainer = get_trainer("text-classification")
    estimate = trainer.estimate(samples, template, cache)
    started = time.monotonic()
    result = trainer.train(samples, template, out, cache)
    seconds = time.monotonic() - started
    test = [s.source for s in samples if s.split == "test"]
    # the trainer alone: the ETA without the scoring of every text that a training job does afterwards
    return {
        "accuracy": result.metrics["accuracy"],
        "macro_f1": result.metrics["macro_f1"],
        "seconds": seconds,
        "n": result.metrics["n"],
        "plan": estimate["plan"]["seconds"],
        "eta_s": estimate["eta_s"] - estimate["plan"]["seconds"].get("scoring", 0.0),
        "latency_ms": latency_ms(result.artifact_dir, test),
        "chosen": result.metrics.get("search", {}).get("best"),
        "warnings": result.warnings,
    }


def make_60k(root: Path, path: Path, n: int = 60_000, seed: int = 0) -> Path:
    """60,000 texts in 10 classes, sampled from both data sets and perturbed (a character dropped or
    doubled, a number appended), so no two are equal. Class = source label x one of 5 made-up shops
    named in the text (3 shops for waimai's 2 labels, 2 for spam's), so the 10 classes are learnable and the vocabulary grows as real data's does."""
    rng = random.Random(seed)
    rows = []
    for name in DATASETS:
        with (root / name / "data.csv").open(encoding="utf-8", newline="") as handle:
            rows += [(r["text"], f"{name[:3]}-{r['label']}") for r in csv.DictReader(handle)]
    shops = ["alpha mart", "北京小馆", "sunny deli", "川味坊", "corner cafe"]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for i in range(n):
            text, label = rng.choice(rows)
            shop = rng.randrange(3) if label.startswith("wai") else 3 + rng.randrange(2)
            chars = list(text)
            if len(chars) > 3:
                j = rng.randrange(len(chars))
                chars[j : j + 1] = [] if rng.random() < 0.5 else [chars[j], chars[j]]
            writer.writerow([f"{shops[shop]}: {''.join(chars)} #{i}", f"{label}-{shop}"])
    return path


def scale_run(root: Path, work: Path) -> dict:
    """Import 60,000 texts into a workspace and train the fast template: actual time vs the ETA."""
    from modeldesk.app.workspace import Workspace

    table = make_60k(root, work / "texts60k.csv")
    ws = Workspace(work / "ws")
    try:
        ws.create_project("scale", "text-classification")
        started = time.monotonic()
        imported = ws.import_data("scale", table)
        import_s = time.monotonic() - started
        estimate = ws.estimate_training("scale", "text-classification/fast", device="cpu")
        started = time.monotonic()
        result = ws.train("scale", "text-classification/fast", device="cpu")
        train_s = time.monotonic() - started
    finally:
        ws.close()
    return {
        "added": imported["added"],
        "labels": len(imported["labels"]),
        "import_s": import_s,
        "eta_s": estimate["eta_s"],
        "train_s": train_s,
        "accuracy": result["metrics"]["accuracy"],
        "n": result["metrics"]["n"],
        "plan": estimate.get("plan", {}).get("seconds"),
        "fits": result.get("plan", {}).get("fits"),
        "warnings": result.get("warnings", []),
        "stages": result.get("plan", {}).get("stages_began_s"),
        "scoring_s": result.get("plan", {}).get("scoring_s"),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/benchdata"))
    parser.add_argument("--templates", nargs="+", default=["fast", "accurate"])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--cache", type=Path, help="feature cache to reuse (sentence embeddings)")
    parser.add_argument("--scale", action="store_true", help="also the 60,000-text import + training run")
    args = parser.parse_args(argv)
    root = args.data
    with tempfile.TemporaryDirectory(prefix="bench-text-") as tmp:
        work = Path(tmp)
        cache = args.cache or work / "cache"
        print(
            f"{'data':14} {'model':28} {'accuracy':>9} {'95% interval':>16} {'macroF1':>8} {'train s':>8} "
            f"{'ETA s':>7} {'ms/text':>8}"
        )
        for name in args.datasets:
            samples = load_text_samples(root / name / "data.csv")
            ref = reference(samples)
            print(
                f"{name:14} {'reference sklearn tfidf+LR':28} {ref['accuracy']:9.4f} "
                f"{interval(ref['accuracy'], ref['n']):>16} {ref['macro_f1']:8.4f} {ref['seconds']:8.1f} {'':>7} {'':>8}",
                flush=True,
            )
            for template in args.templates:
                r = run_template(
                    samples, f"text-classification/{template}", cache, work / f"{name}-{template}"
                )
                print(
                    f"{name:14} {template:28} {r['accuracy']:9.4f} {interval(r['accuracy'], r['n']):>16} "
                    f"{r['macro_f1']:8.4f} {r['seconds']:8.1f} {r['eta_s']:7.1f} {r['latency_ms']:8.3f}  "
                    f"{r['chosen'] or ''} plan {r['plan']} {'; '.join(r['warnings'])}",
                    flush=True,
                )
        if args.scale:
            s = scale_run(root, work)
            print(
                f"60k texts: imported {s['added']} in {s['import_s']:.0f} s; {s['labels']} classes; fast template "
                f"ETA {s['eta_s']:.0f} s, took {s['train_s']:.0f} s (ratio {s['train_s'] / s['eta_s']:.2f}); "
                f"accuracy {s['accuracy']:.3f} {interval(s['accuracy'], s['n'])}; plan {s['plan']}; fits {s['fits']}; "
                f"stages began at {s['stages']} s, then scoring took {s['scoring_s']} s; "
                f"{'; '.join(s['warnings'])}"
            )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
