"""Models by name, each with numbered versions of which one is live.

Every version is a copy of its artifact under the server's folder (the workspace may delete or
change the original). A request takes the live predictor once, at its start, and keeps that
reference to its end: switching the live version swaps one reference under a lock, after the new
version has been loaded and has answered a warm-up input, so no request in flight is dropped or
answered by half of each.
"""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path

from ..artifact import ArtifactError, load_artifact
from ..predictor import Predictor
from ..service import load_checked
from .store import EdgeStore

log = logging.getLogger(__name__)


class RegistryError(ValueError):
    """A model request that cannot be done (unknown name or version, bad source); ``status`` is HTTP."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message, self.status = message, status


def artifact_folder(path: Path) -> Path | None:
    """The artifact folder of an artifact (folder, model.json, model.onnx) or a deploy bundle."""
    path = Path(path).expanduser()
    if path.is_file() and path.name in ("model.json", "model.onnx"):
        path = path.parent
    for candidate in (path, path / "model"):
        if (candidate / "model.json").is_file() and (candidate / "model.onnx").is_file():
            return candidate
    return None


def check_name(name: str) -> str:
    name = str(name or "").strip()
    if not name or len(name) > 64 or not all(c.isalnum() or c in "-_." for c in name) or name[0] == ".":
        raise RegistryError(
            f"model name {name!r} is not usable: use 1 to 64 letters, digits, '-', '_' or '.'", 422
        )
    return name


class ModelRegistry:
    """Loaded predictors by (name, version), backed by an :class:`EdgeStore`.

    ``resolve(source) -> path`` turns what :func:`artifact_folder` does not know (a workspace model
    id) into an artifact folder; the app passes it, a bundle has none.
    """

    def __init__(self, store: EdgeStore, *, resolve=None, device: str = "auto", threads: int | None = None):
        self.store = store
        self.resolve = resolve
        self.device = device
        self.threads = threads
        self.models_dir = store.folder / "models"
        self._lock = threading.RLock()
        self._add_lock = threading.Lock()
        self._records: dict[str, dict] = {}
        self._predictors: dict[tuple[str, int], Predictor] = {}
        self.errors: dict[str, str] = {}  # name -> why its live version could not load
        for record in store.models():
            self._records[record["name"]] = record
            try:
                self._loaded(record["name"], record["live_version"])
            except (ArtifactError, RegistryError, OSError) as exc:
                self.errors[record["name"]] = str(exc)
                log.error("model %s version %s did not load: %s", record["name"], record["live_version"], exc)

    def _load(self, path) -> Predictor:
        return load_checked(path, device=self.device, threads=self.threads)

    def _loaded(self, name: str, version: int) -> Predictor:
        with self._lock:
            predictor = self._predictors.get((name, version))
            record = self._records.get(name)
        if predictor is not None:
            return predictor
        if record is None:
            raise RegistryError(f"no model named {name!r} on this edge server", 404)
        entry = next((v for v in record["versions"] if v["version"] == version), None)
        if entry is None:
            raise RegistryError(f"model {name!r} has no version {version}", 404)
        predictor = self._load(entry["path"])
        with self._lock:
            return self._predictors.setdefault((name, version), predictor)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._records)

    def has(self, name: str) -> bool:
        with self._lock:
            return name in self._records

    def predictor(self, name: str, version: int | None = None) -> tuple[Predictor, int]:
        """The predictor of ``version`` (default: the live one) and its number."""
        with self._lock:
            record = self._records.get(name)
            if record is None:
                raise RegistryError(f"no model named {name!r} on this edge server", 404)
            version = int(version) if version is not None else record["live_version"]
        return self._loaded(name, version), version

    def resolve_source(self, source: str) -> Path:
        folder = artifact_folder(Path(str(source)))
        if folder is None and self.resolve is not None:
            try:
                resolved = self.resolve(str(source))
            except (KeyError, ValueError, OSError) as exc:
                raise RegistryError(str(exc.args[0] if exc.args else exc), 404) from None
            folder = artifact_folder(Path(resolved)) if resolved else None
        if folder is None:
            raise RegistryError(
                f"{source}: not a model id of the workspace, an exported model folder or a deploy bundle", 404
            )
        return folder

    def add(self, source: str, name: str) -> tuple[str, int]:
        """Add ``source`` as the next version of ``name`` (the first becomes live); (name, version)."""
        name = check_name(name)
        folder = self.resolve_source(source)
        try:
            artifact = load_artifact(folder)
        except ArtifactError as exc:
            raise RegistryError(str(exc), 422) from None
        with self._add_lock:  # one adder at a time: versions are numbered in the order they are added
            version = self.store.next_version(name)
            final = self.models_dir / name / f"v{version}"
            shutil.rmtree(final, ignore_errors=True)
            final.mkdir(parents=True)
            for extra in artifact.path.iterdir():  # the graph, the card and any side file it names
                if extra.is_file():
                    shutil.copy2(extra, final / extra.name)
            try:
                predictor = self._load(final)
            except (ArtifactError, ValueError) as exc:
                shutil.rmtree(final, ignore_errors=True)
                raise RegistryError(str(exc), 422) from None
            self.store.add_version(
                name,
                source=str(source),
                model_id=artifact.id,
                path=str(final),
                size_bytes=artifact.size_bytes(),
            )
            with self._lock:
                self._predictors[(name, version)] = predictor
                self._records = {r["name"]: r for r in self.store.models()}
                self.errors.pop(name, None)
        log.info("added model %s version %d from %s", name, version, source)
        return name, version

    def set_live(self, name: str, version: int) -> int:
        """Make ``version`` live once it is loaded (requests in flight finish on the old one)."""
        version = int(version)
        self._loaded(name, version)  # load and warm up first: the switch itself is one assignment
        with self._lock:
            self._records[name]["live_version"] = version
            self.store.set_live(name, version)
        log.info("model %s: version %d is live", name, version)
        return version

    def remove(self, name: str) -> None:
        with self._lock:
            if name not in self._records:
                raise RegistryError(f"no model named {name!r} on this edge server", 404)
            del self._records[name]
            for key in [k for k in self._predictors if k[0] == name]:
                del self._predictors[key]
            self.store.remove_model(name)
        shutil.rmtree(self.models_dir / name, ignore_errors=True)
        log.info("removed model %s", name)

    def describe(self) -> list[dict]:
        """The models of ``GET /v1/edge/models``."""
        out = []
        with self._lock:
            records = [dict(r) for r in self._records.values()]
        for record in sorted(records, key=lambda r: r["name"]):
            name, live = record["name"], record["live_version"]
            task, kind, labels = None, None, []
            try:
                predictor, _ = self.predictor(name, live)
                card = predictor.artifact.card
                task, kind, labels = card.get("task"), predictor.input.kind, list(predictor.labels)
            except (ArtifactError, RegistryError, ValueError, OSError) as exc:
                self.errors[name] = str(exc)
            out.append(
                {
                    "name": name,
                    "live_version": live,
                    "task": task,
                    "input_kind": kind,
                    "labels": labels,
                    "error": self.errors.get(name),
                    "versions": [
                        {k: v[k] for k in ("version", "source", "model_id", "added", "size_bytes")}
                        for v in record["versions"]
                    ],
                }
            )
        return out
