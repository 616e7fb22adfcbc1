"""What readers of the person's settings find for a home, kept once per start.

A start asks for the same home's settings when resolving the grants and again for each
written folder's analysis, milliseconds apart; within home_places.found_once each is
read once, outside it (a harness making many snapshots) every call reads again. A leaf
module: the readers (fish_variables, person_settings, settings_named, hook_text) stand
below home_places, which opens and clears the store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

# By kind, then by home; None outside home_places.found_once.
_store: dict[str, dict[str, Any]] | None = None

_Found = TypeVar("_Found")


def opened() -> dict[str, dict[str, Any]] | None:
    """The store now in force (None outside found_once)."""
    return _store


def use(store: dict[str, dict[str, Any]] | None) -> None:
    """Make `store` the one in force (home_places.found_once enters and leaves)."""
    global _store
    _store = store


def store_for(kind: str) -> dict[str, Any] | None:
    """Where what `kind` finds for a home is kept within found_once (None outside it:
    every call looks again), cleared by home_places.look_again."""
    return None if _store is None else _store.setdefault(kind, {})


def found_once_for(kind: str, home: str, read: Callable[[], _Found]) -> _Found:
    """What `read` finds for `home`, read once within found_once and at every call
    outside it."""
    store = store_for(kind)
    if store is None:
        return read()
    if home not in store:
        store[home] = read()
    known: _Found = store[home]
    return known
