"""The name rule: what the credentials table does not list, found by its name where tools
keep their files in home.

The table (runs_as_you.CREDENTIALS) names the places of the tools it knows, each checked
in the tool's own documentation; a tool it does not know still names its secret for what
it is (`token`, `credentials`, `auth.json`, `cookies`, `id_ed25519`) and its history for
that (`.irb_history`, `.rediscli_history`). So, at launch, names are matched where tools
keep their files, and nowhere else:

- home's own dot files and dot folders: a tool's, where a person's own files have no dot;
- what is in `~/.config`, `~/.local/share` and `~/.local/state`, and in each tool's
  folder there (`~/.config/hub`, `~/.config/TOOL/token`), where XDG tools keep theirs.

A match is hidden as a table entry is (an empty folder or file), unless the spec names
it: a grant of it, or of a folder inside it. A project's files are never looked at, nor
anything deeper: a certificate a build needs (`certs/ca.pem`) stays as it is.

Why the rule cannot hide what a tool needs to run: every pattern names what is a secret
or a record of what was typed, never a program, a library or a tool's settings; a tool
whose token is hidden inside a sandbox runs as one never signed in, and a REPL whose
history is hidden starts with none. The patterns hold no bare `.pem` (a CA a tool
trusts is one), only key files; `auth.json`, not `config.json` (settings). Where a tool
does need its login inside, the spec names the file, as for a table entry, and
`lnk sandbox check --spec` lists it.

Plain data and a bounded listing; the plan (linux/plan.py) and check use it. A folder
the listing would look into once its bound is reached is not looked at, so it is
hidden whole (`unlooked`), and the launch says so: a secret in it cannot be told from
the rest, and a heavy home must not be where the rule stops holding.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

# (pattern, why). Matched on the name alone, any letter case.
PATTERNS: tuple[tuple[str, str], ...] = (
    (r"history|histfile|_hist$|^\.lesshst$|viminfo|\.shada$",
     "a history: commands and queries as typed, tokens in them"),
    (r"token|credential|secret|passw|authinfo|(^|[._-])auth\.json$|^\.netrc",
     "a token, password or credential store, by its name"),
    (r"cookie|session", "cookies and sessions: signed-in state"),
    (r"^id_(rsa|dsa|ecdsa|ed25519)|privkey|(^|[._-])(private|priv)?keys?\.pem$|\.key$"
     r"|\.(p12|pfx|jks|keystore|kdbx)$",
     "a private key, key store or password database"),
    (r"^\.?(xauthority|iceauthority)$", "an X11 or ICE authority cookie"),
)
_MATCH = re.compile("|".join(f"(?:{pattern})" for pattern, _ in PATTERNS), re.IGNORECASE)

# Where tools keep their files: listed themselves, and each folder in them once more.
XDG_PLACES = ("~/.config", "~/.local/share", "~/.local/state")
MAX_FOLDERS = 2048  # a home with more tool folders than this has the rest hidden whole


class Found(NamedTuple):
    """A place the name rule matched: its path, and whether it is a folder. `unlooked`:
    a folder the listing did not reach (its bound), hidden whole for not being looked
    at, not for its name."""

    path: str
    is_dir: bool
    unlooked: bool = False


def matches(name: str) -> bool:
    """Whether a file or folder name is one the rule hides."""
    return bool(_MATCH.search(name))


def _within(path: str, folder: str) -> bool:
    return folder in (path, "/") or path.startswith(folder + "/")


def find(home: str, skip: tuple[str, ...] = (), *,
         max_folders: int = MAX_FOLDERS) -> tuple[Found, ...]:
    """The places in `home` (resolved) whose names the rule matches, but those under
    `skip` (hidden already); no link followed, at most `max_folders` folders listed."""
    found: list[Found] = []
    listed = 0

    def listing(folder: str) -> list[os.DirEntry[str]]:
        nonlocal listed
        if any(_within(folder, s) for s in skip):
            return []
        if listed >= max_folders:
            if folder != home and os.path.isdir(folder) and not os.path.islink(folder):
                found.append(Found(folder, True, unlooked=True))
            return []
        listed += 1
        try:
            with os.scandir(folder) as entries:
                return sorted(entries, key=lambda entry: entry.name)
        except OSError:
            return []

    def take(entry: os.DirEntry[str]) -> bool:
        """Note a match; whether the entry is a folder to look into (a real one)."""
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            return False
        if matches(entry.name) and not any(_within(entry.path, s) for s in skip):
            found.append(Found(entry.path, is_dir))
            return False  # hidden whole: nothing in it to look at
        return is_dir

    for entry in listing(home):
        if entry.name.startswith("."):
            take(entry)
    for place in XDG_PLACES:
        folder = os.path.join(home, place[2:])
        for entry in listing(folder):
            if take(entry):
                for inner in listing(entry.path):
                    take(inner)
    return tuple(found)
