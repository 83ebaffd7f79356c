"""The "New project" dialog: a name, what the model should do, and where the data comes from."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from ..kinds import add_files_filter

SOURCE_LATER, SOURCE_FOLDER, SOURCE_FILES = "later", "folder", "files"


class NewProjectDialog(QDialog):
    """Ask for a project's name, task and data source.

    After ``exec()`` returns Accepted, read :attr:`name`, :attr:`task` and :attr:`paths`
    (the files or folder to import, possibly empty).

    Parameters
    ----------
    tasks : list of dict
        What the Workspace says exists (``ws.tasks()``): each task's ``name``, ``title``,
        ``description``, ``trainable`` and ``missing``. A task that cannot train yet is offered with
        its ``missing`` sentence, so nobody meets that only after labeling.
    existing : iterable of str
        Names already taken (the OK button stays disabled for them).
    paths : list of path, optional
        Data already chosen (e.g. dropped on the window): preselects that source.
    """

    def __init__(self, tasks: list[dict], existing=(), paths=None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("New project")
        self.setMinimumWidth(600)  # most task sentences on one line: the dialog fits a small screen
        self._existing = {n.casefold() for n in existing}
        self.paths: list[Path] = [Path(p) for p in (paths or [])]
        self.kinds = {task["name"]: task.get("input_kind") for task in tasks}

        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("e.g. Ripe tomatoes")
        self.name_edit.textChanged.connect(self._validate)
        self.name_error = QLabel()
        self.name_error.setObjectName("Error")

        self.task_group = QButtonGroup(self)
        tasks_box = QVBoxLayout()
        tasks_box.setSpacing(2)
        for index, task in enumerate(tasks):
            radio = QRadioButton(task.get("title") or task["name"])
            radio.setProperty("task", task["name"])
            radio.setChecked(index == 0)
            self.task_group.addButton(radio, index)
            hint = task.get("description") or ""
            if not task.get("trainable", True):
                missing = task.get("missing") or "ModelDesk cannot train this kind of project yet."
                hint = f"{hint} <span style='color:#c27c0e'>Not trainable yet: {missing}</span>"
            caption = QLabel(hint)
            caption.setObjectName("Muted")
            caption.setWordWrap(True)
            caption.setContentsMargins(24, 0, 0, 6)
            tasks_box.addWidget(radio)
            tasks_box.addWidget(caption)

        self.source_group = QButtonGroup(self)
        self.source_folder = QRadioButton("A folder on this computer (one sub-folder per class is fine)")
        self.source_files = QRadioButton("Some files or a zip archive")
        self.source_later = QRadioButton("I'll add data later")
        for index, radio in enumerate((self.source_folder, self.source_files, self.source_later)):
            self.source_group.addButton(radio, index)
        self.source_later.setChecked(not self.paths)
        self.source_group.idToggled.connect(self._source_changed)
        self.browse_button = QPushButton("Choose…")
        self.browse_button.clicked.connect(self.browse)
        self.source_label = QLabel()
        self.source_label.setObjectName("Muted")
        self.source_label.setWordWrap(True)
        browse_row = QHBoxLayout()
        browse_row.addWidget(self.source_label, 1)
        browse_row.addWidget(self.browse_button)
        sources = QVBoxLayout()
        for radio in (self.source_folder, self.source_files, self.source_later):
            sources.addWidget(radio)
        sources.addLayout(browse_row)

        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignRight | Qt.AlignTop)
        form.addRow("Name", self.name_edit)
        form.addRow("", self.name_error)
        form.addRow("The model should", tasks_box)
        form.addRow("Data comes from", sources)

        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.button(QDialogButtonBox.Ok).setText("Create project")
        self.buttons.button(QDialogButtonBox.Ok).setObjectName("Primary")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.buttons)

        if self.paths:
            many = len(self.paths) > 1 or not self.paths[0].is_dir()
            (self.source_files if many else self.source_folder).setChecked(True)
        self._source_changed()
        self._validate()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt name)
        """Take the height the sentences need at the dialog's width: a dialog gets at most two thirds of
        the screen by default, which squeezed each task's sentence to one clipped line."""
        super().showEvent(event)
        need = self.layout().totalHeightForWidth(self.width())
        screen = self.screen().availableGeometry().height() if self.screen() else need
        if need > self.height():
            self.resize(self.width(), min(need, screen - 40))  # the title bar's room kept

    # -- read back ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.name_edit.text().strip()

    @property
    def task(self) -> str:
        return self.task_group.checkedButton().property("task")

    def set_task(self, task: str) -> None:
        for button in self.task_group.buttons():
            button.setChecked(button.property("task") == task)

    @property
    def source(self) -> str:
        if self.source_folder.isChecked():
            return SOURCE_FOLDER
        if self.source_files.isChecked():
            return SOURCE_FILES
        return SOURCE_LATER

    # -- behaviour ---------------------------------------------------------------------------

    def browse(self) -> None:
        """Pick the folder or files for the chosen source."""
        if self.source == SOURCE_FOLDER:
            folder = QFileDialog.getExistingDirectory(self, "Choose the folder with your images")
            chosen = [folder] if folder else []
        else:
            kind = self.kinds.get(self.task)
            files, _ = QFileDialog.getOpenFileNames(
                self, "Choose files or a zip archive", "", add_files_filter(kind)
            )
            chosen = files
        if chosen:
            self.paths = [Path(p) for p in chosen]
            self._source_changed()

    def set_paths(self, paths) -> None:
        """Set the data to import (used by tests and by drag-and-drop)."""
        self.paths = [Path(p) for p in paths]
        self._source_changed()

    def _source_changed(self, *_args) -> None:
        later = self.source == SOURCE_LATER
        self.browse_button.setEnabled(not later)
        if later:
            self.source_label.setText("You can drag files onto the window at any time.")
        elif self.paths:
            names = ", ".join(p.name or str(p) for p in self.paths[:3])
            more = f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else ""
            self.source_label.setText(f"{names}{more}")
        else:
            self.source_label.setText("Nothing chosen yet.")
        self._validate()

    def _validate(self, *_args) -> None:
        problem = ""
        if not self.name:
            problem = " "
        elif self.name.casefold() in self._existing:
            problem = f"There is already a project called “{self.name}”."
        elif self.source != SOURCE_LATER and not self.paths:
            problem = " "
        self.name_error.setText(problem.strip())
        self.name_error.setVisible(bool(problem.strip()))
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(not problem)

    def import_paths(self) -> list[Path]:
        """What to import after creating the project (empty for "later")."""
        return [] if self.source == SOURCE_LATER else list(self.paths)
