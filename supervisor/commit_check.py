"""What a run with files.commit leaves in a git directory, checked before your git reads it.

files.commit lets a sandbox write its repository's git directory, but for what git reads
to decide what to run (dotfiles.GIT_METADATA, held read-only for the run). What stays
writable is read afterwards by *your* git, by name, and two kinds of it act (read in
git's sources: builtin/commit.c, refs/files-backend.c, builtin/gc.c, worktree.c,
builtin/worktree.c, dir.c, sequencer.c, merge.c, builtin/rebase.c, builtin/am.c,
builtin/bisect.c, read-cache.c, submodule.c):

- Links. git opens its own files there by name and follows a link: `git commit` writes
  COMMIT_EDITMSG through one (your file gets the sandbox's text) and reads SQUASH_MSG or
  MERGE_MSG through one (a hidden file becomes a commit message the next sandbox reads);
  a reflog is appended to through one; `git gc`, which `git commit` runs itself (gc
  --auto), prunes a worktrees/NAME without a gitdir file with remove_dir_recursively,
  which opens a link to a folder and empties it. git itself makes no link in a git
  directory (but a HEAD of the long-deprecated core.preferSymlinkRefs), nor a pipe,
  socket or device, where your git would block.
- State a later command carries out. `git rebase --continue` runs rebase-merge's todo
  (an exec line is a shell command) and the merge strategy it names (`git merge-NAME`,
  found by path from the checkout: a program in the project); `git cherry-pick
  --continue` the strategy in sequencer/opts; `git am --continue` applies rebase-apply's
  patches with the options stored beside them; `git bisect reset` passes BISECT_START to
  git checkout as an argument, where an option reads any file; `git worktree repair`
  writes a .git file into the folder worktrees/NAME/gitdir names, `git worktree remove`
  deletes it; `git status` at the top runs `git status`, with that repository's
  settings, in every folder a gitlink of the index names that holds a repository.

So, once the sandbox has ended and before lnk-sandbox returns, each such git directory is
walked on the host, one component at a time, never through a link (openat with
O_NOFOLLOW), and: every link, pipe, socket or device the run left is removed (one you had
before, the same inode and target, stays; one you had and the run replaced is put back);
a rebase, am, cherry-pick sequence or bisect the run started or changed is set aside in
`lnk-held/` in that git directory, where git never looks, and the next run with
files.commit puts it back for the sandbox to go on with; a worktree the run registered
that `git worktree add` would not have (its checkout outside the folders the sandbox
writes, or not naming it back) is set aside too; a gitlink the run added to the index
is taken out again (by git itself, with your settings' programs and hooks off) and the
repository in its folder set aside, since git lists the index in ways a second reader
can miss (a padded entry, a split or threaded index). A run whose supervisor was killed
leaves its record in `$LNK_HOME/commit-checks`, and the next start does the check.

What stays as the run left it is content: commits, refs, reflogs, the index's entries, a
merge's or a single cherry-pick's one step (MERGE_HEAD, CHERRY_PICK_HEAD, their
messages), which decide what a commit holds, as the files the sandbox writes do.

Not closed, and said before a spec with files.commit is allowed: while the run lasts,
your git in that repository works on what the sandbox is writing.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from .commit_git import HELD, OPERATIONS, git_roots, linked_worktrees, operation_names
from .dotfiles import GIT_DIR_METADATA, GIT_METADATA, WORKTREE_GITDIR
from .errors import SandboxError
from .events import say
from .git_repository import GitDirs, git_dirs, index_gitlinks
from .grants import Snapshot
from .host_walk import (
    digest,
    lstat_at,
    open_below,
    open_folder,
    read_at,
    remove_tree,
    survey,
)

PENDING = "commit-checks"  # in $LNK_HOME: the record of each run still to be checked



# -- the state before a run ----------------------------------------------------------------


def _held(dirs: GitDirs, worktrees: list[str]) -> list[str]:
    """What the survey never walks: what the run holds read-only in the git directories,
    and the lnk-held folders, which git never reads (what is put back from one is
    walked where it is put back)."""
    held = [os.path.join(dirs.common_dir, name) for name, _, _ in GIT_METADATA]
    for folder in dict.fromkeys((dirs.git_dir, dirs.common_dir, *worktrees)):
        held.append(os.path.join(folder, HELD))
    for folder in dict.fromkeys((dirs.git_dir, dirs.common_dir)):
        held += [os.path.join(folder, name) for name, _, _, _ in GIT_DIR_METADATA]
    if dirs.git_dir != dirs.common_dir:
        held.append(os.path.join(dirs.git_dir, WORKTREE_GITDIR[0]))
    for folder in worktrees:
        held += [os.path.join(folder, name) for name, _, _, _ in GIT_DIR_METADATA]
        held.append(os.path.join(folder, WORKTREE_GITDIR[0]))
    return held


def _operations(git_dir: str) -> dict[str, str]:
    """The operations in progress in a git directory, each with its digest."""
    try:
        fd = open_folder(git_dir)
    except OSError:
        return {}
    try:
        return {op.name: digest(fd, names) for op in OPERATIONS
                if (names := operation_names(fd, op))}
    finally:
        os.close(fd)


def _restore(git_dir: str) -> list[str]:
    """Put back the operations a run set aside in `git_dir`, where none of theirs is
    in progress now (yours wins); the names of those put back. Only an operation's own
    names come back, so nothing set aside can take the place of another file."""
    restored: list[str] = []
    try:
        fd = open_folder(git_dir)
    except OSError:
        return restored
    try:
        try:
            held = open_below(fd, HELD)
        except OSError:
            return restored
        try:
            for op in OPERATIONS:
                if lstat_at(held, op.name) is None or operation_names(fd, op):
                    continue
                try:
                    aside = open_below(held, op.name)
                except OSError:
                    continue
                try:
                    for name in operation_names(aside, op):
                        os.rename(name, name, src_dir_fd=aside, dst_dir_fd=fd)
                finally:
                    os.close(aside)
                remove_tree(held, op.name)
                restored.append(op.name)
        finally:
            os.close(held)
    except OSError:
        pass
    finally:
        os.close(fd)
    return restored


def _state(top: str) -> dict[str, Any] | None:
    """The repository at `top` before the run (JSON-ready), operations put back first."""
    dirs = git_dirs(top)
    if dirs is None:
        return None
    restored = _restore(dirs.git_dir)
    for name in restored:
        say(f"put back the {name} in progress set aside in {dirs.git_dir}/{HELD} after an "
            "earlier run, for this one to go on with")
    worktrees = linked_worktrees(dirs.common_dir)
    admin = [os.path.join(dirs.common_dir, "worktrees", name) for name in worktrees]
    held = _held(dirs, admin)
    found: dict[str, list[Any]] = {}
    for root in git_roots(dirs):
        found.update(survey(root, frozenset(held))[0])
    heads: dict[str, str] = {}
    operations: dict[str, dict[str, str]] = {}
    for git_dir in dict.fromkeys([dirs.git_dir, dirs.common_dir, *admin]):
        try:
            fd = open_folder(git_dir)
        except OSError:
            continue
        head = read_at(fd, "HEAD")
        os.close(fd)
        if head is not None:
            heads[git_dir] = head.hex()
        operations[git_dir] = _operations(git_dir)
    return {"top": top, "git_dir": dirs.git_dir, "common_dir": dirs.common_dir,
            "sha256": dirs.sha256, "held": held, "found": found, "heads": heads,
            "operations": operations, "restored": {dirs.git_dir: restored},
            "worktrees": worktrees, "gitlinks": _gitlinks_before(dirs)}


def _gitlinks_before(dirs: GitDirs) -> list[str]:
    """The index's gitlinks before the run, as the reader finds them: exactly those
    whose folders the run holds (dotfiles.py), so a gitlink git alone would list is
    taken for the run's after it, and undone."""
    return sorted(set(index_gitlinks(dirs)))


