"""The index reader (git_index.gitlinks) against git itself, on indexes git wrote in
every version and shape, and on indexes changed as a sandbox under files.commit could:
the gitlinks the reader finds are exactly those `git ls-files --stage` lists.

The red team's index (the first entry's NUL padding filled with `X`, its checksum made
right again) was read by the old reader, which looked for the next NUL, out of step: it
found no gitlink where git found one, and the person's `git status` ran the fsmonitor
of the repository in the gitlink's folder. git takes a name's length from the entry's
flags and skips the padding whatever it holds (read-cache.c, create_from_disk)."""

from __future__ import annotations

import hashlib
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from supervisor.git_repository import GitDirs, git_dirs, index_gitlinks

GIT = shutil.which("git")
pytestmark = pytest.mark.requires_git
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
       "GIT_CONFIG_GLOBAL": "/dev/null", "LANG": "C", "GIT_AUTHOR_NAME": "t",
       "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}


def git(*args: str, cwd: Path, stdin: bytes = b"") -> bytes:
    done = subprocess.run([GIT or "git", *args], cwd=cwd, env=ENV, input=stdin,
                          capture_output=True, check=True)
    return done.stdout


def listed(top: Path) -> list[str]:
    """The gitlinks git itself lists."""
    out = git("ls-files", "--stage", "-z", cwd=top)
    return sorted(r.partition(b"\t")[2].decode("utf-8", "surrogateescape")
                  for r in out.split(b"\0") if r.startswith(b"160000 "))


def read(top: Path) -> list[str]:
    dirs = git_dirs(str(top))
    assert dirs is not None
    return sorted(index_gitlinks(dirs))


def repository(tmp_path: Path, *, names: int = 6, long_name: bool = False) -> Path:
    """A repository whose index holds files, two gitlinks among them, and (with
    `long_name`) a path longer than the flags' 12 bits can say (0xFFF: git reads to the
    NUL)."""
    top = tmp_path.resolve() / "repo"
    top.mkdir()
    git("init", "-q", "-b", "main", cwd=top)
    blob = git("hash-object", "-w", "--stdin", cwd=top, stdin=b"x\n").decode().strip()
    commit = git("commit-tree", git("write-tree", cwd=top).decode().strip(), cwd=top,
                 stdin=b"c\n").decode().strip()
    paths = [f"d{i}/file{i}" for i in range(names)]
    if long_name:
        paths.append("/".join(["L" * 200] * 25) + "/end")  # 5000 bytes
    for path in paths:
        git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", cwd=top)
    for path in ("a-sub", "zz/sub"):
        git("update-index", "--add", "--cacheinfo", f"160000,{commit},{path}", cwd=top)
    return top


@pytest.mark.parametrize("version", [2, 3, 4])
@pytest.mark.parametrize("long_name", [False, True], ids=["short", "long-name"])
def test_every_index_version_git_writes(tmp_path: Path, version: int, long_name: bool) -> None:
    top = repository(tmp_path, long_name=long_name)
    git("update-index", "--index-version", str(version), cwd=top)
    if version == 3:  # an extended flag: intent-to-add, skip-worktree
        (top / "new").write_text("n\n")
        git("add", "-N", "new", cwd=top)
        git("update-index", "--skip-worktree", "d0/file0", cwd=top)
    assert listed(top) == ["a-sub", "zz/sub"]
    assert read(top) == listed(top)


def test_a_split_index_is_read_with_its_shared_index(tmp_path: Path) -> None:
    top = repository(tmp_path)
    git("update-index", "--split-index", cwd=top)
    commit = git("commit-tree", git("write-tree", cwd=top).decode().strip(), cwd=top,
                 stdin=b"c\n").decode().strip()
    git("update-index", "--add", "--cacheinfo", f"160000,{commit},later-sub", cwd=top)
    assert list((top / ".git").glob("sharedindex.*"))
    assert read(top) == listed(top) == ["a-sub", "later-sub", "zz/sub"]


def _entries(data: bytes) -> list[tuple[int, int, int]]:
    """Each entry's mode, name end and padded end in a version 2 or 3 index (SHA-1)."""
    found = []
    position = 12
    for _ in range(int.from_bytes(data[8:12], "big")):
        mode = int.from_bytes(data[position + 24:position + 28], "big")
        flags = int.from_bytes(data[position + 60:position + 62], "big")
        name = position + 62 + (2 if flags & 0x4000 else 0)
        length = flags & 0xFFF
        if length == 0xFFF:
            length = data.index(b"\0", name) - name
        size = (name - position + length + 8) & ~7
        found.append((mode, name + length, position + size))
        position += size
    return found


def _checksum(data: bytearray) -> bytes:
    data[-20:] = hashlib.sha1(bytes(data[:-20])).digest()
    return bytes(data)


@pytest.mark.parametrize("seed", range(8))
def test_padding_git_skips_does_not_put_the_reader_out_of_step(tmp_path: Path,
                                                                seed: int) -> None:
    """The red team's index, and more: the padding of every entry but the gitlinks
    filled with bytes other than NUL, at random, the checksum made right; git reads the
    same gitlinks, and so does the reader. (git copies the first padding byte as the
    name's end, so it reads a padded gitlink's own name past its end: in no folder.)"""
    top = repository(tmp_path, long_name=seed % 2 == 1)
    index = top / ".git" / "index"
    data = bytearray(index.read_bytes())
    rng = random.Random(seed)
    for mode, start, end in _entries(bytes(data)):
        for at in range(start, end) if mode != 0o160000 else ():
            data[at] = rng.randrange(1, 256)
    index.write_bytes(_checksum(data))
    assert "zz/sub" in listed(top)
    # Over a long name's NUL (one of 0xFFF bytes or more) git reads on to the next NUL,
    # out of step with the entries from there: the reader is as out of step as git.
    assert read(top) == listed(top)


def test_an_index_cut_short_yields_what_came_before_the_cut(tmp_path: Path) -> None:
    """Cut short, an index is read by git past its end (git 2.39 lists what follows the
    cut as entries of mode 0): the reader stops at the cut, with the gitlinks before
    it, which git lists too."""
    top = repository(tmp_path)
    index = top / ".git" / "index"
    data = index.read_bytes()
    index.write_bytes(data[:len(data) // 2])
    assert read(top) == ["a-sub"]
    assert "a-sub" in listed(top)


def test_git_dirs_finds_each_shape_of_repository(tmp_path: Path) -> None:
    top = repository(tmp_path)
    assert git_dirs(str(top)) == GitDirs(f"{top}/.git", f"{top}/.git", False)
    wt = tmp_path.resolve() / "wt"
    git("commit", "-qm", "c", cwd=top)
    git("worktree", "add", "-q", str(wt), cwd=top)
    assert git_dirs(str(wt)) == GitDirs(f"{top}/.git/worktrees/wt", f"{top}/.git", False)
    bare = tmp_path.resolve() / "bare"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    assert git_dirs(str(bare)) == GitDirs(str(bare), str(bare), False)
    assert git_dirs(str(tmp_path.resolve())) is None
