"""Red team, issue 30, a third and independent one: the mode without namespaces
(LNK_NAMESPACES=off) attacked by class where red team 30b's fixes stand: the listener
that does a file's mode, owner, times and watches (supervisor/linux/direct_metadata.py:
device nodes refused, a name judged only where it names the very file, /proc/self
however spelt), and the filter's refusals of extended attributes and a file's flags
(direct_rules.filter_rules).

Each attack runs inside a real sandbox (root mode and the unprivileged user), proves it
ran (the harness's STARTED line, and a control that must succeed where there is one),
and the harm is judged outside afterwards: the host's stat of the file, its flags, its
extended attributes. What held stays as a regression test.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from attacks.test_red_team_nonamespace import attack
from attacks.test_red_team_nonamespace2 import FS_NODUMP_FL, flags_of
from support.red_team import need
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_landlock(abi=6), pytest.mark.requires_seccomp_notify]

S_SETID = stat.S_ISUID | stat.S_ISGID
AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW, AT_SYMLINK_FOLLOW = 0x1000, 0x100, 0x400
FCHMODAT, FCHMODAT2, UTIMENSAT, LINKAT, IOCTL = 268, 452, 280, 265, 16
INOTIFY_INIT, INOTIFY_ADD_WATCH, IN_ALL = 253, 254, 0xFFF


def _seen(path: Path) -> tuple[int, int, int, int]:
    """What the host sees of a file's metadata (never its link: lstat)."""
    info = os.lstat(path)
    return info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns


# -- set-user-id bits: the filter's refusal comes before the listener's call --------------

def test_no_setid_bit_through_the_listener(sandbox: Sandbox) -> None:
    """The listener does chmod with the supervisor's capabilities (CAP_FSETID run by
    root): a set-user-id copy of a program in the written folder is root's door."""
    tool = sandbox.project / "tool"
    tool.write_bytes(Path("/bin/true").read_bytes())
    tool.chmod(0o755)
    (sandbox.project / "shared").mkdir()
    sandbox.chown()
    results = attack(sandbox, {
        "control": "os.chmod('tool', 0o750)",
        "chmod u+s": "os.chmod('tool', 0o4755)",
        "fchmod g+s": "os.fchmod(os.open('tool', os.O_RDONLY), 0o2755)",
        "fchmodat both": f"sc({FCHMODAT}, -100, b'tool', 0o6755)",
        "fchmodat2 by fd": f"sc({FCHMODAT2}, os.open('tool', os.O_PATH), b'', 0o4755, "
                           f"{AT_EMPTY_PATH})",
        "chmod mode's high bits": "sc(90, b'tool', 0x10004755)",
        "folder g+s": "os.chmod('shared', 0o2775)",
    })
    assert results.pop("control") == "OK", results
    assert stat.S_IMODE(tool.stat().st_mode) == 0o750, results
    assert not (sandbox.project / "shared").stat().st_mode & S_SETID, results
    assert set(results.values()) == {"EPERM"}, results


# -- a device node: other names for it, other ways to it ------------------------------------

NODES = ("/dev/null", "/dev/zero", "/dev/urandom")


