"""inner.landlock against the real kernel: exact errnos from a restricted child.

Each test forks a child that sets no_new_privs, calls `landlock.restrict` over a tmp tree
and runs real operations, sending back each outcome ("ok", an errno name, or "exit N" for
a program it ran) through a pipe; the parent asserts them exactly. The child's stdout and
stderr go to /dev/null, opened before it restricts itself, and it imports nothing after.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Collection
from pathlib import Path

import pytest

from inner import landlock
from supervisor.linux import confine
from support import capabilities as caps

pytestmark = pytest.mark.kernel_matrix

REPO = Path(__file__).resolve().parents[2]
NO_LANDLOCK = REPO / "tests" / "support" / "no_landlock.py"
PR_SET_NO_NEW_PRIVS = 38
TIOCGPTN = 0x80045430  # _IOR('T', 0x30, unsigned int), the same on x86_64 and aarch64

READ = list(confine.READ)  # the rights the supervisor gives a read grant, and a write one
WRITE = list(confine.WRITE)

Probe = Callable[[], dict[str, str]]


def outcome(action: Callable[[], object]) -> str:
    """"ok", or the errno name of the OSError `action` raised."""
    try:
        action()
    except OSError as err:
        return errno.errorcode.get(err.errno or 0, str(err.errno))
    return "ok"


def confined(rules: list[tuple[str, list[str]]], probe: Probe, *, abi: int | None = None,
             scopes: bool = True, optional: Collection[str] = ()) -> dict[str, str]:
    """Run `probe` in a child restricted to `rules`; its outcomes, and restrict's own.

    `restrict` is "ok" or "<exception> <errno name>"; the probe runs either way, so a
    test can show that a failed restrict applied nothing.
    """
    kernel_abi = landlock.abi_version() if abi is None else abi
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(reader)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
            try:
                landlock.restrict(rules, abi=kernel_abi, scopes=scopes, optional=optional)
                results = {"restrict": "ok"}
            except landlock.LandlockError as err:
                name = errno.errorcode.get(err.errno or 0, str(err.errno))
                results = {"restrict": f"{type(err).__name__} {name} {err.filename}"}
            results.update(probe())
            os.write(writer, "\n".join(f"{k}={v}" for k, v in results.items()).encode())
            os._exit(0)
        finally:
            os._exit(70)
    os.close(writer)
    chunks = []
    while chunk := os.read(reader, 1 << 16):
        chunks.append(chunk)
    os.close(reader)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the confined child failed"
    return dict(line.split("=", 1) for line in b"".join(chunks).decode().splitlines())


def run(argv: list[str]) -> str:
    """Run a program from the restricted child: "exit N", or the errno execve gave."""
    reader, writer = os.pipe()  # both close-on-exec (PEP 446)
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(argv[0], argv)
        except OSError as err:
            os.write(writer, str(err.errno).encode())
        finally:
            os._exit(127)
    os.close(writer)
    failed = os.read(reader, 16)
    os.close(reader)
    _, status = os.waitpid(pid, 0)
    if failed:
        return errno.errorcode[int(failed)]
    return f"exit {os.waitstatus_to_exitcode(status)}"


def read(path: Path | str) -> Callable[[], object]:
    def action() -> bytes:
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, 64)
        finally:
            os.close(fd)
    return action


def write(path: Path, flags: int = 0) -> Callable[[], object]:
    def action() -> None:
        fd = os.open(path, os.O_WRONLY | flags, 0o644)
        try:
            os.write(fd, b"written")
        finally:
            os.close(fd)
    return action


def ftruncate_after_open(path: Path) -> Callable[[], object]:
    def action() -> None:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)
    return action


def loader_of(program: str) -> str:
    """The ELF's PT_INTERP: the dynamic loader the kernel opens, and checks, for it."""
    data = Path(program).read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2, "a 64-bit ELF"
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for index in range(phnum):
        header = phoff + index * phentsize
        kind, = struct.unpack_from("<I", data, header)
        if kind == 3:  # PT_INTERP
            offset, = struct.unpack_from("<Q", data, header + 8)
            size, = struct.unpack_from("<Q", data, header + 32)
            return data[offset:offset + size].rstrip(b"\0").decode()
    raise AssertionError(f"{program} has no PT_INTERP")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """ro/ (read grant), rw/ (write grant), out/ (no rule), each holding a file `f`."""
    for name in ("ro", "rw", "out"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text(f"in {name}\n")
    return tmp_path


@pytest.mark.requires_landlock(abi=1)
def test_abi_version_is_the_kernels() -> None:
    assert landlock.abi_version() == caps.landlock_abi() >= 1


def test_abi_version_without_landlock_is_0() -> None:
    code = (f"import sys; sys.path.insert(0, {str(REPO)!r}); from inner import landlock\n"
            "print(landlock.abi_version())\n"
            "try:\n    landlock.restrict([], abi=7)\n"
            "except landlock.LandlockError as err:\n    print(err.errno, err.strerror)\n")
    done = subprocess.run([sys.executable, str(NO_LANDLOCK), sys.executable, "-I", "-S",
                           "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        "0", f"{errno.ENOSYS} landlock create_ruleset(ABI 7): {os.strerror(errno.ENOSYS)}"]


@pytest.mark.requires_landlock(abi=1)
def test_read_and_write_grants(tree: Path) -> None:
    ro, rw, out = tree / "ro", tree / "rw", tree / "out"

    def probe() -> dict[str, str]:
        return {
            "read ro": outcome(read(ro / "f")),
            "read rw": outcome(read(rw / "f")),
            "read out": outcome(read(out / "f")),
            "list ro": outcome(lambda: os.listdir(ro)),
            "list out": outcome(lambda: os.listdir(out)),
            "create rw": outcome(write(rw / "new", os.O_CREAT | os.O_EXCL)),
            "write rw": outcome(write(rw / "f")),
            "mkdir rw": outcome(lambda: os.mkdir(rw / "d")),
            "symlink rw": outcome(lambda: os.symlink("f", rw / "link")),
            "fifo rw": outcome(lambda: os.mkfifo(rw / "fifo")),
            "unlink rw": outcome(lambda: os.unlink(rw / "new")),
            "rmdir rw": outcome(lambda: os.rmdir(rw / "d")),
            "create ro": outcome(write(ro / "new", os.O_CREAT | os.O_EXCL)),
            "write ro": outcome(write(ro / "f")),
            "mkdir ro": outcome(lambda: os.mkdir(ro / "d")),
            "symlink ro": outcome(lambda: os.symlink("f", ro / "link")),
            "unlink ro": outcome(lambda: os.unlink(ro / "f")),
            "write out": outcome(write(out / "f")),
        }

    results = confined([(str(ro), READ), (str(rw), WRITE)], probe)
    assert results == {
        "restrict": "ok",
        "read ro": "ok", "read rw": "ok", "read out": "EACCES",
        "list ro": "ok", "list out": "EACCES",
        "create rw": "ok", "write rw": "ok", "mkdir rw": "ok", "symlink rw": "ok",
        "fifo rw": "ok", "unlink rw": "ok", "rmdir rw": "ok",
        "create ro": "EACCES", "write ro": "EACCES", "mkdir ro": "EACCES",
        "symlink ro": "EACCES", "unlink ro": "EACCES", "write out": "EACCES",
    }
    assert (ro / "f").read_text() == "in ro\n"
    assert (rw / "f").read_text().startswith("written")


@pytest.mark.requires_landlock(abi=2)
def test_moving_between_folders_needs_refer(tmp_path: Path) -> None:
    for name in ("a", "b", "c", "d"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text(name)
    a, b, c, d = (tmp_path / name for name in ("a", "b", "c", "d"))
    no_refer = [name for name in WRITE if name != "refer"]

    def probe() -> dict[str, str]:
        return {
            "rename a->b": outcome(lambda: os.rename(a / "f", b / "from-a")),
            "link b->a": outcome(lambda: os.link(b / "f", a / "from-b")),
            "rename c->d": outcome(lambda: os.rename(c / "f", d / "from-c")),
            "link c->d": outcome(lambda: os.link(c / "f", d / "from-c")),
            "rename a->d": outcome(lambda: os.rename(a / "from-b", d / "from-a")),
            "rename within c": outcome(lambda: os.rename(c / "f", c / "g")),
            "link within c": outcome(lambda: os.link(c / "g", c / "h")),
        }

    results = confined([(str(a), WRITE), (str(b), WRITE), (str(c), no_refer),
                        (str(d), no_refer)], probe)
    # Reparenting without REFER on both sides is EXDEV (mv then copies), never EACCES.
    assert results == {
        "restrict": "ok", "rename a->b": "ok", "link b->a": "ok",
        "rename c->d": "EXDEV", "link c->d": "EXDEV", "rename a->d": "EXDEV",
        "rename within c": "ok", "link within c": "ok",
    }
    assert (b / "from-a").read_text() == "a"
    assert not (d / "from-c").exists()


@pytest.mark.requires_landlock(abi=3)
def test_truncate(tmp_path: Path) -> None:
    full, plain = tmp_path / "full", tmp_path / "plain"
    for folder in (full, plain):
        folder.mkdir()
        for name in ("f", "g", "h"):
            (folder / name).write_text("some content\n")

    def probe() -> dict[str, str]:
        return {
            "truncate full": outcome(lambda: os.truncate(full / "f", 0)),
            "O_TRUNC full": outcome(write(full / "g", os.O_TRUNC)),
            "ftruncate full": outcome(ftruncate_after_open(full / "h")),
            "write plain": outcome(write(plain / "f")),
            "truncate plain": outcome(lambda: os.truncate(plain / "f", 0)),
            "O_TRUNC plain": outcome(write(plain / "g", os.O_TRUNC)),
            "ftruncate plain": outcome(ftruncate_after_open(plain / "h")),
        }

    results = confined([(str(full), WRITE), (str(plain), ["read_file", "write_file"])],
                       probe)
    assert results == {
        "restrict": "ok", "truncate full": "ok", "O_TRUNC full": "ok",
        "ftruncate full": "ok", "write plain": "ok", "truncate plain": "EACCES",
        "O_TRUNC plain": "EACCES", "ftruncate plain": "EACCES",
    }
    assert (full / "f").read_text() == ""
    assert (plain / "g").read_text() == "some content\n"


@pytest.mark.requires_landlock(abi=1)
def test_execute_allowlist(tree: Path) -> None:
    loader = loader_of("/usr/bin/true")
    copy = tree / "rw" / "true-copy"
    shutil.copy2("/usr/bin/true", copy)
    rules = [("/usr", READ), ("/etc", READ), (str(tree / "rw"), WRITE),
             ("/usr/bin/true", ["execute"]), (loader, ["execute"])]

    def probe() -> dict[str, str]:
        return {
            "true": run(["/usr/bin/true"]),
            "true via /bin": run(["/bin/true"]),
            "ls": run(["/usr/bin/ls", "--version"]),
            "copy of true": run([str(copy)]),
            # The stated gap: the loader must run, and runs any file it can read.
            "ld.so ls": run([loader, "/usr/bin/ls", "--version"]),
            "ld.so copy": run([loader, str(copy)]),
        }

    assert confined(rules, probe) == {
        "restrict": "ok", "true": "exit 0", "true via /bin": "exit 0", "ls": "EACCES",
        "copy of true": "EACCES", "ld.so ls": "exit 0", "ld.so copy": "exit 0",
    }


@pytest.mark.requires_landlock(abi=1)
def test_without_the_loader_no_dynamic_program_runs() -> None:
    rules = [("/usr", READ), ("/etc", READ), ("/usr/bin/true", ["execute"])]
    assert confined(rules, lambda: {"true": run(["/usr/bin/true"])}) == {
        "restrict": "ok", "true": "EACCES"}


@pytest.mark.requires_landlock(abi=5)
def test_device_ioctls_need_ioctl_dev() -> None:
    def probe() -> dict[str, str]:
        def pty_number() -> None:
            fd = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
            try:
                fcntl.ioctl(fd, TIOCGPTN, b"\0" * 4)
            finally:
                os.close(fd)
        return {"ioctl": outcome(pty_number)}

    plain = ["read_file", "write_file"]
    assert confined([("/dev", plain)], probe) == {"restrict": "ok", "ioctl": "EACCES"}
    assert confined([("/dev", [*plain, "ioctl_dev"])], probe) == {
        "restrict": "ok", "ioctl": "ok"}
    # ABI 4 does not know IOCTL_DEV, so it is neither handled nor refused.
    assert confined([("/dev", plain)], probe, abi=4) == {"restrict": "ok", "ioctl": "ok"}


@pytest.mark.requires_landlock(abi=6)
def test_signal_scope() -> None:
    parent = os.getpid()

    def probe() -> dict[str, str]:
        return {
            "parent": outcome(lambda: os.kill(parent, 0)),
            "itself": outcome(lambda: os.kill(os.getpid(), 0)),
            "itself SIGWINCH": outcome(lambda: os.kill(os.getpid(), signal.SIGWINCH)),
        }

    assert confined([], probe) == {
        "restrict": "ok", "parent": "EPERM", "itself": "ok", "itself SIGWINCH": "ok"}
    assert confined([], probe, scopes=False)["parent"] == "ok"
    assert confined([], probe, abi=5)["parent"] == "ok"  # no scopes before ABI 6


@pytest.mark.requires_landlock(abi=6)
def test_abstract_unix_socket_scope() -> None:
    outside = f"\0lnk-landlock-test-{os.getpid()}-{time.monotonic_ns()}".encode()
    inside = outside + b"-inside"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(outside)
        server.listen(4)

        def connect(address: bytes) -> Callable[[], object]:
            def action() -> None:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                    client.connect(address)
            return action

        def probe() -> dict[str, str]:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as own:
                own.bind(inside)  # bound within the domain
                own.listen(1)
                return {"outside": outcome(connect(outside)),
                        "inside": outcome(connect(inside))}

        assert confined([], probe) == {"restrict": "ok", "outside": "EPERM", "inside": "ok"}
        assert confined([], probe, scopes=False)["outside"] == "ok"


@pytest.mark.requires_landlock(abi=1)
def test_read_dir_on_a_file_is_dropped(tree: Path) -> None:
    target = tree / "ro" / "f"
    # The kernel's own answer, on a ruleset never applied: READ_DIR on a file is EINVAL.
    ruleset = landlock._create_ruleset(landlock.abi_version(), scopes=False)
    fd = os.open(target, os.O_PATH | os.O_CLOEXEC)
    try:
        with pytest.raises(landlock.LandlockError) as raised:
            landlock._add_path_rule(ruleset, fd, landlock.FS_RIGHTS["read_dir"], str(target))
        assert raised.value.errno == errno.EINVAL
        assert raised.value.filename == str(target)
    finally:
        os.close(fd)
        os.close(ruleset)

    def probe() -> dict[str, str]:
        return {"read f": outcome(read(target)), "list ro": outcome(lambda: os.listdir(
            tree / "ro"))}

    # inner.landlock keeps what a file can hold, and a rule with nothing left is skipped.
    assert confined([(str(target), READ), (str(tree / "rw" / "f"), ["read_dir"])],
                    probe) == {"restrict": "ok", "read f": "ok", "list ro": "EACCES"}


@pytest.mark.requires_landlock(abi=1)
def test_a_missing_path_raises_and_applies_nothing(tree: Path) -> None:
    missing = str(tree / "nope")
    not_dir = str(tree / "ro" / "f" / "below")

    def probe() -> dict[str, str]:
        return {"read out": outcome(read(tree / "out" / "f"))}

    assert confined([(str(tree / "ro"), READ), (missing, READ)], probe) == {
        "restrict": f"LandlockMissingPath ENOENT {missing}", "read out": "ok"}
    assert confined([(not_dir, READ)], probe) == {
        "restrict": f"LandlockMissingPath ENOTDIR {not_dir}", "read out": "ok"}
    assert confined([(str(tree / "ro"), READ), (missing, READ), (not_dir, READ)], probe,
                    optional={missing, not_dir}) == {"restrict": "ok", "read out": "EACCES"}


@pytest.mark.requires_landlock(abi=1)
def test_an_unknown_right_raises_and_applies_nothing(tree: Path) -> None:
    def probe() -> dict[str, str]:
        return {"read out": outcome(read(tree / "out" / "f"))}

    assert confined([(str(tree / "ro"), ["read_file", "connect_tcp"])], probe) == {
        "restrict": "LandlockError EINVAL None", "read out": "ok"}


@pytest.mark.requires_landlock(abi=1)
def test_more_rules_than_the_open_file_limit(tmp_path: Path) -> None:
    """A read grant holding a hidden path is closed entry by entry (close_hidden): a
    folder of a few thousand files is that many rules, more than the 1024 open files a
    person's shell commonly allows. restrict held every rule's descriptor at once, and
    the launch failed (EMFILE) in a folder of 1100 files (red team 24c)."""
    import resource

    for i in range(300):
        (tmp_path / f"f{i}").write_text("x")
    rules = [(str(tmp_path / f"f{i}"), READ) for i in range(300)]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))  # the child inherits it
    try:
        results = confined(rules, lambda: {"read": outcome((tmp_path / "f299").read_text)})
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert results == {"restrict": "ok", "read": "ok"}
