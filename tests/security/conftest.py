"""The security tests attack the same stand-in model as the deploy tests: share their fixtures."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_deploy_conftest", Path(__file__).parents[1] / "deploy" / "conftest.py")
_deploy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_deploy)

standin_artifact = _deploy.standin_artifact
deploy_helpers = _deploy.deploy_helpers
