"""Numbers and structures read from annotation files are held to limits before anything is built
from them, and each broken file gets a message naming it (issue 30, item 3 and item 8)."""

import json
import subprocess
import sys
import textwrap

import pytest

from modeldesk.datasets import detect_format, flatyaml, import_path


def _detection(store):
    return store.create_project("det", "object-detection", kind="image", target="boxes")


def test_huge_class_count_in_data_yaml_is_refused_before_allocating(tmp_path, write, gen):
    # 13 bytes made an import grow to 22.7 GB; under a 1.5 GB address-space cap it must fail cleanly
    root = tmp_path / "y"
    write(root / "data.yaml", "nc: 999999999")
    write(root / "a.jpg", gen.jpeg(40, 40))
    write(root / "a.txt", "0 0.5 0.5 0.5 0.5\n")
    script = textwrap.dedent(
        f"""
        import resource
        from modeldesk.datasets import Store, import_path
        store = Store({str(tmp_path / "ws")!r})
        project = store.create_project("det", "object-detection", kind="image", target="boxes")
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
        try:
            import_path(store, project, {str(root)!r})
        except ValueError as exc:
            print("REFUSED", exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert "REFUSED" in done.stdout, done.stderr[-2000:]
    assert "data.yaml" in done.stdout and "999,999,999 classes" in done.stdout


def test_coco_file_with_a_5000_digit_number_is_read_and_says_what_is_wrong(store, tmp_path, write, gen):
    root = tmp_path / "c"
    write(root / "x.jpg", gen.jpeg(64, 48))
    write(root / "y.jpg", gen.jpeg(64, 48, color=(0, 0, 80)))
    write(
        root / "instances.json",
        '{"images": [{"id": 1, "file_name": "x.jpg"}, {"id": 2, "file_name": "y.jpg"}], "annotations": '
        '[{"id": 1, "image_id": 1, "category_id": 1, "bbox": [' + "9" * 5000 + ", 1, 2, 3]}, "
        '{"id": 2, "image_id": 2, "category_id": 1, "bbox": [1, 1, 2, 3]}], '
        '"categories": [{"id": 1, "name": "bird"}]}',
    )
    assert detect_format(root) == "coco"  # not a plain folder whose boxes vanish
    report = import_path(store, _detection(store), root)
    assert (report.added, report.boxes) == (1, 1)
    assert any(w.startswith("instances.json:") and "5,000 digits" in w for w in report.warnings)
    (failure,) = report.failed
    assert failure["file"] == "x.jpg" and "not a finite number" in failure["reason"]


def test_coco_file_with_a_long_number_and_deep_nesting_is_refused_naming_it(store, tmp_path, write, gen):
    root = tmp_path / "c"
    write(root / "x.jpg", gen.jpeg(64, 48))
    deep = "[" * 100_000 + "]" * 100_000
    write(
        root / "instances.json",
        '{"images": [], "annotations": [], "n": ' + "9" * 5000 + ', "d": ' + deep + "}",
    )
    report = import_path(store, _detection(store), root)
    (failure,) = report.failed
    assert failure["file"] == "instances.json" and "digits" in failure["reason"]


def test_coco_annotations_that_are_not_a_list_get_a_clear_message(store, tmp_path, write, gen):
    root = tmp_path / "c"
    write(root / "x.jpg", gen.jpeg(64, 48))
    write(
        root / "instances.json", json.dumps({"images": [{"id": 1, "file_name": "x.jpg"}], "annotations": 5})
    )
    report = import_path(store, _detection(store), root)
    (failure,) = report.failed
    assert failure["file"] == "instances.json"
    assert '"annotations" is 5' in failure["reason"] and "TypeError" not in failure["reason"]


def test_coco_file_nested_too_deep_fails_alone(store, tmp_path, write, gen):
    root = tmp_path / "c"
    write(root / "a" / "x.jpg", gen.jpeg(64, 48))
    write(
        root / "a" / "instances.json",
        json.dumps({"images": [{"id": 1, "file_name": "x.jpg"}], "annotations": []}),
    )
    write(root / "b" / "deep.json", '{"images": [], "annotations": ' + "[" * 100_000 + "]" * 100_000 + "}")
    report = import_path(store, _detection(store), root)
    assert report.added == 1
    (failure,) = report.failed
    assert failure["file"] == "b/deep.json" and "nested too deep" in failure["reason"]


def test_yolo_names_and_boxes_over_the_limits_fail_per_file(store, tmp_path, write, gen):
    root = tmp_path / "y"
    write(root / "classes.txt", "thing\n")
    write(root / "many.jpg", gen.jpeg(40, 40))
    write(root / "many.txt", "0 0.5 0.5 0.1 0.1\n" * 10_001)
    write(root / "ok.jpg", gen.jpeg(40, 40, color=(0, 0, 9)))
    write(root / "ok.txt", "0 0.5 0.5 0.1 0.1\n")
    report = import_path(store, _detection(store), root)
    assert report.added == 1
    (failure,) = report.failed
    assert failure["file"] == "many.jpg" and "more than 10,000 boxes" in failure["reason"]


FLAT_YAML = [
    "path: ../datasets/coco8\ntrain: images/train\nval: images/val\ntest:  # optional\nnames:\n  0: person\n  1: bicycle\n",
    "train: ../train/images\nval: ../valid/images\n\nnc: 2\nnames: ['cat', 'hot dog']\n",
    "names:\n  - 'a, b'\n  - \"c # not a comment\"\n  - d  # a comment\n",
    "names: {0: person, 1: 'traffic light'}\ntrain: [images/a, images/b]\n",
]


@pytest.mark.parametrize("text", FLAT_YAML)
def test_flat_yaml_reader_agrees_with_pyyaml(text):
    yaml = pytest.importorskip("yaml")  # not a dependency; present with the test tools
    expected = yaml.safe_load(text)
    got = flatyaml.parse(text)

    def normalise(v):
        return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else v

    for key, value in expected.items():
        if value is None:
            assert got[key] == ""
        elif isinstance(value, (dict, list)):
            assert normalise(got[key]) == normalise(value)
        else:
            assert got[key] == str(value)


def test_flat_yaml_refuses_what_it_does_not_read():
    with pytest.raises(ValueError, match="line 1"):
        flatyaml.parse("- a\n- b\n")
    with pytest.raises(ValueError, match="never closed"):
        flatyaml.parse("names: [a, b\n")
    with pytest.raises(ValueError, match="larger than"):
        flatyaml.parse("names: [" + "a, " * 400_000 + "]\n")
