"""How every face of the app words an error: a user's mistake as its own sentence, a bug as a pointer
to the log, never an exception class name."""

import pytest

from modeldesk.app.cli import describe_error
from modeldesk.deploy.artifact import ArtifactError
from modeldesk.deploy.preprocess import ImageDecodeError
from modeldesk.errors import BUG_MESSAGE, UserError, describe, user_message


@pytest.mark.parametrize(
    "exc, words",
    [
        (UserError("label some photos first"), "label some photos first"),
        (KeyError("no project named 'x' (projects: a)"), "no project named 'x' (projects: a)"),
        (ArtifactError("m: not a model artifact"), "m: not a model artifact"),
        (ImageDecodeError("cat.jpg: damaged image"), "cat.jpg: damaged image"),
        (
            FileNotFoundError(2, "No such file or directory", "/data/x.csv"),
            "/data/x.csv: No such file or directory",
        ),
    ],
)
def test_user_errors_are_their_own_sentence(exc, words):
    assert user_message(exc) == describe(exc) == describe_error(exc) == words


@pytest.mark.parametrize("exc", [TypeError("unsupported operand"), AttributeError("x"), ZeroDivisionError()])
def test_bugs_point_to_the_log_without_a_class_name(exc):
    assert user_message(exc) is None and describe_error(exc) is None
    assert describe(exc) == BUG_MESSAGE and type(exc).__name__ not in describe(exc)


def test_cli_prints_one_line_without_traceback_or_class(tmp_path, capsys):
    from modeldesk.app.cli import main

    code = main(["stats", "nope", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "KeyError" not in err and "no project named 'nope'" in err
