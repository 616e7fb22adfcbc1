"""Plain data as JSON-ready values.

The policy's records are NamedTuples, not dataclasses: they are frozen plain data all
the same, and made on every start, where the dataclasses module and its decorators cost
this machine about 13 ms (benchmarks/start.py). `to_plain` is their recursive `asdict`.
"""

from __future__ import annotations

from typing import Any


def to_plain(value: Any) -> Any:
    """Records as dicts, tuples as lists, recursively; anything else as it is."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {name: to_plain(item) for name, item in value._asdict().items()}
    if isinstance(value, (tuple, list)):
        return [to_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    return value
