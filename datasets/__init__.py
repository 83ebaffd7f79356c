"""Projects, samples and annotations: the SQLite store, the media folder, importers and exporters.

    from modeldesk.datasets import Store, import_path, export_project
    store = Store(workspace_folder)
    project = store.create_project("pets", "image-classification", kind="image", target="label")
    report = import_path(store, project, "photos/")   # folder-per-class, VOC, COCO, YOLO, CSV, WAV, zip
    store.stats(project)["labels"]
    export_project(store, project, "out/", "folder")

This package imports neither Qt nor any other ModelDesk package.
"""

from .detect import FORMATS, detect_format
from .exporting import EXPORT_FORMATS, export_project
from .importing import import_path
from .items import ImportReport
from .records import KINDS, SPLITS, TARGETS, Box, Project, Sample
from .store import NewSample, Store
from .verify import MAX_IMAGE_PIXELS

__all__ = [
    "Box",
    "EXPORT_FORMATS",
    "FORMATS",
    "ImportReport",
    "KINDS",
    "MAX_IMAGE_PIXELS",
    "NewSample",
    "Project",
    "SPLITS",
    "Sample",
    "Store",
    "TARGETS",
    "detect_format",
    "export_project",
    "import_path",
]
