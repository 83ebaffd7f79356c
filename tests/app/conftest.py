import json

import pytest

from modeldesk.app.cli import main
from modeldesk.app.sample_data import make_shapes_folder


@pytest.fixture(scope="session")
def shapes_folder(tmp_path_factory):
    """Three visually distinct classes, 12 images each, folder-per-class."""
    return make_shapes_folder(tmp_path_factory.mktemp("shapes"), per_class=12, seed=3)


@pytest.fixture(scope="session")
def holdout_folder(tmp_path_factory):
    """The same three classes drawn with another seed: images no model has seen."""
    return make_shapes_folder(tmp_path_factory.mktemp("holdout"), per_class=6, seed=4)


@pytest.fixture
def cli(tmp_path, capsys):
    """Run ``modeldesk ... --json`` in-process on a fresh workspace; returns (exit code, JSON or text)."""
    workspace = tmp_path / "ws"

    def run(*args, json_output=True):
        argv = [*map(str, args), "--workspace", str(workspace)] + (["--json"] if json_output else [])
        code = main(argv)
        captured = capsys.readouterr()
        if code == 0 and json_output:
            return code, json.loads(captured.out)
        return code, captured.out + captured.err

    run.workspace = workspace
    return run
