"""Tables of rows into a project: CSV/TSV/xlsx (parquet when pyarrow is there), the target column as
labels, column types, bad tables named in one sentence, and the schema step that made room for rows."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sqlite3

import pytest

from modeldesk.datasets.importing import import_path
from modeldesk.datasets.store import Store
from modeldesk.datasets.table_columns import detect_types
from modeldesk.datasets.table_files import parse_row


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "ws")
    yield s
    s.close()


def _project(store, name="t"):
    return store.create_project(name, "tabular-classification", kind="row", target="label")


def _csv(path, lines, encoding="utf-8"):
    path.write_text("\n".join(lines) + "\n", encoding=encoding)
    return path


def test_rows_import_with_the_target_as_label_and_missing_targets_left_out(store, tmp_path):
    table = _csv(
        tmp_path / "people.csv",
        ["id,age,sex,survived", "1,22,male,0", "2,38,female,1", "3,NA,female,1", "4,35,male,", "5,,male,0"],
    )
    project = _project(store)
    report = import_path(store, project, table, label_column="Survived")  # case is ignored
    assert report.added == 5 and not report.failed
    assert any("1 of 5 rows have no 'survived' value" in w for w in report.warnings)
    samples = store.samples(project)
    assert [s.labels for s in samples] == [["0"], ["1"], ["1"], [], ["0"]]
    assert parse_row(samples[2].text) == {"id": "3", "age": None, "sex": "female"}  # NA is missing
    assert store.stats(project)["labeled"] == 4


def test_tsv_and_xlsx_tables_read_as_csv_does(store, tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    tsv = _csv(tmp_path / "t.tsv", ["size\tcolour\tlabel", "1.5\tred\tsmall", "9\tblue\tbig"])
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["size", "colour", "when", "label"])
    sheet.append([2.5, "green", dt.date(2024, 5, 1), "small"])
    sheet.append([8, "red", dt.datetime(2024, 6, 2, 10, 30), 1.0])
    book.save(tmp_path / "t.xlsx")
    project = _project(store)
    assert import_path(store, project, tsv, label_column="label").added == 2
    assert import_path(store, project, tmp_path / "t.xlsx", label_column="label").added == 2
    rows = [(s.labels[0], parse_row(s.text)) for s in store.samples(project)]
    assert rows == [
        ("small", {"size": "1.5", "colour": "red"}),
        ("big", {"size": "9", "colour": "blue"}),
        ("small", {"size": 2.5, "colour": "green", "when": "2024-05-01"}),
        ("1", {"size": 8, "colour": "red", "when": "2024-06-02T10:30:00"}),  # 1.0 is the class "1"
    ]


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is not None, reason="pyarrow is installed")
def test_a_parquet_table_without_pyarrow_says_what_to_install(store, tmp_path):
    table = tmp_path / "t.parquet"
    table.write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match=r"t\.parquet.*pyarrow"):
        import_path(store, _project(store), table, label_column="label")


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("wrong.csv", b"a,b\n1,2\n", r"wrong\.csv: no column 'label' to predict; the columns are: 'a', 'b'"),
        ("binary.csv", b"\x00\x01\x02PK\x03\x04" * 20, r"binary\.csv is not a text file"),
        ("latin.csv", b"a,label\n\xff\xff\xff,x\n", r"latin\.csv is neither UTF-8 nor GBK"),
        ("empty.csv", b"", r"empty\.csv is empty"),
        ("header.csv", b"a,label\n", r"header\.csv holds a header row but no rows"),
        ("book.xlsx", b"not a zip at all", r"book\.xlsx is not a readable Excel"),
    ],
)
def test_a_bad_table_gets_one_sentence_naming_it(store, tmp_path, name, content, words):
    pytest.importorskip("openpyxl")
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=words) as caught:
        import_path(store, _project(store), path, label_column="label")
    assert len(str(caught.value).splitlines()) == 1


def test_numeric_targets_with_many_values_are_split_over_their_range(store, tmp_path):
    lines = ["x,weight"] + [f"{i},{1000 + 10 * i}" for i in range(100)]
    project = _project(store)
    import_path(store, project, _csv(tmp_path / "w.csv", lines), label_column="weight")
    by_split: dict = {}
    for s in store.samples(project):
        by_split.setdefault(s.split, []).append(float(s.labels[0]))
    assert {k: len(v) for k, v in by_split.items()} == {"train": 70, "val": 15, "test": 15}
    assert min(by_split["test"]) < 1200 and max(by_split["test"]) > 1800  # the whole range is tested


def test_column_types_are_detected():
    rows = [
        {
            "PassengerId": str(i + 1),
            "Name": f"Smith, Mr. John {i}",
            "Sex": ["male", "female"][i % 2],
            "Age": str(20 + i % 30) if i % 7 else None,
            "Joined": f"2024-01-{1 + i % 28:02d}",
            "Ticket": f"A{i * 7919}",
        }
        for i in range(40)
    ]
    assert detect_types(rows) == {
        "PassengerId": "identifier",
        "Name": "text",
        "Sex": "category",
        "Age": "number",
        "Joined": "date",
        "Ticket": "identifier",
    }


def test_a_version_2_workspace_keeps_its_samples_and_labels_and_can_hold_rows(tmp_path):
    from modeldesk.datasets import schema

    root = tmp_path / "old"
    root.mkdir()
    conn = sqlite3.connect(root / "workspace.db", isolation_level=None)
    for step in schema.MIGRATIONS[:2]:
        for statement in schema._statements(step):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    conn.execute(
        "INSERT INTO projects(id, name, task, created, kind) VALUES (1, 'old', 'text-classification', 0, 'text')"
    )
    conn.execute("INSERT INTO labels(id, project_id, name) VALUES (1, 1, 'spam')")
    conn.execute(
        "INSERT INTO samples(id, project_id, content_hash, kind, text, source, split, added) "
        "VALUES (1, 1, 'h', 'text', 'buy now', 'a.csv:2', 'train', 0)"
    )
    conn.execute("INSERT INTO sample_labels(sample_id, label_id) VALUES (1, 1)")
    conn.close()
    store = Store(root)
    try:
        (sample,) = store.samples("old")
        assert (sample.text, sample.labels, sample.split) == ("buy now", ["spam"], "train")
        assert store.integrity_check() == "ok"
        project = _project(store, "rows")
        store.set_setting(project, "table_target", "label")
        assert store.setting(project, "table_target") == "label"
        store.delete_project("old")  # the foreign keys are back on: the label rows go with it
        count = store._conn().execute("SELECT COUNT(*) FROM sample_labels").fetchone()[0]
        assert count == 0
    finally:
        store.close()
    assert json.loads(json.dumps(schema.SCHEMA_VERSION)) == 3


def test_exported_rows_read_back_as_they_were(store, tmp_path):
    from modeldesk.datasets.exporting import export_project

    table = _csv(tmp_path / "t.csv", ["note,delta,label", "=SUM(A1),-1.5,a", '"x, y",,b', "plain,2,"])
    project = _project(store)
    import_path(store, project, table, label_column="label")
    store.set_setting(project, "table_target", "label")
    export_project(store, project, tmp_path / "out", "csv")
    text = (tmp_path / "out" / "data.csv").read_text(encoding="utf-8")
    assert text.splitlines()[:2] == ["note,delta,label", "'=SUM(A1),-1.5,a"]  # no formula, a number
    again = _project(store, "again")
    import_path(store, again, tmp_path / "out" / "data.csv", label_column="label")
    before = [(parse_row(s.text), s.labels) for s in store.samples(project)]
    assert [(parse_row(s.text), s.labels) for s in store.samples(again)] == before


def test_a_parquet_table_is_read_when_pyarrow_is_there(store, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"size": [1.5, None, 3.0], "colour": ["red", "blue", None], "label": ["a", "b", None]})
    pq.write_table(table, tmp_path / "t.parquet")
    project = _project(store)
    report = import_path(store, project, tmp_path / "t.parquet", label_column="label")
    assert report.added == 3 and any("1 of 3 rows have no 'label' value" in w for w in report.warnings)
    rows = [(parse_row(s.text), s.labels) for s in store.samples(project)]
    assert rows == [
        ({"size": 1.5, "colour": "red"}, ["a"]),
        ({"size": None, "colour": "blue"}, ["b"]),
        ({"size": 3.0, "colour": None}, []),
    ]


def test_rows_alike_but_for_their_target_are_kept_and_a_second_import_adds_nothing(store, tmp_path):
    table = _csv(
        tmp_path / "people.csv",
        ["class,sex,survived", "3,male,0", "3,male,1", "3,male,0", "1,female,1", "3,male,0"],
    )
    project = _project(store)
    first = import_path(store, project, table, label_column="survived")
    assert first.added == 5 and first.duplicates == 0  # same facts, other outcome: another passenger
    assert sorted(s.labels[0] for s in store.samples(project)) == ["0", "0", "0", "1", "1"]
    again = import_path(store, project, table, label_column="survived")
    assert again.added == 0 and again.duplicates == 5
    shuffled = _csv(tmp_path / "copy.csv", ["class,sex,survived", "3,male,0", "1,female,1", "3,male,1"])
    assert import_path(store, project, shuffled, label_column="survived").added == 0  # rows already there
    assert store.stats(project)["samples"] == 5


def test_the_report_says_a_numeric_target_split_the_rows_by_value_ranges(store, tmp_path):
    lines = ["x,weight"] + [f"{i},{1000 + 10 * i}" for i in range(100)] + ["100,"]
    project = _project(store)
    report = import_path(store, project, _csv(tmp_path / "w.csv", lines), label_column="weight")
    said = [w for w in report.warnings if "split" in w and "missing" not in w and "no 'weight'" not in w]
    assert said == [
        "100 rows were split into train/val/test by ranges of their 'weight' values, so each part "
        "spans the whole range of targets (the Data page's split filter shows them)"
    ]
    assert not any("their source gives" in w for w in report.warnings)
    again = import_path(store, project, _csv(tmp_path / "w.csv", lines), label_column="weight")
    assert not any("ranges of" in w for w in again.warnings)  # nothing added, nothing split


def test_a_target_of_one_class_is_said_naming_the_file_and_the_column(store, tmp_path):
    table = _csv(tmp_path / "same.csv", ["x,outcome", "1,yes", "2,yes", "3,yes"])
    report = import_path(store, _project(store), table, label_column="outcome")
    said = [w for w in report.warnings if "same.csv" in w]
    assert said == [
        "same.csv: every row has 'yes' in column 'outcome'; a model needs at least two classes to learn, "
        "so import rows of another class too or choose another column to predict"
    ]


def test_a_numeric_target_with_some_words_is_said_and_still_split_over_its_range(store, tmp_path):
    lines = ["x,weight"] + [f"{i},{1000 + 10 * i}" for i in range(60)] + ["60,heavy", "61,light"]
    project = _project(store)
    report = import_path(store, project, _csv(tmp_path / "w.csv", lines), label_column="weight")
    said = [w for w in report.warnings if "not a number" in w]
    assert said == [
        "w.csv: 2 of 62 rows have a 'weight' value that is not a number (the first: 'heavy' on line 62); "
        "a regression needs numbers there, so correct or empty those cells, or predict 'weight' as "
        "classes in a tabular-classification project"
    ]
    splits = [s.split for s in store.samples(project) if s.labels[0] not in ("heavy", "light")]
    assert splits.count("val") >= 8 and splits.count("test") >= 8  # before: all 60 in train
