"""JSON read with limits, for every JSON that comes from a file or a request.

Python's ``json`` module turns a document nested 100,000 deep into a ``RecursionError`` and a number
of 4,301 digits or more into a bare ``ValueError`` from ``int``; a number of 5,000 digits in a COCO
file, a deep ``settings.json`` or a request body must instead get one clear message. :func:`loads`
refuses both before anything else is built from the document and raises :class:`JSONLimitError`, a
``ValueError`` whose message says what is wrong (callers add the file name).

No import from the rest of ModelDesk: ``datasets``, ``deploy`` (and so a deploy bundle) and ``app``
all use it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MAX_DEPTH = 64
MAX_NUMBER_CHARS = 100  # a float64 needs at most 24 characters; an int64 20


class JSONLimitError(ValueError):
    """A JSON document that breaks a limit (too deep, a number too long) or is not JSON."""


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise JSONLimitError(
            f"it holds a number of {len(text):,} digits (at most {MAX_NUMBER_CHARS} are read)"
        )
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise JSONLimitError(
            f"it holds a number of {len(text):,} characters (at most {MAX_NUMBER_CHARS} are read)"
        )
    return float(text)


def _parse_constant(name: str) -> float:
    raise JSONLimitError(f"it holds {name}, which is not a JSON number")


def _depth_within(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests at most ``max_depth`` containers deep (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return True


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``text`` as JSON, refusing documents nested deeper than ``max_depth`` and long numbers.

    Raises :class:`JSONLimitError` (a ``ValueError``) with a message that says what is wrong, for
    malformed JSON too.
    """
    try:
        value = json.loads(
            text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant
        )
    except JSONLimitError:
        raise
    except RecursionError:
        raise JSONLimitError(f"it is nested too deep (at most {max_depth} levels are read)") from None
    except UnicodeDecodeError as error:
        raise JSONLimitError(f"it is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise JSONLimitError(f"it is not valid JSON ({error.msg}, line {error.lineno})") from None
    if not _depth_within(value, max_depth):
        raise JSONLimitError(f"it is nested too deep (at most {max_depth} levels are read)")
    return value


def load_file(path: str | Path, *, max_depth: int = MAX_DEPTH, max_bytes: int | None = None) -> Any:
    """Read and parse the JSON file at ``path`` with :func:`loads`' limits.

    ``max_bytes`` refuses a larger file before reading it. The error message names the file.
    """
    path = Path(path)
    if max_bytes is not None and path.stat().st_size > max_bytes:
        raise JSONLimitError(f"{path.name}: it is larger than {max_bytes:,} bytes")
    try:
        return loads(path.read_bytes(), max_depth=max_depth)
    except JSONLimitError as error:
        raise JSONLimitError(f"{path.name}: {error}") from None
