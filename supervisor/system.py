"""Which OS this process serves, chosen once, and what the OS-neutral modules need to
know of it, as data (as trio's `_subprocess_platform` chooses once).

A leaf: it imports nothing of the project, so the lowest module may ask it without an
arrow running up. What each OS *does* (launch, learn, check, plan) is its backend's,
chosen in `supervisor/backends.py`; what the shared modules only need to *know* of the
OS (which folders are its system's, whether a folder can be shown at another path) is
here, one record per OS, never an `if macOS` in each module. A test flips `SYSTEM` to
stand on the other OS.
"""

from __future__ import annotations

import sys
from typing import Literal, NamedTuple

System = Literal["linux", "macos"]

# Anything but a Mac is served as Linux: it is the only other backend, and its launch
# refuses what that kernel cannot do (fail closed).
SYSTEM: System = "macos" if sys.platform == "darwin" else "linux"


class Traits(NamedTuple):
    """What one OS's sandbox can and cannot do, as the shared modules need it.

    `shows_elsewhere`: a folder can be shown at another path (mounts): private caches.
    `parent_death_signal`: a child can ask to be signalled when its parent dies.
    `starts_in_parent_folder`: the sandboxed command starts in its parent's working
    directory (sandbox-exec), not in one the launch names (bwrap --chdir).
    `git_identity`: the person's git identity can be handed in through a settings file
    of lnk's own (GIT_CONFIG_GLOBAL, bound into the sandbox).
    `listings_answer_names`: one listing of a folder says whether a name is there (a
    case-sensitive file system); on macOS's case-insensitive one, only an lstat does."""

    name: System
    shows_elsewhere: bool
    parent_death_signal: bool
    starts_in_parent_folder: bool
    git_identity: bool
    listings_answer_names: bool


TRAITS: dict[System, Traits] = {
    "linux": Traits("linux", shows_elsewhere=True, parent_death_signal=True,
                    starts_in_parent_folder=False, git_identity=True,
                    listings_answer_names=True),
    "macos": Traits("macos", shows_elsewhere=False, parent_death_signal=False,
                    starts_in_parent_folder=True, git_identity=False,
                    listings_answer_names=False),
}


def traits() -> Traits:
    """Read at each call, so that a test's flip of `SYSTEM` holds everywhere."""
    return TRAITS[SYSTEM]


def is_macos() -> bool:
    return SYSTEM == "macos"


def system_of(platform: str | None) -> System:
    """This process's OS, or the one Python names `platform` ("darwin"), for a test or
    a description of another OS."""
    if platform is None:
        return SYSTEM
    return "macos" if platform == "darwin" else "linux"
