"""The HTML evaluation report: self-contained, escaped, with its charts and thumbnails."""

import base64
import io
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from PIL import Image

from modeldesk.trainers.metrics import classification_report, most_confident_mistakes, multilabel_report
from modeldesk.trainers.report import render_html_report, write_html_report

LABELS = ["cat", "<script>alert(1)</script>", "Tom & Jerry", "猫咪"]


class _Collector(HTMLParser):
    """Collects tags, attributes and text; checks that every opened element is closed."""

    VOID = {"meta", "img", "br", "hr", "input", "link"}

    def __init__(self):
        super().__init__()
        self.stack, self.tags, self.attrs, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (
            f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        )
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(html):
    p = _Collector()
    p.feed(html)
    p.close()
    assert p.stack == [], f"unclosed elements: {p.stack}"
    return p


@pytest.fixture
def evaluation(tmp_path):
    rng = np.random.default_rng(0)
    n = 200
    y = rng.integers(0, 4, n)
    proba = rng.dirichlet(np.ones(4), n)
    proba[np.arange(n), y] += 0.6
    proba /= proba.sum(axis=1, keepdims=True)
    keys = [f"sample {i} <&>.jpg" for i in range(n)]
    metrics = classification_report(y, proba, LABELS)
    mistakes = most_confident_mistakes(y, proba, keys, LABELS, k=5)
    photo = tmp_path / "photo.jpg"
    Image.fromarray((rng.random((900, 1200, 3)) * 255).astype(np.uint8)).save(photo, quality=95)
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    thumbnails = {mistakes[0]["key"]: photo, mistakes[1]["key"]: broken}
    return metrics, mistakes, thumbnails


def test_report_is_self_contained_escaped_html_with_charts(tmp_path, evaluation):
    metrics, mistakes, thumbnails = evaluation
    card = {"task": "image-classification", "template": "<fast>", "labels": LABELS}
    path = write_html_report(
        tmp_path / "out" / "report.html",
        title="Pets & <friends>",
        metrics=metrics,
        mistakes=mistakes,
        thumbnails=thumbnails,
        model_card=card,
    )
    assert path == tmp_path / "out" / "report.html"
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    doc = parse(html)

    # nothing external: no URLs, no src/href except inline data
    assert "http://" not in html and "https://" not in html
    for name, value in doc.attrs:
        if name in ("src", "href"):
            assert value.startswith("data:image/jpeg;base64,"), value
    assert "<link" not in html and "<script" not in html  # the label text "<script>" must be escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Tom &amp; Jerry" in html and "猫咪" in html
    assert "Pets &amp; &lt;friends&gt;" in html and "&lt;fast&gt;" in html
    assert f"{mistakes[0]['key'].split(' <')[0]} &lt;&amp;&gt;.jpg" in html

    # headline in plain words, charts as inline SVG
    right = round(metrics["accuracy"] * 100)
    assert f"right {right} times out of 100" in "".join(doc.text).replace("\n", " ")
    assert "images it never saw" in "".join(doc.text)
    assert doc.tags.count("svg") >= 2
    assert len(re.findall(r'<svg class="confusion"', html)) == 1
    cells = re.search(r'<svg class="confusion".*?</svg>', html, re.S).group(0)
    assert cells.count("<rect") == len(LABELS) ** 2
    assert '<svg class="bars"' in html
    assert doc.tags.count("tr") == len(LABELS) + 1

    # one readable thumbnail, small; the broken file falls back to a placeholder
    srcs = [v for k, v in doc.attrs if k == "src"]
    assert len(srcs) == 1
    thumb = Image.open(io.BytesIO(base64.b64decode(srcs[0].split(",", 1)[1])))
    assert thumb.format == "JPEG" and max(thumb.size) <= 160
    assert html.count("no preview") == len(mistakes) - 1


def test_confusion_counts_appear_in_the_svg(evaluation):
    metrics, _, _ = evaluation
    html = render_html_report(title="t", metrics=metrics)
    svg = re.search(r'<svg class="confusion".*?</svg>', html, re.S).group(0)
    for i, row in enumerate(metrics["confusion"]):
        for j, count in enumerate(row):
            if count:
                assert re.search(rf">{count}</text>", svg), (i, j, count)


def test_small_test_sets_are_described_as_counts_and_rounding_never_claims_perfection():
    proba = np.eye(3)[[0, 1, 2, 0, 1]]
    metrics = classification_report([0, 1, 2, 0, 2], proba, ["a", "b", "c"])
    html = render_html_report(title="t", metrics=metrics, noun="texts")
    assert "right on <strong>4 of the 5</strong> texts it never saw" in html
    n = 1000
    y = np.zeros(n, dtype=int)
    y[:3] = 1
    near_perfect = classification_report(y, np.eye(2)[np.zeros(n, dtype=int)], ["x", "y"])  # 99.7%
    assert "99 times out of 100" in render_html_report(title="t", metrics=near_perfect)


