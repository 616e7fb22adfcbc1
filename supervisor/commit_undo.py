"""The check after a files.commit run: what the run left in a git directory that your git
would follow or carry out, removed or set aside (the class, and why, in commit_check.py).

Each step works on the host through descriptors opened without following a link
(host_walk.py), and compares with the record made before the run: what was yours then,
as it was, is left alone.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from .commit_git import (
    HELD,
    OPERATIONS,
    git_roots,
    linked_worktrees,
    listed_gitlinks,
    operation_names,
    run_git,
)
from .git_repository import GitDirs
from .grants import is_within
from .host_walk import (
    MAX_DEPTH,
    allow_owner,
    digest,
    lstat_at,
    open_below,
    open_folder,
    read_at,
    remove_tree,
    survey,
)


class Check:
    """One repository's check after the run; `said` collects what is told."""

    def __init__(self, state: dict[str, Any], written: list[str]) -> None:
        self.state = state
        self.written = written
        self.dirs = GitDirs(state["git_dir"], state["common_dir"], state["sha256"])
        self.said: list[str] = []

    def run(self) -> list[str]:
        for step in (self.links, self.shape, self.operations, self.worktrees,
                     self.gitlinks):
            try:
                step()
            except OSError as err:
                self.said.append(f"could not finish checking {self.dirs.git_dir} "
                                 f"({step.__name__}: {err}); read it before you run git "
                                 "there")
        return self.said

    def links(self) -> None:
        before: dict[str, list[Any]] = self.state["found"]
        held = frozenset(self.state["held"])
        for root in git_roots(self.dirs):
            found, unread = survey(root, held)
            for path, (kind, inode, target) in sorted(found.items()):
                if before.get(path) == [kind, inode, target]:
                    continue  # yours, as it was
                self.remove(path, kind, target, before.get(path))
            for number, path in enumerate(unread):
                where = self.set_aside(root, [os.path.basename(path)], f"unread-{number}",
                                       source=os.path.dirname(path))
                self.said.append(f"set aside {path}, a folder in the git directory more "
                                 f"than {MAX_DEPTH} deep or that could not be listed (git "
                                 f"makes neither), unread, as {where}")

    def remove(self, path: str, kind: str, target: str, yours: list[Any] | None) -> None:
        folder, name = os.path.split(path)
        fd = open_folder(folder)
        try:
            info = lstat_at(fd, name)
            if info is None or stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode):
                return
            os.unlink(name, dir_fd=fd)
            what = f"the link {path} (to {target})" if kind == "link" else \
                f"{path} (neither a file nor a folder)"
            if yours is not None and yours[0] == "link":
                os.symlink(yours[2], name, dir_fd=fd)
                self.said.append(f"put back your link {path} (to {yours[2]}), which the "
                                 "sandbox replaced")
                return
            self.said.append(f"removed {what}, which the sandbox left in the git "
                             "directory: git follows links there when it writes, reads or "
                             "deletes its own files")
        finally:
            os.close(fd)

    def shape(self) -> None:
        """HEAD, objects/ and refs/ back where a link was removed: without them git takes
        the folder for no repository and looks above it."""
        for git_dir, head in self.state["heads"].items():
            try:
                fd = open_folder(git_dir)
            except OSError:
                continue
            try:
                if lstat_at(fd, "HEAD") is None:
                    file = os.open("HEAD", os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                                   os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd)
                    try:
                        os.write(file, bytes.fromhex(head))
                    finally:
                        os.close(file)
                    self.said.append(f"put back {git_dir}/HEAD as it was before the run")
            finally:
                os.close(fd)
        fd = open_folder(self.dirs.common_dir)
        try:
            for name in ("objects", "refs"):
                if lstat_at(fd, name) is None:
                    os.mkdir(name, 0o755, dir_fd=fd)
        finally:
            os.close(fd)

    def set_aside(self, git_dir: str, names: list[str], slot: str, *,
                  source: str | None = None) -> str:
        """Move `names` of `source` (the git directory by default) into lnk-held/`slot`
        in `git_dir`, an older one there replaced; where they went."""
        fd = open_folder(git_dir)
        try:
            info = lstat_at(fd, HELD)
            if info is not None and not stat.S_ISDIR(info.st_mode):
                os.unlink(HELD, dir_fd=fd)  # a link or a file made there: never followed
                info = None
            if info is None:
                os.mkdir(HELD, 0o700, dir_fd=fd)
            held = open_below(fd, HELD)
            try:
                remove_tree(held, slot)
                os.mkdir(slot, 0o700, dir_fd=held)
                aside = open_below(held, slot)
                origin = fd if source is None else open_folder(source)
                try:
                    for name in names:
                        os.rename(name, name, src_dir_fd=origin, dst_dir_fd=aside)
                finally:
                    os.close(aside)
                    if origin != fd:
                        os.close(origin)
            finally:
                os.close(held)
        finally:
            os.close(fd)
        return os.path.join(git_dir, HELD, slot)

    def operations(self) -> None:
        admin = [os.path.join(self.dirs.common_dir, "worktrees", name)
                 for name in linked_worktrees(self.dirs.common_dir)]
        for git_dir in dict.fromkeys([self.dirs.git_dir, self.dirs.common_dir, *admin]):
            before = self.state["operations"].get(git_dir)
            restored = self.state["restored"].get(git_dir, [])
            try:
                fd = open_folder(git_dir)
            except OSError:
                continue
            try:
                now = {op: operation_names(fd, op) for op in OPERATIONS}
                digests = {op.name: digest(fd, names) for op, names in now.items() if names}
            finally:
                os.close(fd)
            for op, names in now.items():
                if not names or (before is not None and op.name not in restored and
                                 before.get(op.name) == digests[op.name]):
                    continue
                where = self.set_aside(git_dir, names, op.name)
                back = "the next run with files.commit puts it back; " if \
                    git_dir == self.dirs.git_dir else ""
                self.said.append(
                    f"set aside the {op.name} in progress the sandbox left in {git_dir}, "
                    f"as {where}: `{op.command}` {op.acts}, as you; {back}to take it over "
                    "yourself, read it, then move it back")

    def worktrees(self) -> None:
        before: dict[str, str | None] = self.state["worktrees"]
        for name, gitdir in sorted(linked_worktrees(self.dirs.common_dir).items()):
            if name in before and before[name] == gitdir:
                continue
            why = self.unlike_git(name, None if gitdir is None else bytes.fromhex(gitdir))
            if why is None:
                continue
            folder = os.path.join(self.dirs.common_dir, "worktrees")
            where = self.set_aside(self.dirs.common_dir, [name], f"worktree-{name}",
                                   source=folder)
            self.said.append(f"set aside the worktree {name} the sandbox registered in "
                             f"{folder}, as {where}: {why}, as `git worktree add` never "
                             "makes it, and `git worktree repair` or `remove` would act on "
                             "the folder it names")

    def unlike_git(self, name: str, gitdir: bytes | None) -> str | None:
        """Why a worktree registered by the run is not what `git worktree add` makes
        (its checkout in a folder the sandbox writes, naming it back; commondir ../..),
        or None."""
        admin = os.path.join(self.dirs.common_dir, "worktrees", name)
        if gitdir is None:
            return "it has no gitdir file"
        text = gitdir.decode("utf-8", "surrogateescape").strip()
        dot_git = os.path.normpath(os.path.join(admin, text))
        checkout = os.path.dirname(dot_git)
        if os.path.basename(dot_git) != ".git" or not any(
                is_within(checkout, folder) for folder in self.written):
            return f"its gitdir names {text}, outside the folders the sandbox writes"
        try:
            fd = open_folder(admin)
        except OSError:
            return "it is not a folder"
        try:
            common = (read_at(fd, "commondir") or b"").decode("utf-8", "replace").strip()
        finally:
            os.close(fd)
        if common != "../.." and os.path.realpath(os.path.join(admin, common)) != \
                os.path.realpath(self.dirs.common_dir):
            return f"its commondir names {common or 'nothing'}"
        try:
            fd = open_folder(checkout)
        except OSError:
            return f"its checkout {checkout} is not a folder reached without a link"
        try:
            back = read_at(fd, ".git") or b""
        finally:
            os.close(fd)
        named = back[len(b"gitdir: "):].split(b"\n", 1)[0].decode("utf-8", "replace")
        if not back.startswith(b"gitdir: ") or os.path.realpath(
                os.path.join(checkout, named)) != os.path.realpath(admin):
            return f"{dot_git} does not name it back"
        return None

    def gitlinks(self) -> None:
        self.readable_index()
        top = self.state["top"]
        before = set(self.state["gitlinks"])
        now = listed_gitlinks(self.dirs, top, self.written)
        added = [path for path in now if path not in before]
        if not added:
            return
        removed = run_git(self.dirs, top, self.written, "update-index", "--force-remove", "-z",
                       "--stdin",
                       data=b"".join(os.fsencode(p) + b"\0" for p in added))
        for path in added:
            aside = self.set_repository_aside(top, path)
            out = "took it out of the index" if removed is not None else \
                f"could not take it out of the index (`git rm --cached {path}`)"
            self.said.append(
                f"the sandbox added the submodule {path} in {top} (a gitlink in the "
                f"index; a git status at the top runs the settings of a repository in its "
                f"folder): {out}{aside}")

    def readable_index(self) -> None:
        """The index (and shared index) readable by you again: one the sandbox made
        unreadable would list no gitlink now, and run them once you make it readable."""
        fd = open_folder(self.dirs.git_dir)
        try:
            with os.scandir(fd) as entries:
                names = [e.name for e in entries if e.name == "index" or
                         e.name.startswith("sharedindex.")]
            for name in names:
                allow_owner(fd, name, folder=False)
        finally:
            os.close(fd)

    @staticmethod
    def set_repository_aside(top: str, path: str) -> str:
        """Rename `top/path/.git` to `.git.lnk-held` (a free name) where it is reached
        without a link; what was done, as the end of a sentence. A path git would never
        take (empty, `.`, `..` or `.git` in it) is left alone: git refuses it too."""
        parts = path.split("/")
        if not path or path.startswith("/") or any(
                part in ("", ".", "..") or part.lower() == ".git" for part in parts):
            return ""
        try:
            fd = open_folder(os.path.join(top, path))
        except OSError:
            return ""
        try:
            if lstat_at(fd, ".git") is None:
                return ""
            name = ".git.lnk-held"
            number = 0
            while lstat_at(fd, name) is not None:
                number += 1
                name = f".git.lnk-held.{number}"
            os.rename(".git", name, src_dir_fd=fd, dst_dir_fd=fd)
            return f", and set its repository aside as {os.path.join(top, path, name)}"
        except OSError as err:
            return f", and could not set its repository aside ({err})"
        finally:
            os.close(fd)
