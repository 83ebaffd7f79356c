"""Texts from JSON Lines, plain .txt files and a folder per class of .txt files; bad text files named."""

import json
import zipfile

import pytest

from modeldesk.datasets import detect_format, import_path


@pytest.fixture
def project(store):
    return store.create_project("t", "text-classification", kind="text", target="label")


def _texts(store, project):
    return sorted((s.text, tuple(s.labels)) for s in store.samples(project))


def test_jsonl_with_synonym_fields_numbers_as_labels_and_a_bad_line(store, project, tmp_path, write):
    lines = [
        json.dumps({"review": "味道很好，送餐很快", "sentiment": 1}, ensure_ascii=False),
        "{not json",
        json.dumps({"review": "太慢了，菜都凉了", "sentiment": 0}, ensure_ascii=False),
        json.dumps({"review": None, "sentiment": 0}),
        "",
        json.dumps(["a list"]),
    ]
    path = write(tmp_path / "reviews.jsonl", "\n".join(lines) + "\n")
    assert detect_format(path) == "jsonl"
    report = import_path(store, project, path)
    assert _texts(store, project) == sorted([("太慢了，菜都凉了", ("0",)), ("味道很好，送餐很快", ("1",))])
    assert report.added == 2 and len(report.failed) == 3
    assert {f["file"] for f in report.failed} == {
        "reviews.jsonl line 2",
        "reviews.jsonl line 4",
        "reviews.jsonl line 6",
    }


def test_jsonl_without_a_text_field_names_the_file_and_its_fields(store, project, tmp_path, write):
    path = write(tmp_path / "x.jsonl", json.dumps({"foo": "a", "bar": "b"}) + "\n")
    with pytest.raises(ValueError, match=r"x\.jsonl: no a text field .*fields are: 'foo', 'bar'"):
        import_path(store, project, path)
    assert store.stats(project)["samples"] == 0


def test_txt_one_text_a_line_with_fasttext_labels(store, project, tmp_path, write):
    path = write(
        tmp_path / "sms.txt",
        "__label__spam WIN a prize now\n\n__label__ham see you at lunch\nno label here\n",
    )
    assert detect_format(path) == "txt"
    report = import_path(store, project, path)
    assert _texts(store, project) == sorted(
        [("WIN a prize now", ("spam",)), ("no label here", ()), ("see you at lunch", ("ham",))]
    )
    assert report.added == 3 and not report.failed


def test_folder_per_class_of_txt_files_one_text_per_file(store, project, tmp_path, write):
    root = tmp_path / "reviews"
    write(root / "pos" / "1.txt", "Great food,\nfast delivery.\n")
    write(root / "pos" / "2.txt", "好吃")
    write(root / "neg" / "1.txt", "Cold and late.")
    (root / "neg" / "gbk.txt").write_bytes("送餐太慢了".encode("gbk"))
    (root / "neg" / "bad.txt").write_bytes(b"\xff\xfe\xff\xfa broken")
    write(root / "unlabeled.txt", "no class yet")
    write(root / "notes.md", "ignored")
    assert detect_format(root) == "folder"
    report = import_path(store, project, root)
    assert _texts(store, project) == sorted(
        [
            ("Cold and late.", ("neg",)),
            ("Great food, fast delivery.", ("pos",)),
            ("no class yet", ()),
            ("好吃", ("pos",)),
            ("送餐太慢了", ("neg",)),
        ]
    )
    assert report.failed == [
        {"file": "neg/bad.txt", "reason": "neither UTF-8 nor GBK/GB18030 text; save it as UTF-8"}
    ]
    assert any("neg/gbk.txt" in w and "GBK" in w for w in report.warnings)
    assert any("notes.md" in w for w in report.warnings)


def test_a_zip_of_class_folders_of_txt_files(store, project, tmp_path):
    path = tmp_path / "texts.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("spam/a.txt", "free prize")
        archive.writestr("ham/b.txt", "lunch at noon")
    report = import_path(store, project, path)
    assert report.added == 2 and report.labels == {"ham": 1, "spam": 1}


