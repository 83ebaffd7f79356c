"""Small widgets shared by the pages: error dialog, progress panel, dialogs, the label-count chart."""

from .error_dialog import ErrorDialog, show_error
from .progress_panel import ProgressPanel

__all__ = ["ErrorDialog", "ProgressPanel", "show_error"]
