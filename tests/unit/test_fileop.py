"""The inner's file operations (inner/fileop.py) on plain files, outside any sandbox: the
errno each case answers with, which the Python API turns into the matching OSError.
What a sandbox lets them reach is tested through the API (tests/integration)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from supervisor.macos.backend import mac_file_op_argv
from supervisor.run_types import FileOp


def standalone(*args: str, stdin: bytes = b"", cwd: Path) -> tuple[int, bytes]:
    """inner/fileop.py's source run as macOS runs it: the command itself, `-I -S -c`."""
    argv = mac_file_op_argv(FileOp(args[0], args[1],  # type: ignore[arg-type]
                                   int(args[2]) if len(args) > 2 else None))
    argv[0] = sys.executable
    done = subprocess.run(argv, input=stdin, capture_output=True, cwd=cwd, timeout=30)
    return done.returncode, done.stdout


def test_a_read_gives_the_bytes_whole(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000
    (tmp_path / "f").write_bytes(data)
    assert standalone("read", "f", cwd=tmp_path) == (0, data)
    assert standalone("read", "f", str(len(data)), cwd=tmp_path) == (0, data)


@pytest.mark.parametrize(("make", "expected"), [
    (lambda p: None, errno.ENOENT),
    (lambda p: p.mkdir(), errno.EISDIR),
    (os.mkfifo, errno.EINVAL),
    (lambda p: p.write_bytes(b"x" * 11), errno.EFBIG),
])
def test_a_read_answers_with_the_errno(tmp_path: Path, make: object, expected: int) -> None:
    make(tmp_path / "f")  # type: ignore[operator]
    assert standalone("read", "f", "10", cwd=tmp_path) == (expected, b"")


def test_a_write_replaces_the_content_and_makes_the_folders(tmp_path: Path) -> None:
    (tmp_path / "old").write_bytes(b"a much longer old content")
    assert standalone("write", "old", stdin=b"new", cwd=tmp_path) == (0, b"")
    assert (tmp_path / "old").read_bytes() == b"new"
    assert standalone("write", "a/b/c", stdin=b"\x00\xff", cwd=tmp_path)[0] == 0
    assert (tmp_path / "a" / "b" / "c").read_bytes() == b"\x00\xff"


def test_a_write_answers_with_the_errno(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    assert standalone("write", "dir", stdin=b"x", cwd=tmp_path)[0] == errno.EISDIR
    os.mkfifo(tmp_path / "fifo")
    assert standalone("write", "fifo", stdin=b"x", cwd=tmp_path)[0] == errno.ENXIO
    (tmp_path / "file").write_bytes(b"")
    assert standalone("write", "file/below", stdin=b"x", cwd=tmp_path)[0] in (
        errno.ENOTDIR, errno.EEXIST)
