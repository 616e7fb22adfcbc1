"""git's files for one Linux run (gitsupport.py says what and why): the identity git
reads inside and the folder git's trace goes to, then what that trace says after the
run. A placeholder needs nothing of git: each one in a work tree is an empty folder,
which git lists in no status (dotfiles.Protected.held_as).

The identity (a folder) is named by its content in `$LNK_HOME/git`, made once and bound
read-only into every run that needs it (it rarely changes; a start should not pay for
writing it again). The trace belongs to one
run: `$LNK_HOME/run/git-PID-.../trace`, made only where a written repository's .git is
read-only, and removed after the run (the next start removes one a killed supervisor
left). All of `$LNK_HOME` is hidden from every sandbox: these are
seen only where they are bound, under the inner's `/run/lnk-sandbox`.
"""

from __future__ import annotations

import json
import os
import stat
from typing import TYPE_CHECKING, NamedTuple

from ..digests import sha256
from ..events import say
from ..git_repository import is_git_directory
from ..gitsupport import failed_writers, identity_files, identity_for
from ..grants import Grant
from ..state import ensure_private_dir, private_folder, remove_tree
from .plan import MountOp, inner_parent_for

if TYPE_CHECKING:
    from ..view import View


class GitRun(NamedTuple):
    folder: str | None  # the run's own, when it needs one
    ops: tuple[MountOp, ...]
    env: dict[str, str]
    watched: tuple[Grant, ...]  # write grants whose read-only .git a failed git names
    trace: str | None

    @staticmethod
    def prepare(view: View, *, relative: bool = False) -> GitRun | None:
        """The files and mounts this run needs, made now, before its plan (which takes
        `ops` in: plan_for); None when it needs none. `relative`: the identity's included
        files named from its own folder, which a run without mounts (direct.py) shows at
        its own path, not under /run/lnk-sandbox."""
        snapshot = view.snapshot
        # A `.git` folder that is no repository (another run's placeholder) has no
        # command to follow.
        tops = [g for g in snapshot.grants if g.access == "write" and g.target
                and g.is_dir and not g.dot_files_writable
                and is_git_directory(os.path.join(g.target, ".git"))]
        identity = identity_for(snapshot)
        settings = snapshot.settings
        traced = not any(name.startswith("GIT_TRACE2") for name in
                         (*settings.env_keep, *(n for n, _ in settings.env_assign)))
        watched = tuple(g for g in tops if not g.commit) if traced else ()
        if not (identity or watched):
            return None
        inside = f"{inner_parent_for(snapshot)}/git"
        ops: list[MountOp] = []
        env: dict[str, str] = {}
        if identity is not None:
            files = identity_files(identity, "" if relative else inside)
            ops.append(MountOp("ro-bind", inside, _identity_folder(snapshot.lnk_home, files),
                               "your git identity (user.name and user.email), and nothing "
                               "else of your git settings"))
            env["GIT_CONFIG_GLOBAL"] = f"{inside}/config"
        if not watched:
            return GitRun(None, tuple(ops), env, (), None)
        from ..proxy.runfolder import remove_stale

        with private_folder(snapshot.lnk_home, "run") as base:
            remove_stale(base, "git")
            folder = os.path.realpath(os.path.join(
                base.path, base.make_unique_folder(f"git-{os.getpid()}-")))
        try:
            return _made(folder, inside, ops, env, watched=watched)
        except BaseException:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            raise

    def finish(self) -> None:
        """Say once, per repository, where git failed to write a .git the spec keeps
        read-only, and the key that opens committing; then remove the folder."""
        try:
            if self.trace is None:
                return
            said: set[str] = set()
            for failed in failed_writers(self.trace):
                grant = next((g for g in self.watched if g.target == failed.worktree), None)
                if grant is None or failed.worktree in said:
                    continue
                said.add(failed.worktree)
                say(f"git {failed.command} failed in {failed.worktree}: its .git is "
                    "read-only in this sandbox, which reads the repository but does not "
                    f"commit. files.commit = [\"{grant.name}\"] in the spec lets it commit, "
                    "with what git runs still read-only (README: Committing)")
        finally:
            self.close()

    def close(self) -> None:
        if self.folder is not None:
            remove_tree(self.folder)


def _identity_folder(lnk_home: str, files: dict[str, str]) -> str:
    """The folder holding these identity files, made once: named by their content, so a
    changed identity is a new folder and one in use is never rewritten."""
    digest = sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]
    base = ensure_private_dir(lnk_home, "git")
    folder = os.path.join(base, f"identity-{digest}")
    if _is_folder(folder):
        return _used(folder)
    _prune(base)
    import shutil
    import tempfile

    made = tempfile.mkdtemp(prefix="identity-new-", dir=base)
    try:
        os.chmod(made, 0o755)  # run by root, the sandbox reads it as a uid of its own
        for name, text in files.items():
            _write(os.path.join(made, name), text.encode())
        os.rename(made, folder)
    except OSError:
        shutil.rmtree(made, ignore_errors=True)
        if not _is_folder(folder):  # another start made it meanwhile, or it failed
            raise
    return folder


# What $LNK_HOME/git keeps unused for this long is removed when something new is stored:
# an old identity.
UNUSED_DAYS = 30


def _used(path: str) -> str:
    """`path`, its time set to now: in use, so never pruned while a person works."""
    try:
        os.utime(path)
    except OSError:
        pass
    return path


def _prune(base: str) -> None:
    """Remove what nothing used for UNUSED_DAYS (a run using it holds its own mount)."""
    import time

    from ..state import remove_tree

    limit = time.time() - UNUSED_DAYS * 86400
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= limit:
                continue
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue


def _made(folder: str, inside: str, ops: list[MountOp], env: dict[str, str], *,
          watched: tuple[Grant, ...]) -> GitRun:
    trace = os.path.join(folder, "trace")
    os.mkdir(trace)
    os.chmod(trace, 0o777)  # run by root, the sandbox writes as a uid of its own
    ops.append(MountOp("bind", f"{inside}-trace", trace, "git's trace of its commands, read "
                       "after the run to say what a read-only .git refused"))
    env["GIT_TRACE2_EVENT"] = f"{inside}-trace"
    env["GIT_TRACE2_EVENT_BRIEF"] = "1"
    return GitRun(folder, tuple(ops), env, watched, trace)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _is_folder(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
