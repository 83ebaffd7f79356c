"""What the pages show for each input kind (an image, a sound clip, a text), as a registry.

The pages ask this registry, keyed by the project's ``input_kind`` (the same names as the data
layer's ``datasets/kinds/`` and deploy's ``deploy/inputs.py``); none of them tests a kind's name.
The Label page's sample views register themselves by kind too (``pages/label/views.py``).

A new input kind is one :class:`UiKind` entry in ``UI_KINDS`` (and, when it needs them, its own
widgets: a Data-page bar in ``pages/data_bars.py``, a Label view).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UiKind:
    """The words and widgets of one input kind.

    Attributes
    ----------
    one, many : what a sample is called ("photo", "photos").
    data_bar : the Data page's bar for adding samples of this kind without importing (the
        :class:`~modeldesk.ui.pages.data_bars.DataBars` method that shows it), or None.
    try_parts : which parts of Deploy's "Try it" card the kind uses: ``"drop"`` (a drop area that
        shows the file), ``"camera"``, ``"choose"`` (a file dialog), ``"player"`` and ``"recorder"``
        (a clip is played and can be recorded), ``"text"`` (a text box), ``"form"`` (a field per column
        of a table model).
    choose : (button text, dialog title, file filter) of the "choose a file" button.
    try_hint : the "Try it" card's subtitle.
    looking : what the answer line says while the model reads a file.
    plays : True when a sample is played (a click on a mistake plays it).
    label_view : the Label page's view of one sample, ``".module:Class"`` relative to ``ui/``
        (loaded when a project of the kind is first labeled).
    add_filter : the file dialog's filter for adding data: the media and the label files that go with
        them (never the media alone: a tags CSV or a detector's COCO JSON would be hidden).
    sample_table : a widget that shows every sample as a row of a table, ``".module:Class"`` relative
        to ``ui/``: the Data page shows it instead of the gallery, the Label page instead of one sample
        at a time (None: the gallery and one sample at a time).
    drop_text : what the Data page's empty area says ("" : the kind's nouns fill a general sentence).
    """

    one: str
    many: str
    data_bar: str | None = None
    try_parts: frozenset = frozenset()
    choose: tuple[str, str, str] | None = None
    try_hint: str = ""
    looking: str = "Looking…"
    plays: bool = False
    label_view: str = ".pages.label.views:ImageView"
    add_filter: str = "Files and archives (*)"
    sample_table: str | None = None
    drop_text: str = ""


#: photo files "Try it" accepts
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")


UI_KINDS: dict[str, UiKind] = {
    "image": UiKind(
        "photo",
        "photos",
        data_bar="_show_capture",
        try_parts=frozenset({"drop", "camera", "choose"}),
        choose=(
            "Choose a photo…",
            "Choose a photo",
            "Images (" + " ".join(f"*{s}" for s in IMAGE_SUFFIXES) + ")",
        ),
        try_hint="Drop a photo to see what the model says.",
        add_filter="Photos, label files and archives (*.jpg *.jpeg *.png *.bmp *.gif *.webp *.tif *.tiff "
        "*.zip *.csv *.json *.xml *.txt *.yaml *.yml)",
    ),
    "audio": UiKind(
        "clip",
        "clips",
        data_bar="_show_recorder",
        try_parts=frozenset({"player", "recorder", "choose"}),
        choose=("Choose a WAV clip…", "Choose a sound clip", "WAV sound clips (*.wav *.wave)"),
        try_hint="Record a clip or choose a WAV file to see what the model says.",
        looking="Listening…",
        plays=True,
        label_view=".pages.label.audio_view:AudioView",
        add_filter="Sound clips, label files and archives (*.wav *.wave *.zip *.csv)",
    ),
    "text": UiKind(
        "text",
        "texts",
        data_bar="_show_text_adder",
        try_parts=frozenset({"text"}),
        try_hint="Type or paste a text to see what the model says.",
        label_view=".pages.label.text_view:TextView",
        add_filter="Texts (*.csv *.tsv *.jsonl *.ndjson *.txt *.zip)",
    ),
    "row": UiKind(
        "row",
        "rows",
        try_parts=frozenset({"form"}),
        try_hint="Fill in a row to see what the model says.",
        label_view=".pages.label.text_view:TextView",
        add_filter="Tables (*.csv *.tsv *.xlsx *.parquet)",
        sample_table=".pages.table_view:RowTable",
        drop_text="Drop a table here (CSV, TSV, Excel .xlsx or Parquet): one row per example, a header "
        "row naming the columns.\n\nor use “Add rows”.",
    ),
}


def ui_kind(name: str | None) -> UiKind:
    """The entry for an input kind (images for None or a kind this version does not know)."""
    return UI_KINDS.get(name or "image", UI_KINDS["image"])


def add_files_filter(name: str | None) -> str:
    """The file dialog's filter for adding data to a project of input kind ``name``."""
    return f"{ui_kind(name).add_filter};;All files (*)"


def label_view(name: str | None):
    """The Label page's view class for an input kind (one registered with ``register_view`` first)."""
    import importlib

    from .pages.label.views import VIEWS

    if name in VIEWS:
        return VIEWS[name]
    module, _, attribute = ui_kind(name).label_view.partition(":")
    return getattr(importlib.import_module(module, __package__), attribute)


def sample_table(name: str | None):
    """The table widget class of an input kind whose samples show as rows of a table, else None."""
    import importlib

    spec = ui_kind(name).sample_table
    if spec is None:
        return None
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module, __package__), attribute)


def data_bars() -> set[str]:
    """Every Data-page bar method the registered kinds use."""
    return {kind.data_bar for kind in UI_KINDS.values() if kind.data_bar}
