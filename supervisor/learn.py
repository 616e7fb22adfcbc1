"""`lnk sandbox learn`: the programs a command ran, as `[commands]` lines to add.

learn runs the command once under the spec's other grants with every program open, and
writes nothing: the person adds the lines, so what a spec runs is still what they wrote.
It never offers a program the sandbox could have replaced (in a folder it writes, or a
temp folder), and marks interpreters, which run any code they are given.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass

from .events import Executed
from .grants import Snapshot, is_within
from .spec import toml_string

# macOS's, resolved as Seatbelt reports them: /tmp and /var are links into /private, and
# each user's temp folders are below /private/var/folders.
TEMP_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/run/user", "/private/tmp", "/private/var/tmp",
                "/private/var/folders")

_INTERPRETERS = re.compile(
    r"^(?:(?:ba|da|z|k|mk|c|tc|fi|yash|po)?sh|busybox|python[0-9.]*|pypy[0-9.]*|node(?:js)?"
    r"|deno|bun|perl[0-9.]*|ruby[0-9.]*|php[0-9.]*|lua(?:jit)?[0-9.]*|tclsh[0-9.]*|wish"
    r"|[gmn]?awk|Rscript|R|julia|guile[0-9.]*|osascript|java|jshell|scala|groovy|erl|escript"
    r"|elixir|ghci|runghc|swift|dotnet|pwsh|expect)$"
)


@dataclass(frozen=True)
class Learned:
    """One program to list: the entry to write, the file, and why it is marked."""

    entry: str
    path: str
    interpreter: bool


@dataclass(frozen=True)
class LeftOut:
    path: str
    reason: str


def written_folders(snapshot: Snapshot) -> tuple[str, ...]:
    """The folders whose programs learn never offers: the write grants, the private
    caches, the temp folders (what a refusal of a program there says: BUILT_INSIDE)."""
    return (*snapshot.written(), *(c.path for c in snapshot.caches), *TEMP_FOLDERS)


def _writable(path: str, snapshot: Snapshot) -> str | None:
    for grant in snapshot.grants:
        if grant.access == "write" and grant.target and is_within(path, grant.target):
            return (f"in a folder the sandbox writes ({grant.name}): the sandbox could "
                    "replace it")
    for folder in TEMP_FOLDERS:
        if is_within(path, folder):
            return f"in a temp folder ({folder}): anything could have put it there"
    return None


def _entry(item: Executed) -> str:
    """The program's name when PATH finds this same file by it, else its path."""
    assert item.path is not None
    name = os.path.basename(item.asked)
    found = shutil.which(name) if name else None
    if found and os.path.realpath(found) == os.path.realpath(item.path):
        return name
    return item.path


def summarize(seen: Iterable[Executed], snapshot: Snapshot) -> tuple[list[Learned],
                                                                       list[LeftOut]]:
    learned: dict[str, Learned] = {}
    left: dict[str, LeftOut] = {}
    interpreters = {item.path for item in seen if item.interpreter_of and item.path}
    for item in seen:
        if item.path is None or item.path in learned or item.path in left:
            continue
        reason = _writable(item.path, snapshot)
        if reason is not None:
            left[item.path] = LeftOut(item.path, reason)
            continue
        entry = _entry(item)
        marked = (item.path in interpreters
                  or bool(_INTERPRETERS.match(os.path.basename(item.path)))
                  or bool(_INTERPRETERS.match(os.path.basename(item.asked))))
        learned[item.path] = Learned(entry, item.path, marked)
    return sorted(learned.values(), key=lambda x: x.entry), sorted(left.values(),
                                                                   key=lambda x: x.path)


def _comment(text: str) -> str:
    """`text` fit for a TOML comment: on one line, with no control character (a command
    of several lines, or a file name holding a newline, would otherwise end the comment
    and leave the rest as bare TOML), and undecodable bytes written as \\xNN."""
    out = []
    for char in text:
        if "\udc80" <= char <= "\udcff":
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif char < " " or char == "\x7f":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(char, f"\\x{ord(char):02x}"))
        else:
            out.append(char)
    return "".join(out)


def render(learned: list[Learned], left: list[LeftOut], command: list[str]) -> str:
    """The `[commands]` table to put in the spec, as TOML that parses on its own and that
    `check` accepts: every name a TOML string, every other line a comment on one line."""
    import shlex

    lines = [_comment(f"# lnk sandbox learn: the programs `{shlex.join(command)}` ran."),
             "# Put this [commands] table in the spec (in place of one it has):",
             "[commands]", "programs = ["]
    kept: list[tuple[str, Learned]] = []
    for item in learned:
        quoted = toml_string(item.entry)
        if quoted is None:
            left = [*left, LeftOut(item.path, "its path is not UTF-8, which a spec cannot "
                                   "name")]
        else:
            kept.append((quoted, item))
    width = max((len(quoted) for quoted, _ in kept), default=0) + 5
    for quoted, item in kept:
        text = f"    {quoted},"
        if item.interpreter:
            text = text.ljust(width) + "  # an interpreter: it runs any code it is given"
        lines.append(text)
    lines.append("]")
    lines += [_comment(f"# left out {out.path}: {out.reason}") for out in left]
    from .terminal import shown_lines

    # What `shown` escapes in a TOML string (U+009B, U+202E) it writes as a \u escape of
    # four hex digits, TOML's own for the same character: the table means what it says.
    return shown_lines(lines)