def test_label_column_holding_texts_is_refused_naming_the_file(store, project, tmp_path, write):
    rows = ["label,text"] + [
        f'"{t}",{c}'
        for t, c in [
            ("The food arrived cold and two hours late", "neg"),
            ("Lovely dinner, friendly driver, will order again", "pos"),
            ("Wrong order and nobody answered the phone", "neg"),
        ]
    ]
    path = write(tmp_path / "swapped.csv", "\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"swapped\.csv: the 'label' column holds long texts.*look swapped"):
        import_path(store, project, path)
    assert store.stats(project)["samples"] == 0
    # with the columns named the right way round, it imports
    assert import_path(store, project, path, text_column="label", label_column="text").labels == {
        "neg": 2,
        "pos": 1,
    }


def test_jsonl_label_field_holding_texts_is_refused(store, project, tmp_path, write):
    rows = [{"text": "ok", "label": f"this is a long sentence number {i} about the food"} for i in range(5)]
    path = write(tmp_path / "odd.jsonl", "\n".join(json.dumps(r) for r in rows))
    with pytest.raises(ValueError, match=r"odd\.jsonl: the 'label' column holds long texts"):
        import_path(store, project, path)


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("empty.csv", b"", r"empty\.csv is empty"),
        ("empty.jsonl", b"\n\n", r"empty\.jsonl is empty"),
        ("empty.txt", b"  \n", r"empty\.txt is empty"),
        ("latin.txt", b"caf\xe9 \xff\xfe\xfd", r"latin\.txt is neither UTF-8 nor GBK"),
        ("binary.jsonl", b"\x00\x01\x02{}", r"binary\.jsonl is not a text file"),
        ("columns.csv", "名字,价格\n饺子,12\n".encode(), r"columns\.csv: no a text column .*'名字', '价格'"),
    ],
)
def test_bad_text_files_get_one_sentence_naming_the_file(store, project, tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        import_path(store, project, path)
    assert store.stats(project)["samples"] == 0


def test_gbk_txt_imports_with_a_warning_naming_it(store, project, tmp_path):
    path = tmp_path / "gbk.txt"
    path.write_bytes("__label__好 味道很好\n__label__差 太慢了\n".encode("gbk"))
    report = import_path(store, project, path)
    assert _texts(store, project) == sorted([("太慢了", ("差",)), ("味道很好", ("好",))])
    assert any("gbk.txt" in w and "GB18030/GBK" in w for w in report.warnings)


@pytest.mark.parametrize(
    "name, data",
    [
        ("one.csv", "text,label\nhello there,greet\nhi,greet\n"),
        ("one.jsonl", '{"text": "hello", "label": "greet"}\n{"text": "hi", "label": "greet"}\n'),
        ("one.txt", "__label__greet hello\n__label__greet hi\n"),
    ],
)
def test_a_file_with_one_class_imports_with_a_warning_naming_it(store, project, tmp_path, write, name, data):
    report = import_path(store, project, write(tmp_path / name, data))
    assert report.added == 2
    assert any(name in w and "two classes" in w for w in report.warnings)


def test_texts_in_an_image_project_are_refused_with_what_to_do(store, tmp_path, write):
    images = store.create_project("i", "image-classification", kind="image", target="label")
    for path in (
        write(tmp_path / "a.jsonl", '{"text": "x"}\n'),
        write(tmp_path / "b.txt", "x\n"),
        write(tmp_path / "c" / "pos" / "x.txt", "x"),
    ):
        with pytest.raises(ValueError, match="holds texts.*make a text project"):
            import_path(
                store, images, path if path.suffix != ".txt" or path.parent == tmp_path else tmp_path / "c"
            )


def test_a_folder_of_jsonl_files_imports_each(store, project, tmp_path, write):
    write(tmp_path / "d" / "a.jsonl", '{"text": "good", "label": "pos"}\n')
    write(tmp_path / "d" / "b.jsonl", '{"text": "bad", "label": "neg"}\n')
    assert detect_format(tmp_path / "d") == "jsonl"
    assert import_path(store, project, tmp_path / "d").labels == {"neg": 1, "pos": 1}