def test_a_device_node_by_any_other_name(sandbox: Sandbox) -> None:
    """A link in the written folder to /dev/null (chmod, chown and utime follow it),
    the node's fd by the caller's /proc/PID and its thread's, by a folder fd of /proc,
    /dev//null and /dev/../dev/null, /proc/self/root, a node made by mknod, a watch by
    the link; futimens and AT_EMPTY_PATH on the node's fd."""
    (sandbox.project / "null").symlink_to("/dev/null")
    sandbox.chown()
    before = {n: _seen(Path(n)) for n in NODES}
    fd = "os.open('/dev/null', os.O_WRONLY)"
    try:
        results = attack(sandbox, {
                        "chmod by the link": "os.chmod('null', 0o600)",
            "chown by the link": "os.chown('null', -1, os.getgid())",
            "utime by the link": "os.utime('null', (0, 0))",
            "/dev//null": "os.chmod('/dev//null', 0o600)",
            "/dev/../dev/null": "os.chmod('/dev/../dev/null', 0o600)",
            "/proc/self/root": "os.chmod('/proc/self/root/dev/null', 0o600)",
            "/proc/PID/fd": f"os.chmod('/proc/%d/fd/%d' % (os.getpid(), {fd}), 0o600)",
            "/proc/PID/task/TID/fd": f"os.chmod('/proc/%d/task/%d/fd/%d' % (os.getpid(), "
                                     f"os.getpid(), {fd}), 0o600)",
            "/proc's fd, PID/fd": f"sc({FCHMODAT}, os.open('/proc', os.O_PATH), "
                                  f"b'%d/fd/%d' % (os.getpid(), {fd}), 0o600)",
            "/proc/self's fd, fd/N": f"sc({FCHMODAT}, os.open('/proc/self', os.O_PATH), "
                                     f"b'fd/%d' % {fd}, 0o600)",
            "futimens": f"sc({UTIMENSAT}, {fd}, None, None, 0)",
            "utimensat AT_EMPTY_PATH": f"sc({UTIMENSAT}, {fd}, b'', None, {AT_EMPTY_PATH})",
            "fchmodat2 AT_EMPTY_PATH": f"sc({FCHMODAT2}, os.open('/dev/zero', os.O_PATH), "
                                       f"b'', 0o600, {AT_EMPTY_PATH})",
            "fchown /dev/urandom": "os.fchown(os.open('/dev/urandom', os.O_RDONLY), -1, "
                                   "os.getgid())",
            "mknod a null": "os.mknod('mine', 0o20666, os.makedev(1, 3))",
            "a watch by the link": f"sc({INOTIFY_ADD_WATCH}, sc({INOTIFY_INIT}), b'null', "
                                   f"{IN_ALL})",
        })
        after = {n: _seen(Path(n)) for n in NODES}
        assert after == before, results
        assert not (sandbox.project / "mine").exists(), results
        # ELOOP: a magic link not the caller's own (/proc's fd, then PID/fd/N)
        assert set(results.values()) <= {"EPERM", "EACCES", "ELOOP"}, results
    finally:
        for n, (mode, uid, gid, mtime) in before.items():
            os.chmod(n, stat.S_IMODE(mode))
            os.chown(n, uid, gid)
            os.utime(n, ns=(mtime, mtime))


# -- a FIFO and a socket of the host's, outside the written folder ------------------------

def test_the_hosts_fifo_and_socket_outside_the_written_folder(sandbox: Sandbox) -> None:
    """A FIFO and a listening socket in the read home and outside every grant (an
    agent's socket, a FIFO a tool reads): neither a file nor a device, each must be
    judged like one."""
    sandbox.chown()
    server = socket.socket(socket.AF_UNIX)
    places = {}
    for where, folder in (("home", sandbox.home), ("outside", sandbox.base)):
        fifo = folder / "queue"
        os.mkfifo(fifo, 0o600)
        places[f"{where} fifo"] = fifo
    sock = sandbox.home / "agent.sock"
    server.bind(str(sock))
    sock.chmod(0o600)
    places["home socket"] = sock
    for path in places.values():
        sandbox.chown(path)
    before = {n: _seen(p) for n, p in places.items()}
    steps = {}
    for name, path in places.items():
        steps[f"chmod {name}"] = f"os.chmod({str(path)!r}, 0o666)"
        steps[f"chown {name}"] = f"os.chown({str(path)!r}, -1, os.getgid())"
        steps[f"utime {name}"] = f"os.utime({str(path)!r}, (0, 0))"
    try:
        results = attack(sandbox, steps)
    finally:
        server.close()
    assert {n: _seen(p) for n, p in places.items()} == before, results
    assert set(results.values()) <= {"EPERM"}, results


# -- a file's flags: the ioctl's command in other forms ------------------------------------

FLAG_SETTERS = {
    "FS_IOC_SETFLAGS": 0x40086602,
    "FS_IOC32_SETFLAGS": 0x40046602,
    "FS_IOC_FSSETXATTR": 0x401C5820,
}



def test_a_files_flags_by_the_commands_high_bits(sandbox: Sandbox) -> None:
    """The kernel reads ioctl's command as an unsigned int: a command with bits above
    the 32nd is the same command, and a filter comparing the whole register would let
    it by."""
    notes = sandbox.home / "notes.txt"
    notes.write_text("the person's\n")
    sandbox.chown()
    before = flags_of(notes)
    steps = {}
    for name, cmd in FLAG_SETTERS.items():
        for high in (1, 0xFFFFFFFF):
            # struct fsxattr's xflags (NODUMP 0x80) or an int's flags: 0x80 in both
            steps[f"{name} high {high:x}"] = (
                f"sc({IOCTL}, os.open({str(notes)!r}, os.O_RDONLY), "
                f"ctypes.c_ulong({(high << 32) | cmd}), "
                f"(ctypes.c_uint32 * 8)({FS_NODUMP_FL | 0x80}))")
    results = attack(sandbox, steps)
    assert flags_of(notes) == before, results
    assert set(results.values()) == {"ENOTTY"}, results


