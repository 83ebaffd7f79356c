"""Human text for results that have gaps: skipped candidates, missing ETAs."""

from modeldesk.app import formatting


def test_export_text_shows_skipped_candidates_without_numbers():
    result = {
        "path": "/out",
        "size_bytes": 3_500_000,
        "chosen": "int8-qdq-perchannel",
        "accuracy_fp32": 0.987,
        "accuracy_compressed": 0.984,
        "speedup": 2.2,
        "claim": "At most 0.8 points less accurate than the original, 95% sure, on 1,026 photos.",
        "candidates": [
            {
                "name": "fp32",
                "size_bytes": 12_000_000,
                "latency_ms": 3.6,
                "accuracy": 0.987,
                "reason": "reference",
            },
            {
                "name": "int8-qdq-perchannel",
                "size_bytes": 3_500_000,
                "latency_ms": 1.7,
                "accuracy": 0.984,
                "loss_bound": 0.83,
            },
            {
                "name": "fp32-160",
                "size_bytes": None,
                "latency_ms": None,
                "accuracy": None,
                "reason": "skipped: the graph pools a fixed spatial grid " + "x" * 200,
            },
        ],
    }
    text = formatting.export_text(result)
    assert "kept" in text and "2.2x faster" in text and "98.7% -> 98.4%" in text
    assert "At most 0.8 points less accurate than the original, 95% sure, on 1,026 photos." in text
    kept_line = next(line for line in text.splitlines() if line.startswith("int8-qdq-perchannel "))
    assert " 0.8 " in kept_line  # its proven bound, in points
    skipped_line = next(line for line in text.splitlines() if line.startswith("fp32-160"))
    assert "skipped" in skipped_line and skipped_line.rstrip().endswith("...")


def test_train_text_without_a_measured_plan():
    text = formatting.train_text({"model": "m-1", "metrics": {"accuracy": 0.5, "macro_f1": 0.4}, "plan": {}})
    assert "m-1" in text and "50.0%" in text and "?" in text
    noted = formatting.train_text({"model": "m-1", "metrics": {}, "plan": {}, "notes": ["looked at 480 px"]})
    assert "note: looked at 480 px" in noted.splitlines()


def test_a_prediction_unlike_the_training_data_reads_not_sure():
    sure = {"file": "a.png", "label": "palm", "score": 0.93, "sure": True}
    unsure = {"file": "raccoon.jpg", "label": "0", "score": 1.0, "sure": False}
    lines = formatting.predictions_text([sure, unsure]).splitlines()
    assert lines[0] == "a.png: palm (93.0%)"
    assert lines[1].startswith("raccoon.jpg: not sure") and "closest guess 0" in lines[1]