# -- a run ------------------------------------------------------------------------------------


class CommitCheck:
    """The record of one run's repositories, made before it and checked after it.
    `record`: where it is kept for the next start should this one be killed ($LNK_HOME,
    its name, and the fd holding its lock while this process lives)."""

    def __init__(self, states: list[dict[str, Any]], written: list[str],
                 record: tuple[str, str, int] | None) -> None:
        self.states = states
        self.written = written
        self.record = record

    def finish(self, *, killed: str = "") -> None:
        """Check each repository and say what was done; never raises."""
        for state in self.states:
            try:
                from .commit_undo import Check  # here: commit_undo imports this module

                said = Check(state, self.written).run()
            except Exception as err:  # the run's own outcome matters more: say it
                said = [f"could not check {state.get('git_dir')} ({err}); read it before "
                        "you run git there"]
            for line in said:
                say(f"{killed}{line}")
        if self.record is not None:
            lnk_home, name, fd = self.record
            self.record = None
            try:
                from .state import existing_folder

                folder = existing_folder(lnk_home, PENDING)
                if folder is not None:
                    with folder:
                        folder.unlink(name)
            except (OSError, SandboxError):
                pass
            finally:
                os.close(fd)


def begin(snapshot: Snapshot) -> CommitCheck | None:
    """Before a run: finish the checks of runs killed before their end, and record the
    repositories of the folders files.commit opens (None without any)."""
    finish_killed(snapshot.lnk_home)
    tops = [g.target for g in snapshot.grants if g.access == "write" and g.commit and
            g.target and g.is_dir and not g.dot_files_writable]
    written = list(snapshot.written())
    states = []
    for top in tops:
        try:
            state = _state(top)
        except OSError as err:
            raise SandboxError(
                f"{snapshot.source}: files.commit: cannot record the repository at {top} "
                f"before the run ({err}), so what the run leaves there could not be "
                "checked after it", hint="make its git directory readable, or remove "
                "the folder from files.commit") from None
        if state is not None:
            states.append(state)
    if not states:
        return None
    return CommitCheck(states, written, _save(snapshot.lnk_home, states, written))