# -- extended attributes by an fd, a link, a /proc name -------------------------------------

def test_extended_attributes_by_fd_and_link(sandbox: Sandbox) -> None:
    """fsetxattr and fremovexattr on an fd opened for reading alone (the file of a read
    grant, whose owner the sandbox is), lgetxattr on a link in the written folder to a
    hidden file, getxattr by /proc/self/fd of an O_PATH fd, fgetxattr of an O_PATH fd;
    name_to_handle_at and fanotify, the kernel's other ways to a file by its handle."""
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    hidden = ssh / "id_ed25519"
    hidden.write_text("key\n")
    notes = sandbox.home / "notes.txt"
    notes.write_text("the person's\n")
    for path in (hidden, notes):
        os.setxattr(path, "user.token", b"the person's token")
    (sandbox.project / "key").symlink_to(hidden)
    sandbox.chown()
    read = f"os.open({str(notes)!r}, os.O_RDONLY)"
    path_fd = f"os.open({str(hidden)!r}, os.O_PATH)"
    results = attack(sandbox, {
        "control: fgetxattr of a read file": f"os.getxattr({read}, 'user.token')",
        "fsetxattr read-only": f"os.setxattr({read}, 'user.token', b'changed')",
        "fsetxattr new": f"os.setxattr({read}, 'user.new', b'x')",
        "fremovexattr": f"os.removexattr({read}, 'user.token')",
        "lgetxattr the link": "os.getxattr('key', 'user.token', follow_symlinks=False)",
        "getxattr the link": "os.getxattr('key', 'user.token')",
        "getxattr /proc/self/fd": f"os.getxattr('/proc/self/fd/%d' % {path_fd}, 'user.token')",
        "fgetxattr O_PATH": f"os.getxattr({path_fd}, 'user.token')",
        "flistxattr O_PATH": f"os.listxattr({path_fd})",
        "name_to_handle_at": f"sc(303, -100, {str(hidden).encode()!r}, "
                             "(ctypes.c_uint32 * 34)(128), (ctypes.c_int * 1)(), 0)",
        "fanotify_init": "sc(300, 0x200, 0)",
    })
    assert results.pop("control: fgetxattr of a read file") == "OK", results
    for path in (hidden, notes):
        assert os.listxattr(path) == ["user.token"], results
        assert os.getxattr(path, "user.token") == b"the person's token", results
    assert "OK" not in results.values(), results


# -- times and mode by an fd of a file the grants only read --------------------------------

def test_times_and_mode_by_an_fd_of_a_read_file(sandbox: Sandbox) -> None:
    """futimens (utimensat with a NULL path) and AT_EMPTY_PATH on an fd of a file the
    grants read, fchmod and fchown on an O_PATH fd (the kernel says EBADF; the
    listener opens any fd by /proc/PID/fd)."""
    notes = sandbox.home / "notes.txt"
    notes.write_text("the person's\n")
    os.utime(notes, (86400, 86400))
    mine = sandbox.project / "mine.txt"
    mine.write_text("the run's\n")
    sandbox.chown()
    before = _seen(notes)
    read = f"os.open({str(notes)!r}, os.O_RDONLY)"
    opath = f"os.open({str(notes)!r}, os.O_PATH)"
    results = attack(sandbox, {
        "control: fchmod of an O_PATH fd of a written file":
            "os.fchmod(os.open('mine.txt', os.O_PATH), 0o640)",
        "futimens": f"sc({UTIMENSAT}, {read}, None, None, 0)",
        "os.utime by fd": f"os.utime({read})",
        "utimensat AT_EMPTY_PATH": f"sc({UTIMENSAT}, {read}, b'', None, {AT_EMPTY_PATH})",
        "utimensat AT_EMPTY_PATH nofollow": f"sc({UTIMENSAT}, {opath}, b'', None, "
                                            f"{AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW})",
        "fchmod O_PATH": f"os.fchmod({opath}, 0o666)",
        "fchmod O_RDONLY": f"os.fchmod({read}, 0o666)",
        "fchown O_PATH": f"os.fchown({opath}, -1, os.getgid())",
    })
    assert results.pop("control: fchmod of an O_PATH fd of a written file") == "OK", results
    assert stat.S_IMODE(mine.stat().st_mode) == 0o640
    assert _seen(notes) == before, results
    assert set(results.values()) == {"EPERM"}, results


