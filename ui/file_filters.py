"""What the file dialogs offer to add, by the project's input kind: the media and the label files that
go with them (a CSV of tags, COCO JSON, VOC XML, YOLO text and data.yaml), never the images alone."""

from __future__ import annotations

ALL_FILES = "All files (*)"
FILTERS = {
    "image": "Photos, label files and archives (*.jpg *.jpeg *.png *.bmp *.gif *.webp *.tif *.tiff "
    "*.zip *.csv *.json *.xml *.txt *.yaml *.yml)",
    "text": "Texts (*.csv *.tsv *.jsonl *.ndjson *.txt *.zip)",
    "audio": "Sound clips, label files and archives (*.wav *.wave *.zip *.csv)",
}


def file_filter(input_kind: str | None) -> str:
    """The Qt name filter for adding data to a project of ``input_kind`` (photos when unknown)."""
    return f"{FILTERS.get(input_kind or 'image', FILTERS['image'])};;{ALL_FILES}"