def _save(lnk_home: str, states: list[dict[str, Any]], written: list[str]
          ) -> tuple[str, str, int] | None:
    """The record, kept in `$LNK_HOME` for the next start should this one be killed,
    and locked while this process lives (the kernel drops the lock however it dies): a
    lock, not a pid, says a run is alive, since a pid read from another pid namespace
    sharing `$LNK_HOME` names another process, or none.

    Written under a temp name, locked, then renamed, so no start finds it unlocked. Not
    synced: a start killed while writing it never ran the sandbox, and a machine that
    crashes ends the sandbox with it."""
    import fcntl
    import json

    from .state import private_folder

    name = f"{os.getpid()}-{os.urandom(4).hex()}.json"
    data = json.dumps({"states": states, "written": written}).encode()
    fd = -1
    try:
        with private_folder(lnk_home, PENDING) as folder:
            fd = folder.open(f".new-{name}", os.O_RDWR | os.O_CREAT | os.O_EXCL)
            fcntl.flock(fd, fcntl.LOCK_EX)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.rename(f".new-{name}", name, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
    except (OSError, SandboxError) as err:
        if fd >= 0:
            os.close(fd)
        say(f"could not keep the record of this run's repositories ({err}): were it "
            "killed, nothing would check what it left in them")
        return None
    return lnk_home, name, fd


def finish_killed(lnk_home: str) -> None:
    """Check what runs killed before their end left: each record whose lock is free (its
    supervisor is gone), taken by the one start that gets that lock."""
    from .state import existing_folder

    try:
        folder = existing_folder(lnk_home, PENDING)
    except SandboxError:
        return
    if folder is None:
        return
    with folder:
        try:
            names = folder.names()
        except OSError:
            return
        taken = [t for t in (_take(folder.fd, n) for n in names) if t is not None]
    for name, fd, record in taken:
        if record is None:  # unreadable: dropped
            CommitCheck([], [], (lnk_home, name, fd)).finish()
            continue
        pid = name.partition("-")[0]
        CommitCheck(*record, (lnk_home, name, fd)).finish(
            killed=f"a run killed before its end (pid {pid}): ")


def _take(folder: int, name: str) -> tuple[str, int, tuple[list[Any], list[str]] | None] | None:
    """The record `name`, locked, when its lock is free and it is still there (its owner
    removes it at its end); None when alive, taken by another start, or not a record."""
    import fcntl
    import json

    if name.startswith(".") or not name.endswith(".json"):
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=folder)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        opened = os.fstat(fd)
        there = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if (opened.st_dev, opened.st_ino) != (there.st_dev, there.st_ino) or \
                not stat.S_ISREG(opened.st_mode):
            raise OSError("removed meanwhile")
        data = b""
        while chunk := os.read(fd, 1 << 20):
            data += chunk
    except OSError:
        os.close(fd)
        return None
    try:
        record = json.loads(data)
        return name, fd, (list(record["states"]), list(record["written"]))
    except (ValueError, KeyError, TypeError):
        return name, fd, None