# -- a hard link of the host's file into the written folder -------------------------------

def test_a_hard_link_into_the_written_folder(sandbox: Sandbox) -> None:
    """A link of a file of the read home, a hidden one and one outside every grant,
    made in the written folder (by name, by the fd's /proc/self/fd link followed, by
    AT_EMPTY_PATH): its name there is a written path, which the listener judges. Root
    without CAP_FOWNER owns every root file (protected_hardlinks lets it link them)."""
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    files = {"home": sandbox.home / "notes.txt", "hidden": ssh / "id_ed25519",
             "outside": sandbox.base / "outside.txt"}
    for path in files.values():
        path.write_text("the person's\n")
        path.chmod(0o600)
    sandbox.chown()
    before = {n: _seen(p) for n, p in files.items()}
    steps = {}
    for name, path in files.items():
        steps[f"link {name}"] = f"os.link({str(path)!r}, 'by-name-{name}')"
        steps[f"linkat /proc/self/fd {name}"] = (
            f"sc({LINKAT}, -100, b'/proc/self/fd/%d' % os.open({str(path)!r}, os.O_PATH), "
            f"-100, b'by-fd-{name}', {AT_SYMLINK_FOLLOW})")
        steps[f"linkat AT_EMPTY_PATH {name}"] = (
            f"sc({LINKAT}, os.open({str(path)!r}, os.O_PATH), b'', -100, "
            f"b'by-empty-{name}', {AT_EMPTY_PATH})")
    for name in files:
        for how in ("by-name", "by-fd", "by-empty"):
            steps[f"chmod {how}-{name}"] = f"os.chmod('{how}-{name}', 0o666)"
            steps[f"utime {how}-{name}"] = f"os.utime('{how}-{name}', (0, 0))"
    results = attack(sandbox, steps)
    assert {n: _seen(p) for n, p in files.items()} == before, results
    assert not [p for p in sandbox.project.iterdir() if p.name.startswith("by-")], results


# -- /proc spelt otherwise: the supervisor's own, the caller's by other names -------------

def test_proc_spelt_otherwise(sandbox: Sandbox) -> None:
    """/proc/../proc/self and /dev/fd (the supervisor's own fds and working directory
    where it reads the path as it is), /proc/self/root, /proc/PID/task/TID/cwd, a
    relative path from a folder fd of /proc, a link in the written folder to
    /proc/self: each must end at a file judged as itself."""
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    hidden = ssh / "id_ed25519"
    hidden.write_text("key\n")
    hidden.chmod(0o600)
    outside = sandbox.base / "outside.txt"
    outside.write_text("the person's\n")
    outside.chmod(0o600)
    (sandbox.project / "me").symlink_to("/proc/self")
    sandbox.chown()
    before = {"hidden": _seen(hidden), "outside": _seen(outside), "ssh": _seen(ssh)}
    rel = os.path.relpath(outside, sandbox.project)
    fd = f"os.open({str(hidden)!r}, os.O_PATH)"
    steps = {
        "/proc/../proc/self/fd": f"os.chmod('/proc/../proc/self/fd/%d' % {fd}, 0o666)",
        "/proc/self/../self/fd": f"os.chmod('/proc/self/../self/fd/%d' % {fd}, 0o666)",
        "/dev/fd": f"os.chmod('/dev/fd/%d' % {fd}, 0o666)",
        "/proc/self/root": f"os.chmod('/proc/self/root{outside}', 0o666)",
        "/proc/PID/task/TID/cwd": f"os.chmod('/proc/%d/task/%d/cwd/{rel}' % (os.getpid(), "
                                  "os.getpid()), 0o666)",
        "/proc fd, self/cwd": f"sc({FCHMODAT}, os.open('/proc', os.O_PATH), "
                              f"b'self/cwd/{rel}', 0o666)",
        "/proc fd, self/fd": f"sc({FCHMODAT}, os.open('/proc', os.O_PATH), "
                             f"b'self/fd/%d' % {fd}, 0o666)",
        "/proc fd, thread-self": f"sc({FCHMODAT}, os.open('/proc', os.O_PATH), "
                                 f"b'thread-self/fd/%d' % {fd}, 0o666)",
        "a link to /proc/self": f"os.chmod('me/fd/%d' % {fd}, 0o666)",
        "a link, its cwd": f"os.chmod('me/cwd/{rel}', 0o666)",
        "utime /proc/self/root": f"os.utime('/proc/self/root{outside}', (0, 0))",
        "utime /proc fd": f"sc({UTIMENSAT}, os.open('/proc', os.O_PATH), "
                          f"b'self/fd/%d' % {fd}, None, 0)",
        "chown /proc/../proc/self": f"os.chown('/proc/../proc/self/fd/%d' % {fd}, -1, "
                                    "os.getgid())",
        "watch /proc/../proc/self": f"sc({INOTIFY_ADD_WATCH}, sc({INOTIFY_INIT}), "
                                    f"b'/proc/../proc/self/fd/%d' % os.open("
                                    f"{str(ssh)!r}, os.O_PATH), {IN_ALL})",
        "watch /proc fd": f"sc({INOTIFY_ADD_WATCH}, sc({INOTIFY_INIT}), "
                          f"b'/proc/self/root{ssh}', {IN_ALL})",
    }
    results = attack(sandbox, steps)
    after = {"hidden": _seen(hidden), "outside": _seen(outside), "ssh": _seen(ssh)}
    assert after == before, results
    assert set(results.values()) <= {"EPERM", "EACCES", "EBADF", "ENOENT", "ELOOP"}, results


