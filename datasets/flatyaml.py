"""A reader for the flat YAML subset of dataset files (Ultralytics ``data.yaml``).

Why not PyYAML: it is not a dependency of ModelDesk (only some test tools pull it in), and a
``data.yaml`` only ever holds top-level keys whose values are a scalar, a list (``[a, b]`` or ``- a``
lines) or a one-level mapping (``{0: a}`` or ``  0: a`` lines). This reader reads exactly that,
builds nothing from anchors, tags or aliases, and is bounded by the file's size, which the caller
limits.
"""

from __future__ import annotations

import re

MAX_BYTES = 1 << 20  # a data.yaml is a few hundred bytes; 10,000 class names fit in well under 1 MiB

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:(.*)$")


def unquote(value: str) -> str:
    """``'a'`` / ``"a"`` -> ``a``; other text trimmed."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _strip_comment(text: str) -> str:
    quote = None
    for i, char in enumerate(text):
        if char in "'\"":
            quote = None if quote == char else (quote or char)
        elif char == "#" and quote is None and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip()
    return text.rstrip()


def _split_flow(body: str) -> list[str]:
    """``a, 'b, c', d`` -> ``['a', "'b, c'", 'd']`` (commas inside quotes kept)."""
    parts, current, quote = [], "", None
    for char in body:
        if char in "'\"":
            quote = None if quote == char else (quote or char)
        if char == "," and quote is None:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _flow(value: str):
    inner = value[1:-1]
    if value.startswith("["):
        return [unquote(v) for v in _split_flow(inner)]
    pairs = {}
    for part in _split_flow(inner):
        if ":" not in part:
            raise ValueError(f"'{part[:40]}' in a {{...}} mapping has no ':'")
        key, val = part.split(":", 1)
        pairs[unquote(key)] = unquote(val)
    return pairs


def parse(text: str) -> dict:
    """The top-level keys of a flat YAML document; ValueError for what this subset does not read."""
    if len(text) > MAX_BYTES:
        raise ValueError(f"it is larger than {MAX_BYTES:,} bytes")
    lines = [_strip_comment(line) for line in text.splitlines()]
    out: dict = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.strip() or line.strip() == "---":
            continue
        match = _KEY.match(line)
        if not match:
            raise ValueError(f"line {index} is not 'key: value': {line.strip()[:60]!r}")
        key, rest = match.group(1), match.group(2).strip()
        if rest[:1] in ("[", "{"):
            closing = "]" if rest[0] == "[" else "}"
            while not rest.endswith(closing) and index < len(lines):
                rest += " " + lines[index].strip()
                index += 1
            if not rest.endswith(closing):
                raise ValueError(f"{key}: the {rest[0]} is never closed")
            out[key] = _flow(rest)
            continue
        if rest:
            out[key] = unquote(rest)
            continue
        listed, mapped = [], {}
        while index < len(lines) and (not lines[index].strip() or lines[index][:1].isspace()):
            item = lines[index].strip()
            index += 1
            if not item:
                continue
            if item == "-" or item.startswith("- "):
                listed.append(unquote(item[1:]))
            elif ":" in item:
                name, value = item.split(":", 1)
                mapped[unquote(name)] = unquote(value)
            else:
                raise ValueError(f"line {index} under {key}: is neither '- item' nor 'key: value'")
        out[key] = mapped if mapped else listed if listed else ""
    return out
