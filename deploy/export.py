"""Export a model artifact: as is, compressed, and/or as a self-contained deploy bundle."""

from __future__ import annotations

import tempfile
from pathlib import Path

from .artifact import ModelArtifact, load_artifact, save_artifact
from .bundle import build_bundle
from .compress import compress_artifact


def _size(path: Path) -> int:
    return (
        path.stat().st_size
        if path.is_file()
        else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    )


def export_artifact(
    artifact,
    out,
    *,
    compress: bool = False,
    bundle: bool = False,
    calibration=None,
    validation=None,
    zip_bundle: bool | None = None,
    candidates=None,
    progress=None,
    tmp_dir=None,
    training=None,
    refit_head=None,
    metric=None,
) -> dict:
    """Export ``artifact`` to ``out`` and describe the result.

    Parameters
    ----------
    artifact : ModelArtifact or path
    out : str or Path
        The exported artifact folder, or the bundle folder / zip with ``bundle=True``.
    compress : bool
        Search compression candidates (needs ``calibration`` image paths and ``validation``
        (path, label) pairs) and export the fastest within 1 accuracy point.
    bundle : bool
        Write a deploy bundle that runs without ModelDesk.
    zip_bundle : bool, optional
        Write the bundle as one zip (default: when ``out`` ends with ``.zip``).
    candidates, progress
        Passed to :func:`compress_artifact` (restrict the search; progress callback).
    training, refit_head
        Passed to :func:`compress_artifact`: training (path, label) pairs and a head re-fitter, for
        the candidates whose head is re-fitted on their own features.
    metric
        Passed to :func:`compress_artifact`: the validation metric when it is not label accuracy
        (e.g. a detector's mAP50).
    tmp_dir : path-like, optional
        Folder for scratch files (the app passes the workspace's ``tmp/``); default: system temp.

    Returns
    -------
    dict
        ``path`` and ``size_bytes``; with ``compress`` also the compression keys (``candidates``,
        ``chosen``, ``accuracy_fp32``, ``accuracy_compressed``, ``speedup``); with ``bundle`` also
        ``artifact_path`` (the model inside).
    """
    artifact = artifact if isinstance(artifact, ModelArtifact) else load_artifact(artifact)
    out = Path(out)
    if zip_bundle is None:
        zip_bundle = out.suffix == ".zip"
    result: dict = {}
    if tmp_dir is not None:
        Path(tmp_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="modeldesk-export-", dir=tmp_dir) as tmp:
        source = artifact
        if compress:
            if not calibration or not validation:
                raise ValueError("compression needs calibration images and labelled validation images")
            target = Path(tmp) / "compressed" if bundle else out
            result.update(
                compress_artifact(
                    artifact,
                    target,
                    calibration=calibration,
                    validation=validation,
                    candidates=candidates,
                    progress=progress,
                    tmp_dir=tmp,
                    training=training,
                    refit_head=refit_head,
                    metric=metric,
                )
            )
            source = load_artifact(target)
        if bundle:
            path = build_bundle(source, out, zip=bool(zip_bundle))
            result["artifact_path"] = str(path / "model") if path.is_dir() else f"{path}!{path.stem}/model"
        elif not compress:
            path = save_artifact(out, source.model_bytes(), source.card)
        else:
            path = out
    result["path"] = str(path)
    result["size_bytes"] = _size(path)
    return result