# -- the listener's errors: what its own walk found, which the caller's could not ---------

def _probes(path: Path, there: str = "exists") -> dict[str, str]:
    """chmod, utime, chown and a watch of a name `there` in `path` and of one missing."""
    return {f"{call} {label}": expression
            for label, name in (("exists", there), ("missing", "missing"))
            for call, expression in (
                ("chmod", f"os.chmod('{path}/{name}', 0o600)"),
                ("utime", f"os.utime('{path}/{name}', (0, 0))"),
                ("chown", f"os.chown('{path}/{name}', -1, os.getgid())"),
                ("watch", f"sc({INOTIFY_ADD_WATCH}, sc({INOTIFY_INIT}), "
                          f"b'{path}/{name}', 3)"))}


def _same_for_both(results: dict[str, str]) -> dict[str, tuple[str, str]]:
    calls = {name.split()[0] for name in results}
    return {call: (results[f"{call} exists"], results[f"{call} missing"]) for call in calls}


def test_a_files_existence_in_a_folder_the_caller_cannot_search(sandbox: Sandbox) -> None:
    """Another user's private folder (0700, not root's): root without capabilities
    cannot search it (stat says EACCES), but the supervisor walks the caller's path
    with every capability, and its ENOENT for a missing name against EPERM for one that
    is there told which files another user has (~alice/.ssh/id_ed25519)."""
    private = sandbox.base / "alice"
    private.mkdir()
    (private / "exists").write_text("alice's\n")
    sandbox.chown()
    os.chown(private, 65534, 65534)
    private.chmod(0o700)
    (sandbox.project / "alice").symlink_to(private)
    results = attack(sandbox, {
        "stat": f"os.stat('{private}/exists')",  # the control: the caller cannot search
        **_probes(private),
    })
    by_link = attack(sandbox, _probes(sandbox.project / "alice"))
    assert results.pop("stat") == "EACCES", results
    for found in (results, by_link):
        same = _same_for_both(found)
        assert all(exists == missing for exists, missing in same.values()), same


def test_a_files_existence_in_another_mount_namespace(sandbox: Sandbox) -> None:
    """A process of the person's in a mount namespace of its own (a container): the
    sandbox cannot walk its /proc/PID/root (Landlock's ptrace scope), the supervisor
    can, and its ENOENT for a missing name against EPERM for one there told which
    files that namespace holds; a link in the written folder to it the same."""
    from attacks.test_red_team_nonamespace2 import _elsewhere

    other, secret = _elsewhere(sandbox)
    (sandbox.project / "theirs").symlink_to(secret.parent)
    sandbox.chown()
    try:
        results = attack(sandbox, {
            "stat": f"os.stat('{secret}')",  # the control: the caller cannot walk there
            **_probes(secret.parent, secret.name),
        })
        by_link = attack(sandbox, _probes(sandbox.project / "theirs", secret.name))
    finally:
        other.kill()
        other.wait()
        if other.stdout is not None:
            other.stdout.close()
    need(results.pop("stat") in ("EACCES", "EPERM"), results)
    for found in (results, by_link):
        same = _same_for_both(found)
        assert all(exists == missing for exists, missing in same.values()), same