def test_multilabel_report_renders_without_confusion_matrix():
    rng = np.random.default_rng(1)
    Y = (rng.random((120, 3)) < 0.4).astype(int)
    P = np.clip(Y * 0.6 + rng.random((120, 3)) * 0.5, 0, 1)
    metrics = multilabel_report(Y, P, ["red", "<round>", "大"])
    html = render_html_report(title="tags", metrics=metrics, model_card={"task": "image-multilabel"})
    parse(html)
    assert "every tag right" in html and "images it never saw" in html
    assert 'class="confusion"' not in html and '<svg class="bars"' in html
    assert "&lt;round&gt;" in html and "<round>" not in html


def test_rejects_metrics_of_the_wrong_shape(tmp_path):
    with pytest.raises(ValueError, match="classification_report"):
        write_html_report(tmp_path / "r.html", title="t", metrics={"accuracy": 1.0})
    assert not (tmp_path / "r.html").exists()


def test_write_replaces_atomically_and_leaves_no_temporary_files(tmp_path, evaluation, monkeypatch):
    metrics, _, _ = evaluation
    folder = tmp_path / "reports"
    folder.mkdir()
    target = folder / "report.html"
    target.write_text("old")

    def crash(src, dst):
        raise OSError("disk went away")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(OSError, match="disk went away"):
        write_html_report(target, title="new", metrics=metrics)
    assert target.read_text() == "old"  # the old report is untouched
    assert [p.name for p in folder.iterdir()] == ["report.html"]
    monkeypatch.undo()

    write_html_report(target, title="new", metrics=metrics)
    assert "<title>new</title>" in target.read_text(encoding="utf-8")
    assert [p.name for p in folder.iterdir()] == ["report.html"]


def test_many_classes_keep_the_page_readable():
    c = 60
    labels = [f"class-{i}" for i in range(c)]
    y = np.repeat(np.arange(c), 3)
    metrics = classification_report(y, np.eye(c)[np.roll(y, 1)], labels)
    html = render_html_report(title="many", metrics=metrics)
    bars = re.search(r'<svg class="bars".*?</svg>', html, re.S).group(0)
    assert "40 weakest of 60" in html
    assert len(re.findall(r"<title>class-\d+</title>", bars)) == 40


def test_long_labels_are_shortened_in_charts_but_kept_whole_in_tooltips_and_table():
    long_cjk, long_latin = "这是一个非常非常长的中文标签名字", "an extremely long label name indeed"
    labels = [long_cjk, long_latin]
    metrics = classification_report([0, 1, 1], np.eye(2)[[0, 1, 0]], labels)
    html = render_html_report(title="t", metrics=metrics)
    svg = re.search(r'<svg class="confusion".*?</svg>', html, re.S).group(0)
    assert f"<title>{long_cjk}</title>" in svg and f"<title>{long_latin}</title>" in svg
    shown = re.findall(r"</title>([^<]*)</text>", svg)
    assert shown and all(s.endswith("\u2026") for s in shown)
    assert all(len(s) <= 9 for s in shown if s[0] == "这")  # wide characters count double
    assert f"<td>{long_cjk}</td>" in html


def test_the_interval_and_the_final_fit_are_stated(evaluation):
    from modeldesk.trainers.metrics import accuracy_interval

    metrics = dict(evaluation[0])
    n = metrics["n"]
    metrics["interval"] = accuracy_interval(round(metrics["accuracy"] * n), n)
    metrics["final_model"] = {
        "samples": n + 40,
        "text": f"The final model was trained on all {n + 40} labeled "
        "images, after this evaluation, so it has seen the test images too.",
    }
    html = render_html_report(title="t", metrics=metrics)
    assert (
        metrics["interval"]["text"].replace(" out of ", " times out of ") in html and "90% confidence" in html
    )
    assert f"trained on all {n + 40} labeled images" in html
    assert ("too few to tell apart" in html) == metrics["interval"]["too_wide"]


def test_mistakes_are_named_by_their_file_and_jargon_is_explained(evaluation):
    metrics, mistakes, thumbnails = evaluation
    html = render_html_report(title="t", metrics=metrics, mistakes=mistakes, thumbnails=thumbnails)
    text = "".join(parse(html).text)
    assert "photo.jpg" in text and "broken.jpg" in text  # what a person recognises
    assert mistakes[0]["key"] not in text  # the sample's key (a content hash in the app) is no caption
    assert "balance across classes (macro F1)" in text
    assert re.search(r'<div class="stat" title="F1 balances[^"]+"><b>', html)
