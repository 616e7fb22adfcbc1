"""git inside a sandbox: the person's identity, and what its own trace says after a run.
Policy and text only; linux/gitrun.py puts the files in place.

Identity. A commit needs a name and an email, which live in the person's global git
settings, and those settings also name programs git runs (hooks, fsmonitor, filters,
credential helpers, aliases, pagers). Where the sandbox does not see those files, git
inside reads a global settings file of lnk-sandbox's own instead (GIT_CONFIG_GLOBAL),
holding `user.name` and `user.email` and nothing else: the identity the person would
commit with, never their programs. Their conditional includes (`includeIf`, a work
identity for ~/work/) are kept as conditions, each including a file of the identity it
names alone, so git inside picks the same identity git outside would; a repository's own
user.* still wins, as it does outside (repository settings come after global ones).
`GIT_CONFIG_GLOBAL` exists from git 2.32; an older git reads no global settings inside.

Trace. To say after a run that git failed to write a repository whose `.git` the spec
keeps read-only, git inside writes its own structured trace (trace2's event format, one
JSON object a line, one file per git process) where lnk-sandbox reads it after the run:
what git itself reports (the command, the repository, the exit code), not text scraped
from the command's output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from .git_config import parse_git_config, person_git_configs
from .host_walk import read_small

if TYPE_CHECKING:
    from .grants import Snapshot

MAX_INCLUDES = 10  # git's own limit of nested includes
MAX_TRACE_FILES = 10_000
MAX_TRACE_BYTES = 1 << 20  # of each git process's trace: the events wanted come first

# git commands that write the repository (its index, objects, refs or HEAD): one that
# fails where .git is read-only failed for that, whatever else it says.
WRITERS = frozenset((
    "add", "am", "apply", "branch", "checkout", "cherry-pick", "clean", "commit",
    "commit-tree", "fetch", "gc", "merge", "mv", "notes", "pull", "read-tree", "rebase",
    "reset", "restore", "revert", "rm", "stash", "switch", "tag", "update-index",
    "update-ref", "worktree", "write-tree",
))


class Identity(NamedTuple):
    """user.name and user.email as the person's global settings give them; `included`:
    (condition, name, email) of each conditional include that sets either."""

    name: str | None
    email: str | None
    included: tuple[tuple[str, str | None, str | None], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.name or self.email or self.included)

    def shown(self) -> str:
        """As `describe` says it: `Ann <ann@example.org>; <ann@work.example> where
        includeIf 'gitdir:~/work/'`."""
        def one(name: str | None, email: str | None) -> str:
            return " ".join(x for x in (name, f"<{email}>" if email else None) if x)

        parts = [one(self.name, self.email)] if self.name or self.email else []
        parts += [f"{one(name, email)} where includeIf {condition!r}"
                  for condition, name, email in self.included]
        return "; ".join(parts)


def _entries(path: str, home: str, depth: int = 0) -> Iterator[tuple[str, str | None, str]]:
    """(key, value, file) of a settings file, unconditional includes followed in place."""
    data = read_small(path, 1 << 20)
    if data is None or depth > MAX_INCLUDES:
        return
    for key, value in parse_git_config(data.decode("utf-8", "replace")):
        if key == "include.path" and value:
            included = _expand_path(value, os.path.dirname(path), home)
            if included:
                yield from _entries(included, home, depth + 1)
            continue
        yield key, value, path


def _expand_path(value: str, relative_to: str, home: str) -> str | None:
    value = value.removeprefix(":(optional)")
    if value == "~" or value.startswith("~/"):
        value = home + value[1:]
    elif value.startswith("~"):
        return None
    return os.path.normpath(os.path.join(relative_to, value)) if value else None


def _condition(condition: str, folder: str) -> str:
    """An includeIf condition made independent of the file it was in: `gitdir:./x` is
    relative to that file's folder, and the copy lives elsewhere."""
    for kind in ("gitdir:", "gitdir/i:"):
        if condition.startswith(kind + "./"):
            return kind + os.path.join(folder, condition[len(kind) + 2:])
    return condition


