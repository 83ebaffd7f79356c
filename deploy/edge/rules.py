"""Rules: a condition on a model's answer, held for k frames or s seconds, with a cool-down.

A rule is the object of ``docs/EDGE_API.md``: ``{"id", "when": {"kind", "label", "score", "count"},
"hold_frames", "hold_s", "cooldown_s", "actions": [...]}``. Kind ``area`` (segmentation models): the
class ``label`` covers at least ``score`` of the picture (the answer's ``areas``).
"""

from __future__ import annotations

import uuid

KINDS = ("label", "not_sure", "count", "score", "area")
ACTION_TYPES = {"webhook": "url", "jsonl": "path", "csv": "path", "save_frame": "folder"}


class RuleError(ValueError):
    """A rule that cannot be used; the message says which field and why."""


def _number(value, where: str, low: float = 0.0, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RuleError(f"{where} must be a number")
    if value < low or (high is not None and value > high):
        raise RuleError(
            f"{where} must be between {low:g} and {high:g}"
            if high is not None
            else f"{where} must be >= {low:g}"
        )
    return float(value)


def check_rule(rule: dict, labels: list[str] | None = None) -> dict:
    """A complete, checked copy of ``rule`` (an id is given when it has none)."""
    if not isinstance(rule, dict) or not isinstance(rule.get("when"), dict):
        raise RuleError('a rule is an object with a "when" condition')
    when = rule["when"]
    kind = when.get("kind", "label")
    if kind not in KINDS:
        raise RuleError(f"rule kind {kind!r} is not one of {', '.join(KINDS)}")
    checked_when = {"kind": kind, "score": _number(when.get("score", 0.5), "when.score", 0.0, 1e9)}
    if kind in ("label", "count", "area"):
        label = when.get("label")
        if not isinstance(label, str) or not label:
            raise RuleError(f'a "{kind}" rule needs the label it looks for')
        if labels and label not in labels:
            raise RuleError(f"the model has no label {label!r} (it has: {', '.join(labels)})")
        checked_when["label"] = label
    if kind == "count":
        checked_when["count"] = int(_number(when.get("count", 1), "when.count", 1))
    actions = rule.get("actions") or []
    if not isinstance(actions, list):
        raise RuleError('"actions" must be a list')
    checked_actions = []
    for i, action in enumerate(actions):
        kind_of = action.get("type") if isinstance(action, dict) else None
        if kind_of not in ACTION_TYPES:
            raise RuleError(f"action {i + 1}: type must be one of {', '.join(ACTION_TYPES)}")
        field = ACTION_TYPES[kind_of]
        value = action.get(field)
        if not isinstance(value, str) or not value.strip():
            raise RuleError(f'action {i + 1} ({kind_of}) needs "{field}"')
        if kind_of == "webhook" and not value.startswith(("http://", "https://")):
            raise RuleError(f"action {i + 1}: a webhook URL starts with http:// or https://")
        checked_actions.append({"type": kind_of, field: value.strip()})
    return {
        "id": str(rule.get("id") or uuid.uuid4().hex[:8]),
        "when": checked_when,
        "hold_frames": int(_number(rule.get("hold_frames", 1), "hold_frames", 1, 100_000)),
        "hold_s": _number(rule.get("hold_s", 0), "hold_s", 0, 86_400),
        "cooldown_s": _number(rule.get("cooldown_s", 10), "cooldown_s", 0, 86_400),
        "actions": checked_actions,
    }


def parse_when(text: str) -> dict:
    """The CLI's ``'LABEL>=SCORE'`` (or a bare ``LABEL``: score 0.5) as a ``label`` condition."""
    label, sep, score = str(text).rpartition(">=")
    if not sep:
        label, score = text, "0.5"
    label = label.strip()
    try:
        value = float(score)
    except ValueError:
        raise RuleError(f"--when {text!r}: write LABEL>=SCORE, for example 'person>=0.8'") from None
    if not label:
        raise RuleError(f"--when {text!r}: the label is missing; write LABEL>=SCORE")
    return {"kind": "label", "label": label, "score": value}


def condition(when: dict, answer: dict) -> tuple[bool, str | None, float | None]:
    """(holds, the label it is about, the score it saw) for one answer."""
    kind, threshold = when["kind"], when["score"]
    top_label, top_score = answer.get("label"), float(answer.get("score") or 0.0)
    if kind == "label":
        score = top_score if top_label == when["label"] else None
        if score is None and isinstance(answer.get("tags"), list):  # tag models: any tag counts
            score = next(
                (float(t.get("score", 0)) for t in answer["tags"] if t.get("label") == when["label"]), None
            )
        return (score is not None and score >= threshold), when["label"], score
    if kind == "not_sure":
        unsure = top_score < threshold or answer.get("sure") is False
        return unsure, top_label, top_score
    if kind == "count":
        boxes = [
            b
            for b in answer.get("boxes") or []
            if b.get("label") == when["label"] and float(b.get("score", 0)) >= threshold
        ]
        best = max((float(b.get("score", 0)) for b in boxes), default=None)
        return len(boxes) >= when["count"], when["label"], best
    if kind == "area":  # segmentation: the share of the picture the class covers
        area = (answer.get("areas") or {}).get(when["label"])
        return (area is not None and float(area) >= threshold), when["label"], area
    value = answer.get("anomaly_score", answer.get("score"))
    value = None if value is None else float(value)
    return (value is not None and value >= threshold), top_label, value


class RuleState:
    """Where one rule stands on a pipeline: how long its condition has held, when it last fired."""

    def __init__(self, rule: dict):
        self.rule = rule
        self.frames = 0
        self.since: float | None = None
        self.last_fired: float | None = None

    def update(self, answer: dict, now: float) -> tuple[bool, str | None, float | None]:
        """Feed one answer at time ``now`` (seconds); (fires now, label, score)."""
        holds, label, score = condition(self.rule["when"], answer)
        if not holds:
            self.frames, self.since = 0, None
            return False, label, score
        self.frames += 1
        self.since = now if self.since is None else self.since
        if self.frames < self.rule["hold_frames"] or now - self.since < self.rule["hold_s"]:
            return False, label, score
        if self.last_fired is not None and now - self.last_fired < self.rule["cooldown_s"]:
            return False, label, score
        self.last_fired = now
        return True, label, score
