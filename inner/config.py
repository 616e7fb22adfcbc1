"""The inner's configuration: JSON read from an inherited fd, without `json`.

Facts: `json.loads` goes through json.decoder, which imports `re` (and with it enum,
functools, collections): about 3 ms of every sandbox's start here. The scanner json
itself uses, `_json.make_scanner`, is C and needs only a context with six attributes;
the supervisor writes the document with `json.dumps` (no NaN or Infinity), so that
scanner reads all of it.
"""

from __future__ import annotations

import _json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _Context:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = None
    memo: dict[str, str] = {}  # noqa: RUF012 - the scanner's own, per scan


def loads(text: str) -> Any:
    """One JSON document (surrounding whitespace allowed); ValueError when malformed."""
    start = len(text) - len(text.lstrip())
    try:
        value, end = _json.make_scanner(_Context())(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError(f"no JSON value at offset {start}") from None
    if text[end:].strip():
        raise ValueError(f"extra data at offset {end}")
    return value


def read(fd: int) -> dict[str, Any]:
    """The whole configuration from `fd`, which is closed after."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    config = loads(b"".join(chunks).decode("utf-8"))
    if not isinstance(config, dict):
        raise ValueError("the configuration is not a JSON object")
    return config