def read_identity(home: str) -> Identity:
    """The person's git identity from their global settings (the system's and theirs, in
    git's order: a later value wins), read without running git."""
    name = email = None
    included: list[tuple[str, str | None, str | None]] = []
    for path in person_git_configs(home)[1:]:  # the system's is read inside anyway
        for key, value, found_in in _entries(path, home):
            if key == "user.name":
                name = value
            elif key == "user.email":
                email = value
            elif key.startswith("includeif.") and key.endswith(".path") and value:
                target = _expand_path(value, os.path.dirname(found_in), home)
                if target is None:
                    continue
                sub = read_identity_file(target, home)
                if sub.name or sub.email:
                    condition = _condition(key[len("includeif."):-len(".path")],
                                           os.path.dirname(found_in))
                    included.append((condition, sub.name, sub.email))
    return Identity(name, email, tuple(included))


def read_identity_file(path: str, home: str) -> Identity:
    name = email = None
    for key, value, _ in _entries(path, home):
        if key == "user.name":
            name = value
        elif key == "user.email":
            email = value
    return Identity(name, email)


def _quoted(value: str) -> str:
    """A git config value, quoted: backslash, quote and newline escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _user(name: str | None, email: str | None) -> list[str]:
    lines = ["[user]"]
    if name is not None:
        lines.append(f"\tname = {_quoted(name)}")
    if email is not None:
        lines.append(f"\temail = {_quoted(email)}")
    return lines


def identity_files(identity: Identity, folder: str) -> dict[str, str]:
    """The global settings file git inside reads (`config`) and the files it includes,
    as they will be seen at `folder` inside: file name -> text."""
    head = ["# lnk-sandbox: your git identity, and nothing else of your git settings"]
    files: dict[str, str] = {}
    lines = [*head, *(_user(identity.name, identity.email)
                      if identity.name or identity.email else [])]
    for number, (condition, name, email) in enumerate(identity.included, start=1):
        include = f"include-{number}"
        files[include] = "\n".join([*head, *_user(name, email)]) + "\n"
        lines += [f"[includeIf {_quoted(condition)}]",
                  f"\tpath = {_quoted(os.path.join(folder, include))}"]
    files["config"] = "\n".join(lines) + "\n"
    return files


class Failed(NamedTuple):
    """A git command that writes the repository and failed in `worktree`."""

    command: str
    worktree: str
    code: int


def failed_writers(folder: str) -> list[Failed]:
    """The git commands that write a repository and failed, from the trace files git
    wrote in `folder` (each opened as a regular file without following a link: the
    sandbox wrote them)."""
    try:
        names = sorted(os.listdir(folder))[:MAX_TRACE_FILES]
    except OSError:
        return []
    found = []
    for name in names:
        data = _read_trace(os.path.join(folder, name))
        if data is None:
            continue
        command = worktree = None
        code = 0
        for line in data.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            kind = event.get("event")
            if kind == "cmd_name" and command is None:
                command = event.get("name")
            elif kind == "def_repo" and event.get("repo") == 1 and worktree is None:
                worktree = event.get("worktree")
            elif kind == "exit":
                value = event.get("code")
                code = value if isinstance(value, int) else 0
        if command in WRITERS and isinstance(worktree, str) and code:
            assert isinstance(command, str)
            found.append(Failed(command, worktree, code))
    return found


def _read_trace(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, MAX_TRACE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def identity_for(snapshot: Snapshot) -> Identity | None:
    """The identity git inside is given (see the module's docstring), or None: where the
    sandbox sees the person's global settings itself (git reads them there), where the
    spec's [env] names GIT_CONFIG_GLOBAL, on macOS (not done there yet), or where the
    person has none."""
    from .grants import is_within, seen
    from .policy import LINUX_SYSTEM_FOLDERS
    from .system import traits

    if not traits().git_identity or "GIT_CONFIG_GLOBAL" in snapshot.settings.env_keep or any(
            name == "GIT_CONFIG_GLOBAL" for name, _ in snapshot.settings.env_assign):
        return None
    configs = person_git_configs(snapshot.home)[1:]  # the system's is read inside anyway
    # Judged at the path git opens, in home resolved (the grants' targets are): under a
    # read grant of home, ~/.gitconfig is a dot entry hidden by pattern, whatever it is.
    home, real = os.path.normpath(snapshot.home), os.path.realpath(snapshot.home)
    configs = [real + path[len(home):] if is_within(path, home) else path
               for path in configs]
    if any(seen(path, snapshot.grants, LINUX_SYSTEM_FOLDERS, snapshot.patterns)
           for path in configs):
        return None
    identity = read_identity(snapshot.home)
    return identity or None
