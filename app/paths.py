"""Where things live on disk: the workspace folder and its fixed layout."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

APP_NAME = "ModelDesk"
ENV_WORKSPACE = "MODELDESK_WORKSPACE"


def default_workspace() -> Path:
    """The workspace used when neither ``--workspace`` nor ``MODELDESK_WORKSPACE`` is given."""
    env = os.environ.get(ENV_WORKSPACE)
    if env:
        return Path(env).expanduser()
    return Path(user_data_dir(APP_NAME, appauthor=False)) / "workspace"


class WorkspacePaths:
    """The layout of one workspace folder (see DESIGN.md, "Storage promises")."""

    def __init__(self, root):
        self.root = Path(root).expanduser().resolve()
        self.db = self.root / "workspace.db"
        self.media = self.root / "media"
        self.models = self.root / "models"
        self.cache = self.root / "cache"
        self.tmp = self.root / "tmp"
        self.log = self.root / "logs" / "modeldesk.log"

    def create(self) -> WorkspacePaths:
        for folder in (self.root, self.media, self.models, self.cache, self.tmp, self.log.parent):
            folder.mkdir(parents=True, exist_ok=True)
        return self
