"""`modeldesk demo` is the README's first promise: the whole flow, on data it makes."""

from modeldesk.app.demo import run_demo


def test_demo_runs_every_step_and_the_service_answers(tmp_path):
    result = run_demo(tmp_path / "ws", quiet=True, per_class=10)
    assert list(result["steps"]) == [
        "workspace",
        "data",
        "import",
        "plan",
        "train",
        "evaluate",
        "export",
        "serve",
    ]
    assert result["evaluate_accuracy"] >= 0.7  # three shapes: chance is a third
    assert result["prediction"]["label"] == "triangle"
