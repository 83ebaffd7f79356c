"""A suggestion for a sample added after the model was trained (the training run scored only the
samples there were then): the Label page asks the model when it shows such a sample."""

from __future__ import annotations


def ask_fresh_suggestion(page, sample) -> None:
    """Ask ``page``'s model for ``sample``'s suggestion off the UI thread, then show it if still shown."""
    if page.model_id is None or sample.labels or sample.id in page.suggestions:
        return
    if not page.annotator.takes_suggestions or page.info.get("target") == "boxes":
        return
    ws, project, model_id = page.ws, page.project, page.model_id

    def shown(result) -> None:
        sample_id, suggestion = result
        if suggestion is not None:
            page.suggestions[sample_id] = suggestion
            if page.sample is not None and page.sample.id == sample_id:
                page._show_sample_state()

    page.run(lambda state: (sample.id, ws.suggest(project, model_id, sample.id)), shown)
